"""Parses the measured-runs CSV (shared/data/README.md) into scalecast.v1.Measurement messages,
following the same conventions as the server's `scalecast measurements import`:

* blank layout cells are left unset (the planner fills them);
* a blank ``sharding`` is ``fsdp`` for the PyTorch-FSDP frameworks (torchtitan, composer-fsdp,
  fms-fsdp), else the framework's default (unset);
* ``hsdp`` rows without a shard group shard within a node (shard_group = gpus_per_node, 8 if blank);
* tp > 1 with megatron, nemo, megatron-deepspeed or torchtitan turns on sequence parallelism;
* a blank ``global_batch`` is dp * micro_batch * (pp if pp > 1 else 1), micro_batch 1 when blank
  (and then set to 1); blank global_batch and blank dp is an error;
* labels ``csv_id`` = id and ``note`` = note (when not blank); ``source`` = the source column.

Any bad row fails the whole file with ``line L, column NAME: why`` (ScalecastError,
INVALID_ARGUMENT), so nothing is recorded.
"""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any

import grpc

from ._proto import pb
from .errors import ScalecastError
from .scenario import enum_name

KNOWN_FRAMEWORKS = ("", "megatron", "nemo", "torchtitan", "composer-fsdp", "fms-fsdp",
                    "deepspeed", "megatron-deepspeed", "maxtext")
_REQUIRED = ("framework", "layers", "hidden", "heads", "ffn_hidden", "mlp", "vocab", "seq_len",
             "accelerator", "num_gpus", "precision", "tokens_per_s_per_gpu")

# column -> (required, lo, hi, dotted Scenario field)
_INTS: list[tuple[str, bool, int, int, str]] = [
    ("layers", True, 1, 4096, "workload.model.layers"),
    ("hidden", True, 1, 1 << 20, "workload.model.hidden"),
    ("heads", True, 1, 16384, "workload.model.heads"),
    ("kv_heads", False, 0, 16384, "workload.model.kv_heads"),
    ("ffn_hidden", True, 1, 1 << 24, "workload.model.ffn_hidden"),
    ("vocab", True, 1, 1 << 24, "workload.model.vocab"),
    ("seq_len", True, 1, 1 << 22, "workload.seq_len"),
    ("num_gpus", True, 1, 1 << 20, "cluster.num_gpus"),
    ("gpus_per_node", False, 0, 1024, "cluster.gpus_per_node"),
    ("tp", False, 0, 1 << 20, "parallelism.tp"),
    ("pp", False, 0, 1 << 20, "parallelism.pp"),
    ("vpp", False, 0, 4096, "parallelism.vpp"),
    ("cp", False, 0, 1 << 20, "parallelism.cp"),
    ("dp", False, 0, 1 << 20, "parallelism.dp"),
    ("micro_batch", False, 0, (1 << 31) - 1, "parallelism.micro_batch"),
    ("global_batch", False, 0, 1 << 32, "workload.global_batch"),
]


def _enum_names(prefix: str) -> dict[str, int]:
    enum = {"MLP": pb.Mlp, "PRECISION": pb.Precision, "SHARDING": pb.Sharding,
            "RECOMPUTE": pb.Recompute}[prefix]
    return {enum_name(prefix, v): v for v in enum.values() if v != 0}


def framework_family(framework: str) -> str:
    if framework in ("torchtitan", "composer-fsdp", "fms-fsdp"):
        return "pytorch-fsdp"
    if framework in ("megatron", "nemo", "megatron-deepspeed"):
        return "megatron"
    if framework == "deepspeed":
        return "deepspeed"
    if framework == "maxtext":
        return "jax"
    return "generic"


def _bad(line: int, col: str, why: str) -> ScalecastError:
    return ScalecastError(grpc.StatusCode.INVALID_ARGUMENT, f"line {line}, column {col}: {why}")


