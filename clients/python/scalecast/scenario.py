"""Scenario building: flat keyword arguments <-> the scalecast.v1.Scenario message.

Keyword names (all optional; ``None`` = leave unset, i.e. let the preset or the planner choose):

=================  =========================================  ==========================
keyword            Scenario field                             values
=================  =========================================  ==========================
model              workload.model.name                        preset ("llama2-70b") or label
layers, hidden,    workload.model.*                           ints; kv_heads 0 = heads
heads, kv_heads,
ffn_hidden, vocab
mlp                workload.model.mlp                         "gated", "plain"
seq_len            workload.seq_len                           tokens per sequence
global_batch       workload.global_batch                      sequences per step
precision          workload.precision                         "bf16", "fp16", "fp8", "mxfp8", "nvfp4"
accelerator        cluster.accelerator                        catalog id ("h100-sxm-80gb")
gpus / num_gpus    cluster.num_gpus
gpus_per_node      cluster.gpus_per_node
network_gbps       cluster.inter_node_gbps_per_gpu            Gbit/s per GPU
tp, pp, vpp,       parallelism.*                              ints; 0 = planner chooses
cp, dp
sharding           parallelism.sharding                       "ddp", "zero1", "zero2", "fsdp", "hsdp"
shard_group        parallelism.shard_group                    HSDP shard group size
micro_batch        parallelism.micro_batch
recompute          parallelism.recompute                      "none", "selective", "full"
sequence_parallel  parallelism.sequence_parallel              bool
framework          framework                                  "megatron", "torchtitan", ...
framework_version  stack.version                              "24.09"; unset = its defaults
tp_comm_overlap,   stack.*                                    bool; None = the framework's
dp_overlap,                                                   default
cuda_graphs,
compiled
fp8_recipe         stack.fp8_recipe                           "delayed", "tensorwise", ...
attention_kernel   stack.attention_kernel                     "fa2", "fa3", "cudnn", ...
calibration        calibration                                profile name
label              label                                      echoed back
=================  =========================================  ==========================

Enum values also accept the proto's full names ("PRECISION_BF16") and numbers.
"""

from __future__ import annotations

from typing import Any, Mapping

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from ._proto import pb
from .errors import ScalecastError

# keyword -> (dotted field path inside Scenario, kind); kind is "str", "int", "float", "bool" or
# an enum prefix ("MLP", "PRECISION", "SHARDING", "RECOMPUTE").
_FIELDS: dict[str, tuple[str, str]] = {
    "model": ("workload.model.name", "str"),
    "layers": ("workload.model.layers", "int"),
    "hidden": ("workload.model.hidden", "int"),
    "heads": ("workload.model.heads", "int"),
    "kv_heads": ("workload.model.kv_heads", "int"),
    "ffn_hidden": ("workload.model.ffn_hidden", "int"),
    "mlp": ("workload.model.mlp", "MLP"),
    "vocab": ("workload.model.vocab", "int"),
    "seq_len": ("workload.seq_len", "int"),
    "global_batch": ("workload.global_batch", "int"),
    "precision": ("workload.precision", "PRECISION"),
    "accelerator": ("cluster.accelerator", "str"),
    "gpus": ("cluster.num_gpus", "int"),
    "gpus_per_node": ("cluster.gpus_per_node", "int"),
    "network_gbps": ("cluster.inter_node_gbps_per_gpu", "float"),
    "tp": ("parallelism.tp", "int"),
    "pp": ("parallelism.pp", "int"),
    "vpp": ("parallelism.vpp", "int"),
    "cp": ("parallelism.cp", "int"),
    "dp": ("parallelism.dp", "int"),
    "sharding": ("parallelism.sharding", "SHARDING"),
    "shard_group": ("parallelism.shard_group", "int"),
    "micro_batch": ("parallelism.micro_batch", "int"),
    "recompute": ("parallelism.recompute", "RECOMPUTE"),
    "sequence_parallel": ("parallelism.sequence_parallel", "obool"),
    "framework": ("framework", "str"),
    "framework_version": ("stack.version", "str"),
    "tp_comm_overlap": ("stack.tp_comm_overlap", "obool"),
    "dp_overlap": ("stack.dp_overlap", "obool"),
    "fp8_recipe": ("stack.fp8_recipe", "str"),
    "attention_kernel": ("stack.attention_kernel", "str"),
    "cuda_graphs": ("stack.cuda_graphs", "obool"),
    "compiled": ("stack.compiled", "obool"),
    "calibration": ("calibration", "str"),
    "label": ("label", "str"),
}
_ALIASES = {"num_gpus": "gpus", "inter_node_gbps_per_gpu": "network_gbps", "name": "model"}

