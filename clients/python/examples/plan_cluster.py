#!/usr/bin/python3
"""How many GPUs to train a model on N tokens within D days, at what energy, with which layout?

Sweeps GPU counts (powers of two and the 1.5x steps between them) with scalecast, keeps the best
layout per count (objective: throughput), and answers:

* the table of the best layout per GPU count: tokens/s, days to finish, energy (MWh);
* the smallest cluster that meets the deadline (or that none in the range does);
* the point of diminishing returns. Rule: walking up the counts that raise throughput, the
  marginal throughput of a step, (T2 - T1) / (N2 - N1) tokens/s per added GPU, is compared with the
  per-GPU throughput at the smallest count; the knee is the last count before the first step whose
  marginal falls below KNEE_FRACTION (50%) of it. Past the knee, each added GPU returns less than
  half of what the first GPUs did.

Energy is the model's GPU energy (power.joules_per_token x tokens): no host, network or cooling
overhead.

    /usr/bin/python3 examples/plan_cluster.py --server 127.0.0.1:50051
    /usr/bin/python3 examples/plan_cluster.py --tokens 2e12 --days 30 --model llama3-70b

Use ``plan(client, tokens, days, ...)`` from code; it returns a Plan.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

if importlib.util.find_spec("scalecast") is None:  # run from a checkout: add clients/python
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scalecast import Client, Layout, ScalecastError, SweepProgress, SweepResult

KNEE_FRACTION = 0.5
SECONDS_PER_DAY = 86400.0
JOULES_PER_MWH = 3.6e9


@dataclass(frozen=True)
class PlanRow:
    """The best layout the planner found at one GPU count."""
    gpus: int
    global_batch: int    # sequences per step used at this count (see batch_for)
    layout: Layout
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float
    step_time_s: float
    days: float          # to train on all the tokens
    energy_mwh: float    # GPU energy for all the tokens
    joules_per_token: float
    cluster_kw: float
    memory_gib: float


@dataclass(frozen=True)
class Plan:
    tokens: float
    deadline_days: float
    model: str
    accelerator: str
    seq_len: int
    global_batch: int
    rows: list[PlanRow]                 # feasible counts, ascending
    infeasible: dict[int, str]          # GPU count -> why no layout works
    pick: Optional[PlanRow]             # the smallest count that meets the deadline
    knee: Optional[PlanRow]             # past this count extra GPUs return little
    knee_rule: str
    marginal: dict[int, float] = field(default_factory=dict)  # count -> tokens/s per added GPU

    @property
    def fastest(self) -> Optional[PlanRow]:
        return max(self.rows, key=lambda r: r.tokens_per_s, default=None)

    def row(self, gpus: int) -> Optional[PlanRow]:
        return next((r for r in self.rows if r.gpus == gpus), None)


def gpu_counts(lo: int = 256, hi: int = 16384) -> list[int]:
    """Powers of two and the 1.5x steps between them, within [lo, hi]."""
    out: set[int] = set()
    p = 1
    while p <= hi:
        for n in (p, p * 3 // 2):
            if lo <= n <= hi and n >= 1:
                out.add(n)
        p *= 2
    return sorted(out)


def batch_for(gpus: int, target: int) -> int:
    """The global batch to use at `gpus`: the target, unless the count's odd factor (3 for the
    1.5x steps) does not divide it; then the nearest multiple of odd * 2^k near the target, with k
    3 below log2(target) (1024 -> 1152 for 384, 768, 1536, ... GPUs), so that data parallelism can
    still divide the batch. Keeps the batch within about 1/8 of the target."""
    odd = gpus
    while odd % 2 == 0:
        odd //= 2
    if target % odd == 0:
        return target
    q = odd * 2 ** max(0, target.bit_length() - 1 - 3)
    return max(q, round(target / q) * q)


def plan(client: Client, tokens: float = 2e12, days: float = 30.0, *, model: str = "llama2-70b",
         accelerator: str = "h100-sxm-80gb", seq_len: int = 4096, global_batch: int = 1024,
         counts: Optional[Sequence[int]] = None, min_gpus: int = 256, max_gpus: int = 16384,
         precision: str = "bf16", adjust_batch: bool = True,
         knee_fraction: float = KNEE_FRACTION, refresh: bool = False,
         on_progress: Optional[Callable[[SweepProgress], None]] = None) -> Plan:
    """Sweeps the GPU counts and answers the planning question (see the module docstring)."""
    counts = sorted(set(counts)) if counts else gpu_counts(min_gpus, max_gpus)
    # One sweep per global batch: the target for most counts, an adjusted one for counts whose
    # odd factor does not divide it (see batch_for).
    groups: dict[int, list[int]] = {}
    for n in counts:
        groups.setdefault(batch_for(n, global_batch) if adjust_batch else global_batch, []).append(n)
    rows: list[PlanRow] = []
    infeasible: dict[int, str] = {}
    for batch, group in sorted(groups.items(), key=lambda kv: kv[1][0]):
        for event in client.sweep(group, top_k=1, objective="throughput", refresh=refresh,
                                  model=model, accelerator=accelerator, seq_len=seq_len,
                                  global_batch=batch, precision=precision,
                                  timeout=max(client.timeout or 0, 600.0)):
            if isinstance(event, SweepProgress):
                if on_progress:
                    on_progress(event)
                continue
            assert isinstance(event, SweepResult)
            best = event.best
            if best is None or best.tokens_per_s <= 0:
                reasons = sorted(event.infeasible_reasons.items(), key=lambda kv: -kv[1])
                infeasible[event.gpu_count] = reasons[0][0] if reasons else "no layout fits"
                continue
            rows.append(PlanRow(
                gpus=event.gpu_count, global_batch=batch, layout=best.layout,
                tokens_per_s=best.tokens_per_s, tokens_per_s_per_gpu=best.tokens_per_s_per_gpu,
                mfu=best.mfu, step_time_s=best.step_time_s,
                days=tokens / best.tokens_per_s / SECONDS_PER_DAY,
                energy_mwh=best.power.joules_per_token * tokens / JOULES_PER_MWH,
                joules_per_token=best.power.joules_per_token, cluster_kw=best.power.cluster_kw,
                memory_gib=best.memory.total_gib))
    rows.sort(key=lambda r: r.gpus)

    pick = next((r for r in rows if r.days <= days), None)

    # The knee: walk the counts that raise throughput (a count slower than a smaller one is never
    # worth buying, so it is skipped), and stop at the first step whose marginal throughput per
    # added GPU is below knee_fraction of the per-GPU throughput at the smallest count.
    knee: Optional[PlanRow] = None
    marginal: dict[int, float] = {}
    if rows:
        base = rows[0].tokens_per_s_per_gpu
        prev = rows[0]
        for r in rows[1:]:
            if r.tokens_per_s <= prev.tokens_per_s:
                continue
            m = (r.tokens_per_s - prev.tokens_per_s) / (r.gpus - prev.gpus)
            marginal[r.gpus] = m
            if knee is None and m < knee_fraction * base:
                knee = prev
            prev = r
    rule = (f"knee = the last GPU count before the first step (among counts that raise "
            f"throughput) whose marginal throughput per added GPU is below "
            f"{knee_fraction:.0%} of the per-GPU throughput at the smallest count"
            + (f" ({rows[0].tokens_per_s_per_gpu:,.0f} tokens/s at {rows[0].gpus} GPUs)" if rows else ""))
    return Plan(tokens=tokens, deadline_days=days, model=model, accelerator=accelerator,
                seq_len=seq_len, global_batch=global_batch, rows=rows, infeasible=infeasible,
                pick=pick, knee=knee, knee_rule=rule, marginal=marginal)


def format_plan(p: Plan) -> str:
    out: list[str] = []
    out.append(f"Training {p.model} on {p.tokens:.3g} tokens with {p.accelerator}, deadline "
               f"{p.deadline_days:g} days\n  (seq {p.seq_len}, global batch {p.global_batch} "
               f"sequences = {p.seq_len * p.global_batch / 1e6:.1f}M tokens)")
    out.append("")
    # At most 120 columns: the layout last, the pick and the knee in a short note column.
    out.append(f"{'GPUs':>6} {'batch':>5} {'tokens/s':>10} {'tok/s/GPU':>9} {'MFU':>6} {'days':>6} "
               f"{'MWh':>5} {'J/tok':>5} {'marginal':>8} {'note':<4}  best layout")
    for r in p.rows:
        m = p.marginal.get(r.gpus)
        note = "pick" if r is p.pick else "knee" if r is p.knee else ""
        out.append(f"{r.gpus:>6} {r.global_batch:>5} {r.tokens_per_s:>10,.0f} "
                   f"{r.tokens_per_s_per_gpu:>9,.0f} {r.mfu:>6.1%} {r.days:>6.1f} "
                   f"{r.energy_mwh:>5,.0f} {r.joules_per_token:>5.3f} "
                   f"{'' if m is None else f'{m:,.0f}':>8} {note:<4}  {r.layout}")
    for n, why in sorted(p.infeasible.items()):
        out.append(f"{n:>6} no feasible layout: {why}")
    if any(r.global_batch != p.global_batch for r in p.rows):
        out.append(f"  (batch: where the count's odd factor does not divide {p.global_batch}, the "
                   f"nearest batch it divides,\n   so data parallelism can split it)")
    out.append("  (marginal: tokens/s added per added GPU since the previous faster count;")
    out.append("   pick: the smallest count meeting the deadline; knee: diminishing returns past it)")
    out.append("")
    if p.pick:
        r = p.pick
        out.append(f"Smallest cluster meeting {p.deadline_days:g} days: {r.gpus} GPUs, "
                   f"{r.days:.1f} days at {r.tokens_per_s:,.0f} tokens/s ({r.mfu:.1%} MFU), "
                   f"{r.energy_mwh:,.0f} MWh ({r.joules_per_token:.2f} J/token, {r.cluster_kw:,.0f} kW)")
        out.append(f"  layout: {r.layout}; step {r.step_time_s:.2f} s; {r.memory_gib:.1f} GiB per GPU")
        smaller = [x for x in p.rows if x.gpus < r.gpus]
        if smaller:
            out.append(f"  the next smaller count, {smaller[-1].gpus} GPUs, would take "
                       f"{smaller[-1].days:.1f} days")
    else:
        f = p.fastest
        if f:
            out.append(f"No GPU count up to {p.rows[-1].gpus} meets {p.deadline_days:g} days: the "
                       f"fastest, {f.gpus} GPUs ({f.layout}), needs {f.days:.1f} days and "
                       f"{f.energy_mwh:,.0f} MWh")
        else:
            out.append("No GPU count in the range has a feasible layout")
    if p.knee:
        k = p.knee
        nxt = next((g for g in sorted(p.marginal) if g > k.gpus), None)
        out.append(f"Diminishing returns past {k.gpus} GPUs ({k.days:.1f} days, {k.energy_mwh:,.0f} MWh): "
                   f"the step to {nxt} GPUs adds\n  {p.marginal.get(nxt, 0):,.0f} tokens/s per added "
                   f"GPU, below {KNEE_FRACTION:.0%} of {p.rows[0].tokens_per_s_per_gpu:,.0f}")
    else:
        out.append("No knee in this range: every step up still adds at least "
                   f"{KNEE_FRACTION:.0%} of the smallest count's per-GPU throughput")
    out.append(textwrap.fill(f"rule: {p.knee_rule}", width=100, initial_indent="  ",
                             subsequent_indent="    "))
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("SCALECAST_SERVER", "127.0.0.1:50051"))
    ap.add_argument("--token", default=os.environ.get("SCALECAST_TOKEN"))
    ap.add_argument("--tokens", type=float, default=2e12, help="training tokens (default 2e12)")
    ap.add_argument("--days", type=float, default=30.0, help="deadline in days (default 30)")
    ap.add_argument("--model", default="llama2-70b", help="preset (default llama2-70b)")
    ap.add_argument("--accelerator", default="h100-sxm-80gb")
    ap.add_argument("--seq", type=int, default=4096, help="sequence length (default 4096)")
    ap.add_argument("--global-batch", type=int, default=1024, help="sequences per step (default 1024)")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--min-gpus", type=int, default=256)
    ap.add_argument("--max-gpus", type=int, default=16384)
    ap.add_argument("--refresh", action="store_true", help="bypass the server's sweep cache")
    ap.add_argument("--progress", action="store_true", help="show sweep progress on stderr")
    args = ap.parse_args(argv)

    def show(e: SweepProgress) -> None:
        print(f"\r  sweeping {e.gpu_count} GPUs: {e.evaluated_count}/{e.total_count} layouts",
              end="", file=sys.stderr, flush=True)

    try:
        with Client(args.server, token=args.token) as client:
            p = plan(client, args.tokens, args.days, model=args.model, accelerator=args.accelerator,
                     seq_len=args.seq, global_batch=args.global_batch, precision=args.precision,
                     min_gpus=args.min_gpus, max_gpus=args.max_gpus, refresh=args.refresh,
                     on_progress=show if args.progress else None)
    except ScalecastError as e:
        print(f"plan_cluster: {e}", file=sys.stderr)
        return 1
    if args.progress:
        print(file=sys.stderr)
    print(format_plan(p))
    return 0 if p.rows else 2


if __name__ == "__main__":
    sys.exit(main())