def _set(msg: Any, dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        msg = getattr(msg, p)
    setattr(msg, leaf, value)


def parse_measurements_csv(text: str, *, source_name: str = "<csv>") -> list[Any]:
    """CSV text -> a list of scalecast.v1.Measurement messages (see the module docstring)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise _bad(1, "-", "empty file, no header row") from None
    except csv.Error as e:
        raise ScalecastError(grpc.StatusCode.INVALID_ARGUMENT, f"line 1: {e}") from None
    cols = {name.strip(): i for i, name in enumerate(header)}
    for c in _REQUIRED:
        if c not in cols:
            raise _bad(1, c, "missing from header")
    out: list[Any] = []
    while True:
        line = reader.line_num + 1  # the physical line the next row starts on
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raise ScalecastError(grpc.StatusCode.INVALID_ARGUMENT, f"line {line}: {e}") from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(header):
            raise ScalecastError(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"line {line}: {len(row)} fields, the header has {len(header)}")

        def text_of(col: str) -> str:
            i = cols.get(col)
            return "" if i is None else row[i].strip()

        m = pb.Measurement()
        s = m.scenario
        for col, required, lo, hi, dotted in _INTS:
            v = text_of(col)
            if not v:
                if required:
                    raise _bad(line, col, "is required")
                continue
            try:
                x = int(v)
            except ValueError:
                raise _bad(line, col, f"'{v}' is not an integer") from None
            if not lo <= x <= hi:
                raise _bad(line, col, f"{x} is out of range [{lo}, {hi}]")
            _set(s, dotted, x)
        s.workload.model.name = text_of("model")
        for col, prefix, dotted, allowed, required in (
                ("mlp", "MLP", "workload.model.mlp", "gated or plain", True),
                ("precision", "PRECISION", "workload.precision",
                 "bf16, fp16, fp8, mxfp8 or nvfp4", True),
                ("sharding", "SHARDING", "parallelism.sharding",
                 "ddp, zero1, zero2, fsdp or hsdp", False),
                ("recompute", "RECOMPUTE", "parallelism.recompute",
                 "none, selective or full", False)):
            v = text_of(col)
            number = _enum_names(prefix).get(v, -1) if v else 0  # exact lower-case names
            if number < 0 or (required and number == 0):
                raise _bad(line, col, f"'{v}' is not {allowed}")
            _set(s, dotted, number)
        s.cluster.accelerator = text_of("accelerator")
        if not s.cluster.accelerator:
            raise _bad(line, "accelerator", "is required")
        s.framework = text_of("framework")
        if s.framework not in KNOWN_FRAMEWORKS:
            raise _bad(line, "framework", f"unknown framework '{s.framework}'")
        tps = text_of("tokens_per_s_per_gpu")
        try:
            m.tokens_per_s_per_gpu = float(tps)
        except ValueError:
            m.tokens_per_s_per_gpu = math.nan
        if not math.isfinite(m.tokens_per_s_per_gpu) or m.tokens_per_s_per_gpu <= 0:
            raise _bad(line, "tokens_per_s_per_gpu", f"'{tps}' is not a positive number")

        p = s.parallelism
        family = framework_family(s.framework)
        if p.sharding == pb.SHARDING_UNSPECIFIED and family == "pytorch-fsdp":
            p.sharding = pb.SHARDING_FSDP
        if p.sharding == pb.SHARDING_HSDP and p.shard_group == 0:
            p.shard_group = s.cluster.gpus_per_node or 8
        if p.tp > 1 and (family == "megatron" or s.framework == "torchtitan"):
            p.sequence_parallel = True
        if s.workload.global_batch == 0 and p.dp > 0:
            mb = p.micro_batch or 1
            s.workload.global_batch = p.dp * mb * (p.pp if p.pp > 1 else 1)
            if p.micro_batch == 0:
                p.micro_batch = 1
        if s.workload.global_batch == 0:
            raise _bad(line, "global_batch", "is blank and dp is blank: the batch is unknown")
        m.source = text_of("source")
        if csv_id := text_of("id"):
            m.labels["csv_id"] = csv_id
        if note := text_of("note"):
            m.labels["note"] = note
        out.append(m)
    return out


def read_measurements_csv(path: str | os.PathLike[str]) -> list[Any]:
    """Reads and parses a measurements CSV file (UTF-8)."""
    with open(path, encoding="utf-8", newline="") as f:
        return parse_measurements_csv(f.read(), source_name=os.fspath(path))
