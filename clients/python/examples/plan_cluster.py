#!/usr/bin/python3
"""Which accelerator, how many GPUs, how many days and at what cost, to train a model on N tokens?

A thin client of the server's Plan call (the search, goodput, cost and Pareto front are the
server's; see the README's "Plan" section): for each accelerator and GPU count the best layout
and batch, the wall clock once interruptions and checkpoints are paid for, GPU-hours, energy and
cost; then the smallest cluster that meets the deadline, the Pareto front of days against cost
and what each doubling of GPUs buys.

    /usr/bin/python3 examples/plan_cluster.py --server 127.0.0.1:50051
    /usr/bin/python3 examples/plan_cluster.py --model llama3-70b --seq 8192 --tokens 15e12 \\
        --days 90 --accelerators h100-sxm-80gb=2.5,b200-sxm-180gb=4.5

Use ``plan(client, tokens, days, ...)`` from code; it returns a scalecast.Plan.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Mapping, Optional

if importlib.util.find_spec("scalecast") is None:  # run from a checkout: add clients/python
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scalecast import Client, Plan, ScalecastError

# Illustrative prices per GPU-hour (round numbers, not quotes): replace with your own.
DEFAULT_ACCELERATORS = {"h100-sxm-80gb": 2.5, "h200-sxm-141gb": 3.5}


def plan(client: Client, tokens: float, days: float, *, model: str = "llama2-70b",
         seq_len: int = 4096, accelerators: Optional[Mapping[str, float]] = None,
         max_gpus: int = 0, max_batch_tokens: int = 0, top_k: int = 0, **fields) -> Plan:
    """The server's plan for training `model` on `tokens` tokens within `days` days."""
    return client.plan(tokens, dict(accelerators or DEFAULT_ACCELERATORS), model=model,
                       seq_len=seq_len, deadline_days=days, max_gpus=max_gpus,
                       max_global_batch_tokens=max_batch_tokens, top_k=top_k, **fields)


def _money(v: float) -> str:
    if v < 0:
        return "-" + _money(-v)
    if v >= 1e6:
        return f"${v / 1e6:.2f}M"
    if v >= 1e3:
        return f"${v / 1e3:.1f}k"
    return f"${v:.0f}"


def format_plan(p: Plan, tokens: float, days: float, model: str) -> str:
    unit = _money if p.ranked_by_cost else (lambda v: f"{v:,.0f} GPU-h")
    lines = [f"Training {model} on {tokens:g} tokens within {days:g} days", ""]
    lines.append(f"{'accelerator':<16} {'GPUs':>6} {'batch':>6} {'tokens/s':>12} {'goodput':>8} "
                 f"{'days':>8} {'GPU-hours':>12} {'MWh':>8} {'cost':>10}  flags")
    for o in sorted(p.options, key=lambda o: (o.accelerator, o.gpus)):
        flags = " ".join(f for f, on in (("ok", o.meets_constraints), ("pareto", o.pareto),
                                         ("smallest", o.smallest)) if on)
        lines.append(f"{o.accelerator:<16} {o.gpus:>6} {o.global_batch:>6} "
                     f"{o.prediction.tokens_per_s:>12,.0f} {o.goodput:>8.1%} {o.days:>8.1f} "
                     f"{o.gpu_hours:>12,.0f} {o.energy_mwh:>8,.0f} {unit(o.cost):>10}  {flags}")
    lines.append("")
    best = p.smallest()
    if best is None:
        lines.append(f"No GPU count meets {days:g} days (and the other constraints).")
    else:
        lines.append(f"Smallest cluster meeting {days:g} days: {best.gpus} x {best.accelerator}, "
                     f"{best.days:.1f} days, {unit(best.cost)}, layout {best.prediction.layout}")
    lines.append("Pareto front (no option both faster and cheaper): " + ", ".join(
        f"{o.gpus} x {o.accelerator} ({o.days:.1f} d, {unit(o.cost)})" for o in p.pareto))
    if best is not None:
        beyond = [d for d in p.doublings
                  if d.accelerator == best.accelerator and d.from_gpus >= best.gpus]
        if beyond:
            lines.append(f"Doubling past it ({best.accelerator}):")
            lines.extend(f"  {d.from_gpus} -> {d.to_gpus} GPUs: {d.speedup:.2f}x faster for "
                         f"{unit(d.extra_cost)} more ({unit(d.cost_per_day_saved)} per day saved)"
                         for d in beyond)
    lines.append("Assumptions:")
    lines.extend(f"  {w}" for w in p.warnings)
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default=os.environ.get("SCALECAST_SERVER", "127.0.0.1:50051"))
    ap.add_argument("--model", default="llama2-70b")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--tokens", type=float, default=2e12)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--accelerators", default=",".join(f"{k}={v}" for k, v in
                                                        DEFAULT_ACCELERATORS.items()),
                    help="ID=PRICE per GPU-hour, comma separated")
    ap.add_argument("--max-gpus", type=int, default=0)
    ap.add_argument("--max-batch-tokens", type=float, default=0)
    args = ap.parse_args(argv)
    accelerators = {}
    for item in args.accelerators.split(","):
        acc, _, price = item.partition("=")
        accelerators[acc.strip()] = float(price or 0)
    try:
        with Client(args.server, timeout=300) as c:
            p = plan(c, args.tokens, args.days, model=args.model, seq_len=args.seq,
                     accelerators=accelerators, max_gpus=args.max_gpus,
                     max_batch_tokens=int(args.max_batch_tokens))
    except ScalecastError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_plan(p, args.tokens, args.days, args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
