#!/usr/bin/python3
"""What nanotron's whole benchmark sweep says about its tensor parallelism (data/README.md, nanotron).

The README chart behind data/olmo-core-nanotron.csv (ids 7514-7539) shows each cell's best run; its
data file, nanotron/ultrascale-playbook-data bench_final2_mfu2.csv (copied in eyao600/Rapid-LLM
@d6e2fc37 validation_scripts/huggingface_data/), holds about 4,100 runs of the same sweep. Not part
of the tests or CI: the file is third-party and not fetched at build time. Give its path:

  /usr/bin/python3 scripts/nanotron_sweep.py --sweep bench_final2_mfu2.csv [--validate]

Prints the time a decoder layer takes per micro-batch, step / (accumulation + PP - 1) / layers a
stage, by tensor-parallel size, micro-batch and the file's `after_pp_fix` flag (jobs from 14097150
on). With --validate it also writes the runs as rows of data/olmo-core-nanotron.csv's shape (each
model's chart row is the template; the layout, batch and measured columns are the run's) and prints
scalecast-validate's signed error by the same groups, from build/tools/scalecast-validate (the
rows keep the chart's source, so the same release and stack facts apply).
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ = 4096  # every run of the sweep (seq_len column)
# The chart row whose shape each model of the sweep takes (data/olmo-core-nanotron.csv).
TEMPLATE = {"1.34G": "7530", "3.57G": "7531", "8.86G": "7532", "80G": "7533"}


def runs(path):
    """The sweep's successful runs of the four chart models (MHA, 131k vocabulary)."""
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            model = r["name"].split("_")[0]
            if r["status"] != "Success" or model not in TEMPLATE:
                continue
            if "gqa" in r["name"] or "vocab131k" not in r["name"]:
                continue
            r["model"] = model
            r["gpus"] = int(float(r["nodes"]) * 8)
            for k in ("tp", "pp", "dp", "mbs", "num_layers"):
                r[k] = int(r[k])
            r["acc"] = int(float(r["batch_accum"]))
            r["late"] = r["after_pp_fix"] == "True"
            yield r


def layer_ms(r):
    step = float(r["gbs"]) * SEQ / (float(r["tok/s/gpu"]) * r["gpus"])
    return 1e3 * step / (r["acc"] + r["pp"] - 1) / (r["num_layers"] / r["pp"])


def group(r):
    era = "jobs >= 14097150" if r["late"] else "earlier jobs"
    return (era, "PP 1" if r["pp"] == 1 else "PP > 1", r["tp"])


def print_table(title, cells, fmt):
    print(f"\n{title}\n| jobs | PP | TP | micro-batch 1 | 2 | 4 | 8 |\n|---|---|---:|---:|---:|---:|---:|")
    for key in sorted({k[:3] for k in cells}):
        row = []
        for mbs in (1, 2, 4, 8):
            v = cells.get(key + (mbs,), [])
            row.append(f"{fmt(statistics.median(v))} ({len(v)})" if v else "-")
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(row) + " |")


def write_rows(sweep, out):
    with open(os.path.join(ROOT, "data/olmo-core-nanotron.csv"), newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        chart = {r["id"]: r for r in reader}
    labels = {}
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for i, r in enumerate(sweep):
            row = dict(chart[TEMPLATE[r["model"]]])
            tp_on = "true" if r["tp"] > 1 else ""
            row.update(id=str(900000 + i), num_gpus=str(r["gpus"]), tp=str(r["tp"]),
                       pp=str(r["pp"]), dp=str(r["dp"]), micro_batch=str(r["mbs"]),
                       global_batch=str(int(float(r["gbs"]))),
                       tokens_per_s_per_gpu=r["tok/s/gpu"],
                       sharding="zero1" if r["zero_stage"] == "1" else "ddp",
                       sequence_parallel=tp_on, tp_comm_overlap=tp_on,
                       inter_node_latency_us="41" if r["gpus"] > 8 else "",
                       note=f"job {r['job_id']} of the sweep (scripts/nanotron_sweep.py)")
            labels[row["id"]] = r
            w.writerow(row)
    return labels


def validate(rows_csv, labels):
    """scalecast-validate's signed error per row, grouped."""
    # The run facts as every other script passes them (scripts/lib.sh: annotations).
    cmd = ["bash", "-c", 'source scripts/lib.sh && ./build/tools/scalecast-validate --no-holdout '
           '"${annotations[@]}" "$1"', "nanotron_sweep", rows_csv]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    cells = defaultdict(list)
    for line in text.splitlines():
        m = re.match(r"^(9\d{5})\s.*\s([+-]\d+\.\d)%", line)
        if m:
            r = labels[m.group(1)]
            cells[group(r) + (r["mbs"],)].append(float(m.group(2)))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", required=True, help="bench_final2_mfu2.csv")
    ap.add_argument("--validate", action="store_true", help="also price the runs")
    ap.add_argument("--max-gpus", type=int, default=256,
                    help="leave out larger jobs (64 nodes met a degraded fabric)")
    args = ap.parse_args()
    sweep = [r for r in runs(args.sweep) if r["gpus"] <= args.max_gpus and r["mbs"] <= 8]
    cells = defaultdict(list)
    for r in sweep:
        cells[group(r) + (r["mbs"],)].append(layer_ms(r))
    print(f"{len(sweep)} runs of the sweep, up to {args.max_gpus} GPUs, micro-batch 1-8")
    print_table("Median ms a decoder layer takes per micro-batch (runs)", cells, lambda v: f"{v:.1f}")
    if args.validate:
        labels = write_rows(sweep, os.path.join(ROOT, "build/nanotron_sweep_rows.csv"))
        errors = validate(os.path.join(ROOT, "build/nanotron_sweep_rows.csv"), labels)
        print_table("Median signed error of scalecast's prediction (runs)", errors,
                    lambda v: f"{v:+.0f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
