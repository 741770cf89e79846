#!/usr/bin/python3
"""A tour of the scalecast Python client: predict, compare, sweep, validate, errors.

    python3 clients/python/examples/tour.py     (from the repository root; a server on
                                                 $SCALECAST_SERVER or 127.0.0.1:50051)

README.md shows this file and its output (checked by the ctest readme_examples).
"""
import importlib.util
import os
import sys

if importlib.util.find_spec("scalecast") is None:  # not installed: the checkout's package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scalecast import Client, ScalecastError, SweepProgress  # noqa: E402

with Client(os.environ.get("SCALECAST_SERVER", "127.0.0.1:50051")) as c:
    print(c.health())

    # One scenario: blanks (pp, cp, dp, sharding, micro batch, recompute) are filled by the planner.
    p = c.predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=2048, tp=2,
                  seq_len=4096, global_batch=1024)
    print(f"{p.tokens_per_s:,.0f} tokens/s, {p.tokens_per_s_per_gpu:,.0f}/GPU, MFU {p.mfu:.1%}, "
          f"step {p.step_time_s:.2f} s")
    print("layout:", p.layout)  # the CLI's notation (README, Glossary)
    print("resolved:", p.scenario["precision"], f"{p.scenario['layers']} layers,",
          f"{p.scenario['gpus_per_node']} GPUs/node")
    if p.uncertainty:  # when the server sends a band
        print("band:", p.uncertainty, "-", p.uncertainty.basis)
    print(f"memory {p.memory.total_gib:.1f} GiB/GPU (fits: {p.fits}), "
          f"{p.power.watts_per_gpu:.0f} W/GPU, {p.power.joules_per_token:.3f} J/token")
    for comm in p.time.comm:
        print(f"  {comm.kind:<17} {comm.total_s:.3f} s, exposed {comm.exposed_s:.3f} s")

    # Side by side: each scenario against the first; shared fields as keywords.
    cmp = c.compare([dict(gpus=1024), dict(gpus=2048), dict(gpus=2048, precision="fp8")],
                    model="llama2-70b", accelerator="h100-sxm-80gb", seq_len=4096,
                    global_batch=1024)
    first = cmp.predictions[0]
    for pred, d in zip(cmp.predictions, cmp.deltas):
        # Scaling efficiency compares GPU counts: between equal counts it says nothing new.
        eff = (f", scaling efficiency {d.scaling_efficiency:.0%}" if pred.gpus != first.gpus
               else "")
        print(f"{pred.gpus:>5} GPUs {pred.scenario.get('precision', '')}: "
              f"x{d.throughput_ratio:.2f} throughput{eff}, J/token x{d.joules_per_token_ratio:.2f}")

    # Sweep: progress events (how many come depends on timing), then one result per GPU count.
    for e in c.sweep([512, 1024, 4096], top_k=3, refresh=True, model="llama2-70b",
                     accelerator="h100-sxm-80gb", seq_len=4096, global_batch=1024):
        if isinstance(e, SweepProgress):
            continue  # e.evaluated_count of e.total_count layouts: for a progress bar
        print(f"{e.gpu_count:>5} GPUs: best {e.best.tokens_per_s:,.0f} tokens/s with "
              f"{e.best.layout} ({e.evaluated_count} layouts, {e.infeasible_count} infeasible)")

    # Measured runs: import the calibration CSV (unless runs are stored), then the model's error.
    if c.count_measurements() == 0:
        c.import_csv("../shared/data/calibration.csv")
    v = c.validate()
    print(f"MAPE {v.overall.mape:.1%} over {v.overall.count} runs, "
          f"median {v.overall.median_ape:.1%}")
    for fw, e in v.by_framework.items():
        print(f"  {fw:<14} {e.count:>4} runs  MAPE {e.mape:.1%}")

    try:
        c.predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=2048, tp=3,
                  seq_len=4096, global_batch=1024)
    except ScalecastError as err:
        print(err.code, "-", err.message)
    # 1024 sequences split over no layout of 500 GPUs: answered at the nearest batch that does,
    # and the prediction says so.
    p = c.predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=500, seq_len=4096,
                  global_batch=1024)
    print(p.scenario["global_batch"], "-",
          next(w for w in p.warnings if w.startswith("scenario.workload.global_batch")))
    try:  # 7 sequences: the nearest that split are far off, so the nearest that work come back
        c.predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=500, seq_len=4096,
                  global_batch=7)
    except ScalecastError as err:
        print(err.code, "-", err.message)
