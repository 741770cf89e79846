"""Scenario building: flat keyword arguments <-> the scalecast.v1.Scenario message.

Keyword names (all optional; ``None`` = leave unset, i.e. let the preset or the planner choose):

=================  =========================================  ==========================
keyword            Scenario field                             values
=================  =========================================  ==========================
model              workload.model.name                        preset ("llama2-70b") or label,
                   (or workload.model)                        or a ModelSpec (from_hf_config)
hf_config_json     workload.model.hf_config_json              a config.json's text (server maps)
tie_embeddings     workload.model.tie_embeddings              bool; output shares embedding
layers, hidden,    workload.model.*                           ints; kv_heads 0 = heads
heads, kv_heads,
ffn_hidden, vocab
mlp                workload.model.mlp                         "gated", "plain"
head_dim           workload.model.head_dim                    0 = hidden / heads
mtp_layers         workload.model.mtp_layers                  multi-token prediction modules
num_experts,       workload.model.moe.*                       mixture of experts; 0 = dense
experts_per_token,                                            (top-k); shared_ffn_hidden 0 =
expert_ffn_hidden,                                            shared_experts x expert's;
shared_experts,                                               dense_layers: layers with a
shared_ffn_hidden,                                            dense FFN of ffn_hidden
dense_layers
capacity_factor    workload.model.moe.capacity_factor         float; 0 = dropless
force_balance      workload.model.moe.force_balance           bool; benchmarks' even routing
expert_bias        workload.model.moe.expert_bias             bool; biased expert linears
latent_size        workload.model.moe.latent_size             latent MoE width; 0 = hidden
router_groups,     workload.model.moe.router_groups /         group-limited routing
router_group_topk  .router_group_topk                         (DeepSeek n_group / topk_group)
moe, mla           workload.model.moe / .mla                  a MoeSpec / MlaSpec dataclass
q_lora_rank,       workload.model.mla.*                       latent attention (MLA);
kv_lora_rank,                                                 kv_lora_rank 0 = none
qk_nope_head_dim,
qk_rope_head_dim,
v_head_dim
attention_window,  workload.model.*                           local attention; window 0 =
full_attention_every                                          every layer full
layer_pattern      workload.model.layer_pattern               hybrid: "M*-E" per layer
mamba_heads, ...   workload.model.mamba_*                     heads, head_dim, state, groups
seq_len            workload.seq_len                           tokens per sequence
global_batch       workload.global_batch                      sequences per step
precision          workload.precision                         "bf16", "fp16", "fp8", "mxfp8", "nvfp4"
accelerator        cluster.accelerator                        catalog id ("h100-sxm-80gb")
gpus / num_gpus    cluster.num_gpus
gpus_per_node      cluster.gpus_per_node
network_gbps       cluster.inter_node_gbps_per_gpu            Gbit/s per GPU
tp, pp, vpp,       parallelism.*                              ints; 0 = planner chooses
cp, dp, ep, etp                                               (ep/etp: expert parallel, MoE)
sharding           parallelism.sharding                       "ddp", "zero1", "zero2", "fsdp", "hsdp"
shard_group        parallelism.shard_group                    HSDP shard group size
micro_batch        parallelism.micro_batch
recompute          parallelism.recompute                      "none", "selective", "full"
recompute_modules  parallelism.recompute_modules              ["mla_up_proj", "moe_act"] or
                                                              "mla_up_proj,moe_act" (selective)
sequence_parallel  parallelism.sequence_parallel              bool
framework          framework                                  "megatron", "torchtitan", ...
framework_version  stack.version                              "24.09"; unset = its defaults
tp_comm_overlap,   stack.*                                    bool; None = the framework's
dp_overlap,                                                   default
cuda_graphs,
compiled,
fused_dispatch,                                               (MoE: DeepEP/HybridEP dispatcher)
ep_comm_overlap,                                              (MoE: all-to-all overlapped)
bf16_grads                                                    (gradients reduced in bf16)
fp8_recipe         stack.fp8_recipe                           "delayed", "tensorwise", ...
attention_kernel   stack.attention_kernel                     "fa2", "fa3", "cudnn", ...
calibration        calibration                                profile name
label              label                                      echoed back
=================  =========================================  ==========================

Enum values also accept the proto's full names ("PRECISION_BF16") and numbers.
"""

from __future__ import annotations

