"""What the peer comparison's scripts share: the measured runs, their fields, the comparison's
scope and the predictions file.

The scope is one rule for every peer, so that "the runs each peer expresses" differ only by what
the peers themselves lack: dense runs in 16-bit floating point, with a stated layout that covers
the run's GPUs and no context parallelism.
"""

import csv

OUT_COLUMNS = ["id", "expressible", "reason", "peer_tokens_per_s_per_gpu", "peer_step_s"]
SIXTEEN_BIT = ("bf16", "fp16")


def read_runs(paths):
    """All rows of the given measured-run CSVs, in order."""
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def field(row, name):
    """A column's text, stripped; "" when blank or missing."""
    return (row.get(name) or "").strip()


def integer(row, name):
    """A column's integer value, or None when blank or missing."""
    value = field(row, name)
    return int(float(value)) if value else None


def truthy(row, name):
    """True / False from a boolean column, None when blank or missing."""
    value = field(row, name).lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    return None


def scope_refusals(row):
    """Why a run lies outside the comparison (every peer alike); empty when inside."""
    why = []
    if field(row, "num_experts"):
        why.append("mixture-of-experts run (dense runs only in this comparison)")
    if field(row, "precision") not in SIXTEEN_BIT:
        why.append(f"precision {field(row, 'precision')} (16-bit floating point only)")
    tp, pp, dp, cp = (integer(row, k) for k in ("tp", "pp", "dp", "cp"))
    if None in (tp, pp, dp):
        why.append("layout (tp/pp/dp) not given")
    elif tp * pp * dp * (cp or 1) != integer(row, "num_gpus"):
        why.append("tp*pp*dp*cp != num_gpus")
    if (cp or 1) != 1:
        why.append(f"context parallelism (cp={cp})")
    return why


def write_predictions(path, rows):
    """The predictions file: one dict of OUT_COLUMNS per run."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=OUT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
