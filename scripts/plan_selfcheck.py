#!/usr/bin/python3
"""The Plan self-check: published end-to-end pre-training runs, each planned at its own
accelerator, GPU count, batch and (where published) layout, on the software release of its time,
with the default reliability; the planned GPU-hours against the published ones.

Starts a scalecast-server from the build on a free port with a throwaway database, runs
`scalecast plan ... --csv` for each run and prints a Markdown table, then the median and the
largest absolute error over the runs whose GPU count is published. Nothing here is fitted: the
published figures are only compared with.

    /usr/bin/python3 scripts/plan_selfcheck.py --build build
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_examples import server  # noqa: E402  (one way to start a throwaway server)

LLAMA_65B = ["--model", "llama-65b", "--layers", "80", "--hidden", "8192", "--heads", "64",
             "--ffn-hidden", "22016", "--vocab", "32000", "--mlp", "gated"]
BLOOM = ["--model", "bloom-176b", "--layers", "70", "--hidden", "14336", "--heads", "112",
         "--ffn-hidden", "57344", "--vocab", "250880", "--mlp", "plain"]

# (run, GPU count published, published GPU-hours, its source, plan flags). Each run's release is
# the framework release in use when it started (model/framework.cc's tables; the dated form
# YYYY.MM resolves to the newest release not after it).
RUNS = [
    ("Llama 3.1 405B", True, 30.84e6,
     "Llama 3.1 model card (meta-llama/llama-models): 30.84M H100-80GB GPU-hours",
     ["--model", "llama3-405b", "--seq", "8192", "--global-batch", "2048", "--tokens", "15.6e12",
      "--accelerators", "h100-sxm-80gb", "--gpus", "16384",
      # Layout at 16,384 GPUs, 8K sequences: TP 8, CP 1, PP 16, DP 128 (arXiv 2407.21783
      # Table 4). Meta's own PyTorch code; the run's start is not published (its data cutoff is
      # December 2023): the release of January 2024.
      "--tp", "8", "--cp", "1", "--pp", "16", "--framework-version", "2024.01"]),
    ("LLaMA-65B", True, 1022362,
     "arXiv 2302.13971 Table 15: 1,022,362 A100-80GB GPU-hours (380 tokens/s/GPU, Sec 2.4)",
     LLAMA_65B + ["--seq", "2048", "--global-batch", "2048", "--tokens", "1.4e12",
                  "--accelerators", "a100-sxm-80gb", "--gpus", "2048",
                  # Meta's own PyTorch code of early 2023 with checkpointing of the expensive
                  # activations (Sec 2.4; data/era-papers.csv row 5605); layout not published.
                  "--framework-version", "2023.02", "--recompute", "selective"]),
    ("MPT-7B", True, 9.5 * 24 * 440,
     "MosaicML 'Introducing MPT-7B': 9.5 days on 440 A100-40GB, 'including checkpointing, "
     "periodic evaluation, restarts'",
     ["--model", "mpt-7b", "--seq", "2048", "--global-batch", "1760", "--tokens", "1e12",
      "--accelerators", "a100-sxm-40gb", "--gpus", "440",
      # llm-foundry / Composer FSDP of May 2023 (the model was released 2023-05-05); the batch
      # is not published (4 sequences per GPU assumed).
      "--framework", "composer-fsdp", "--framework-version", "2023.05"]),
    ("BLOOM-176B", True, 1082990,
     "arXiv 2211.02001 Table 1 (Luccioni et al.) and arXiv 2211.05100 Sec 3.4.1: 1,082,990 "
     "A100-80GB GPU-hours",
     BLOOM + ["--seq", "2048", "--global-batch", "2048", "--tokens", "366e9",
              "--accelerators", "a100-sxm-80gb", "--gpus", "384",
              # tr11-176B-ml.slurm: TP 4, PP 12, DP 8, MBS 2, full recompute, ZeRO-1 equivalent,
              # no interleaving or sequence parallelism in that fork; Megatron-DeepSpeed of March
              # 2022 (data/era-papers.csv row 5601).
              "--framework", "megatron-deepspeed", "--framework-version", "2022.03",
              "--tp", "4", "--pp", "12", "--vpp", "1", "--dp", "8", "--micro-batch", "2",
              "--recompute", "full", "--sharding", "zero1", "--sequence-parallel=false"]),
    ("Llama 2 70B", False, 1720320,
     "arXiv 2307.09288 Table 2: 1,720,320 A100-80GB GPU-hours (GPU count not published: 2,048 "
     "assumed)",
     ["--model", "llama2-70b", "--seq", "4096", "--global-batch", "1024", "--tokens", "2e12",
      "--accelerators", "a100-sxm-80gb", "--gpus", "2048",
      # "Llama 2 was trained between January 2023 and July 2023" (its model card).
      "--framework-version", "2023.01"]),
    ("Llama 3.1 70B", False, 7.0e6,
     "Llama 3.1 model card: 7.0M H100-80GB GPU-hours (GPU count not published: 4,096 assumed)",
     ["--model", "llama3-70b", "--seq", "8192", "--global-batch", "2048", "--tokens", "15e12",
      "--accelerators", "h100-sxm-80gb", "--gpus", "4096", "--framework-version", "2024.01"]),
    ("Llama 3.1 8B", False, 1.46e6,
     "Llama 3.1 model card: 1.46M H100-80GB GPU-hours (GPU count not published: 2,048 assumed)",
     ["--model", "llama3-8b", "--seq", "8192", "--global-batch", "2048", "--tokens", "15e12",
      "--accelerators", "h100-sxm-80gb", "--gpus", "2048", "--framework-version", "2024.01"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the CMake build directory")
    args = ap.parse_args()
    binary = os.path.join(args.build, "server", "scalecast-server")
    cli = os.path.join(args.build, "clients", "cli", "scalecast")
    errors = []
    print("| run | GPUs | layout | MFU | goodput | days | published GPU-hours | planned | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        with server(binary, os.path.join(tmp, "db"), os.path.join(tmp, "log")) as addr:
            for name, counted, published, source, flags in RUNS:
                out = subprocess.run([cli, "--server", addr, "--timeout", "600", "plan", *flags,
                                      "--csv"], capture_output=True, text=True)
                if out.returncode != 0:
                    print(f"{name}: {out.stderr.strip()}", file=sys.stderr)
                    return 1
                row = next(csv.DictReader(io.StringIO(out.stdout)))
                planned = float(row["gpu_hours"])
                err = planned / published - 1
                if counted:
                    errors.append(abs(err))
                print(f"| {name}{'' if counted else ' (count assumed)'} | {row['gpus']} | "
                      f"{row['layout']} | {100 * float(row['mfu']):.1f}% | "
                      f"{100 * float(row['goodput']):.1f}% | {float(row['days']):.1f} | "
                      f"{published:,.0f} | {planned:,.0f} | {100 * err:+.1f}% |")
    print(f"\nRuns with a published GPU count: median |error| {100 * statistics.median(errors):.1f}%"
          f", largest {100 * max(errors):.1f}% (targets: 25% and 50%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