import math
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
    "head_dim": ("workload.model.head_dim", "int"),
    "mtp_layers": ("workload.model.mtp_layers", "int"),
    "hf_config_json": ("workload.model.hf_config_json", "str"),
    "tie_embeddings": ("workload.model.tie_embeddings", "bool"),
    "moe": ("workload.model.moe", "message"),
    "mla": ("workload.model.mla", "message"),
    "num_experts": ("workload.model.moe.num_experts", "int"),
    "experts_per_token": ("workload.model.moe.experts_per_token", "int"),
    "expert_ffn_hidden": ("workload.model.moe.expert_ffn_hidden", "int"),
    "shared_experts": ("workload.model.moe.shared_experts", "int"),
    "shared_ffn_hidden": ("workload.model.moe.shared_ffn_hidden", "int"),
    "dense_layers": ("workload.model.moe.dense_layers", "int"),
    "capacity_factor": ("workload.model.moe.capacity_factor", "float"),
    "force_balance": ("workload.model.moe.force_balance", "bool"),
    "expert_bias": ("workload.model.moe.expert_bias", "bool"),
    "latent_size": ("workload.model.moe.latent_size", "int"),
    "router_groups": ("workload.model.moe.router_groups", "int"),
    "router_group_topk": ("workload.model.moe.router_group_topk", "int"),
    "q_lora_rank": ("workload.model.mla.q_lora_rank", "int"),
    "kv_lora_rank": ("workload.model.mla.kv_lora_rank", "int"),
    "qk_nope_head_dim": ("workload.model.mla.qk_nope_head_dim", "int"),
    "qk_rope_head_dim": ("workload.model.mla.qk_rope_head_dim", "int"),
    "v_head_dim": ("workload.model.mla.v_head_dim", "int"),
    "attention_window": ("workload.model.attention_window", "int"),
    "full_attention_every": ("workload.model.full_attention_every", "int"),
    "layer_pattern": ("workload.model.layer_pattern", "str"),
    "mamba_heads": ("workload.model.mamba_heads", "int"),
    "mamba_head_dim": ("workload.model.mamba_head_dim", "int"),
    "mamba_state": ("workload.model.mamba_state", "int"),
    "mamba_groups": ("workload.model.mamba_groups", "int"),
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
    "ep": ("parallelism.ep", "int"),
    "etp": ("parallelism.etp", "int"),
    "sharding": ("parallelism.sharding", "SHARDING"),
    "shard_group": ("parallelism.shard_group", "int"),
    "micro_batch": ("parallelism.micro_batch", "int"),
    "recompute": ("parallelism.recompute", "RECOMPUTE"),
    "recompute_modules": ("parallelism.recompute_modules", "strlist"),
    "sequence_parallel": ("parallelism.sequence_parallel", "obool"),
    "framework": ("framework", "str"),
    "framework_version": ("stack.version", "str"),
    "tp_comm_overlap": ("stack.tp_comm_overlap", "obool"),
    "dp_overlap": ("stack.dp_overlap", "obool"),
    "fp8_recipe": ("stack.fp8_recipe", "str"),
    "attention_kernel": ("stack.attention_kernel", "str"),
    "cuda_graphs": ("stack.cuda_graphs", "obool"),
    "compiled": ("stack.compiled", "obool"),
    "fused_dispatch": ("stack.fused_dispatch", "obool"),
    "ep_comm_overlap": ("stack.ep_comm_overlap", "obool"),
    "bf16_grads": ("stack.bf16_grads", "obool"),
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
    if isinstance(value, list):  # a repeated field is replaced in place
        field = getattr(msg, leaf)
        del field[:]
        field.extend(value)
        return
    setattr(msg, leaf, value)


def _get(msg: Message, dotted: str) -> Any:
    for p in dotted.split("."):
        msg = getattr(msg, p)
    return msg


def _coerce(kind: str, value: Any, path: str) -> Any:
    if kind == "strlist":  # a list of names, or one string of them separated by commas
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise _bad(path, f"{value!r} is not a list of strings")
        return list(value)
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
        if not math.isfinite(value):
            raise _bad(path, f"{value!r} is not a finite number")
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
        if canon == "model" and hasattr(value, "to_proto"):  # a ModelSpec: the whole shape
            value.to_proto(_get(scenario, "workload.model"))
            continue
        if kind == "message":  # a MoeSpec / MlaSpec dataclass
            if not hasattr(value, "to_proto"):
                raise _bad(f"{path}.{dotted}", f"{value!r} is not a {canon.capitalize()}Spec")
            value.to_proto(_get(scenario, dotted))
            continue
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
        if kind == "message":  # its fields appear flat (num_experts, kv_lora_rank, ...)
            continue
        v = _get(scenario, dotted)
        if kind == "obool":  # optional: False when set is a choice, not a blank
            parent, _, leaf = dotted.rpartition(".")
            if _get(scenario, parent).HasField(leaf):
                out[key] = v
        elif kind in _ENUMS:
            if v:
                out[key] = enum_name(kind, v)
        elif kind == "strlist":
            if len(v):
                out[key] = list(v)
        elif v:
            out[key] = v
    return out