SCENARIO_KEYS: frozenset[str] = frozenset(_FIELDS) | frozenset(_ALIASES)

_ENUMS = {"MLP": pb.Mlp, "PRECISION": pb.Precision, "SHARDING": pb.Sharding,
          "RECOMPUTE": pb.Recompute, "OBJECTIVE": pb.Objective}


def _bad(path: str, why: str) -> ScalecastError:
    return ScalecastError(grpc.StatusCode.INVALID_ARGUMENT, f"{path}: {why}")


def enum_value(prefix: str, value: Any, path: str) -> int:
    """"bf16" / "BF16" / "PRECISION_BF16" / 1 -> the enum number; "" and None -> 0."""
    enum = _ENUMS[prefix]
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise _bad(path, f"{value!r} is not a {prefix.lower()} name")
    if isinstance(value, int):
        if value not in enum.values():
            raise _bad(path, f"unknown enum value {value}")
        return value
    if isinstance(value, str):
        name = value.strip().upper().replace("-", "_")
        if not name.startswith(prefix + "_"):
            name = f"{prefix}_{name}"
        if name in enum.keys():
            return enum.Value(name)
    names = ", ".join(enum_name(prefix, v) for v in enum.values() if v != 0)
    raise _bad(path, f"{value!r} is not one of {names}")


def enum_name(prefix: str, number: int) -> str:
    """PRECISION_BF16 -> "bf16"; 0 (unspecified) -> ""."""
    if number == 0:
        return ""
    try:
        return _ENUMS[prefix].Name(number)[len(prefix) + 1:].lower()
    except ValueError:
        return str(number)


def _set(msg: Message, dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        msg = getattr(msg, p)
    setattr(msg, leaf, value)


def _get(msg: Message, dotted: str) -> Any:
    for p in dotted.split("."):
        msg = getattr(msg, p)
    return msg


def _coerce(kind: str, value: Any, path: str) -> Any:
    if kind == "str":
        if not isinstance(value, str):
            raise _bad(path, f"{value!r} is not a string")
        return value
    if kind in ("bool", "obool"):
        if not isinstance(value, (bool, int)):
            raise _bad(path, f"{value!r} is not a bool")
        return bool(value)
    if kind == "int":
        if isinstance(value, bool):
            raise _bad(path, f"{value!r} is not an integer")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise _bad(path, f"{value!r} is not an integer")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(path, f"{value!r} is not a number")
        return float(value)
    return enum_value(kind, value, path)


def apply_fields(scenario: Any, fields: Mapping[str, Any], path: str = "scenario") -> None:
    """Sets flat keyword fields on a Scenario message; None values are skipped."""
    for key, value in fields.items():
        canon = _ALIASES.get(key, key)
        if canon not in _FIELDS:
            raise TypeError(f"unknown scenario field {key!r}; known: {', '.join(sorted(_FIELDS))}")
        if value is None:
            continue
        dotted, kind = _FIELDS[canon]
        _set(scenario, dotted, _coerce(kind, value, f"{path}.{dotted}"))


def build_scenario(scenario: Any = None, path: str = "scenario", **fields: Any) -> Any:
    """A Scenario message from a base (a Scenario message, a flat dict of the keywords above,
    or a proto-shaped dict with workload/cluster/parallelism) and keyword overrides."""
    out = pb.Scenario()
    if scenario is None:
        pass
    elif isinstance(scenario, Message):
        if scenario.DESCRIPTOR.full_name != "scalecast.v1.Scenario":
            raise TypeError(f"expected a scalecast.v1.Scenario, got {scenario.DESCRIPTOR.full_name}")
        out.CopyFrom(scenario)
    elif isinstance(scenario, Mapping):
        if any(k in scenario for k in ("workload", "cluster", "parallelism")):
            try:
                json_format.ParseDict(dict(scenario), out)
            except json_format.ParseError as e:
                raise _bad(path, str(e)) from None
        else:
            apply_fields(out, scenario, path)
    else:
        raise TypeError(f"scenario must be a dict or a scalecast.v1.Scenario, not {type(scenario).__name__}")
    apply_fields(out, fields, path)
    return out


def scenario_to_dict(scenario: Any) -> dict[str, Any]:
    """The flat keyword form of a Scenario message: only the fields that are set."""
    out: dict[str, Any] = {}
    for key, (dotted, kind) in _FIELDS.items():
        v = _get(scenario, dotted)
        if kind == "obool":  # optional: False when set is a choice, not a blank
            parent, _, leaf = dotted.rpartition(".")
            if _get(scenario, parent).HasField(leaf):
                out[key] = v
        elif kind in _ENUMS:
            if v:
                out[key] = enum_name(kind, v)
        elif v:
            out[key] = v
    return out
