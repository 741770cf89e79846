"""Scenario building: flat keyword arguments <-> the scalecast.v1.Scenario message.

Keyword names (all optional; ``None`` = leave unset, i.e. let the preset or the planner choose)
are the Scenario fields the proto marks with ``(scalecast.v1.field)``
(proto/scalecast/v1/options.proto), read from the generated module's descriptors when this
module is imported; the table at the end of this docstring is built the same way. ``model`` also
takes a ModelSpec (from_hf_config: the whole shape); a message keyword (``moe``, ``mla``) takes its
dataclass, the message, a dict of its proto fields or the path of a JSON file holding it.

Enum values also accept the proto's full names ("PRECISION_BF16") and numbers.
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from google.protobuf import descriptor as _fd
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from ._proto import options_pb, pb
from .errors import ScalecastError

FieldDescriptor = _fd.FieldDescriptor


def _enum_prefix(enum: Any) -> str:
    """Mlp -> "MLP": the prefix of its values' names (MLP_UNSPECIFIED, MLP_GATED, ...)."""
    return enum.values_by_number[0].name[:-len("_UNSPECIFIED")]


# Every enum of the API by its values' prefix ("PRECISION" -> pb.Precision).
_ENUMS = {_enum_prefix(e): EnumTypeWrapper(e) for e in pb.DESCRIPTOR.enum_types_by_name.values()}


def _kind(f: Any) -> str:
    if f.label == FieldDescriptor.LABEL_REPEATED:
        return "strlist"
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        return "message"
    if f.type == FieldDescriptor.TYPE_ENUM:
        return _enum_prefix(f.enum_type)
    optional = f.containing_oneof is not None  # proto3 `optional`: set or not is a choice
    if f.type == FieldDescriptor.TYPE_BOOL:
        return "obool" if optional else "bool"
    if f.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return "ofloat" if optional else "float"
    if f.type == FieldDescriptor.TYPE_STRING:
        return "str"
    return "int"


def _collect(desc: Any, prefix: str, fields: dict, aliases: dict, nested: set) -> bool:
    """Every field under `desc` whose (scalecast.v1.field) option makes it a keyword, depth
    first in declaration order; true when any was found."""
    found = False
    for f in desc.fields:
        dotted = prefix + f.name
        options = f.GetOptions()
        if options.HasExtension(options_pb.field):
            ui = options.Extensions[options_pb.field]
            key = ui.kwarg or f.name
            fields[key] = (dotted, _kind(f))
            if ui.alias:
                aliases[ui.alias] = key
            found = True
        if f.type == FieldDescriptor.TYPE_MESSAGE and f.label != FieldDescriptor.LABEL_REPEATED:
            if _collect(f.message_type, dotted + ".", fields, aliases, nested):
                nested.add(dotted)
                found = True
    return found


# keyword -> (dotted field path inside Scenario, kind), from the proto's options
# (proto/scalecast/v1/options.proto); kind is "str", "int", "float", "ofloat", "bool", "obool",
# "strlist", "message" or an enum prefix ("MLP", "PRECISION", "SHARDING", "RECOMPUTE").
_FIELDS: dict[str, tuple[str, str]] = {}
_ALIASES: dict[str, str] = {}
# Messages whose own fields are keywords too (moe: num_experts, ...): flat in scenario_to_dict.
_NESTED: set[str] = set()
_collect(pb.Scenario.DESCRIPTOR, "", _FIELDS, _ALIASES, _NESTED)

SCENARIO_KEYS: frozenset[str] = frozenset(_FIELDS) | frozenset(_ALIASES)


def _keyword_table() -> str:
    aliases = {canon: alias for alias, canon in _ALIASES.items()}
    rows = []
    for key, (dotted, _) in _FIELDS.items():
        *parents, leaf = dotted.split(".")
        desc = pb.Scenario.DESCRIPTOR
        for p in parents:
            desc = desc.fields_by_name[p].message_type
        ui = desc.fields_by_name[leaf].GetOptions().Extensions[options_pb.field]
        name = f"{key} / {aliases[key]}" if key in aliases else key
        rows.append(f"{name:<22} {dotted:<40} {ui.help}".rstrip())
    return "\n".join(rows)


if __doc__:
    __doc__ += "\nKeywords (keyword, Scenario field, help):\n\n" + _keyword_table() + "\n"


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
    if kind in ("float", "ofloat"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(path, f"{value!r} is not a number")
        if not math.isfinite(value):
            raise _bad(path, f"{value!r} is not a finite number")
        return float(value)
    return enum_value(kind, value, path)


def _message(value: Any, out: Any, path: str) -> None:
    """Writes a message-valued keyword into ``out``: an object with ``to_proto`` (MoeSpec,
    MlaSpec), the message itself, a dict of its fields (proto names), or the path of a JSON file
    holding it."""
    name = out.DESCRIPTOR.name
    if hasattr(value, "to_proto"):
        value.to_proto(out)
    elif isinstance(value, Message):
        if value.DESCRIPTOR.full_name != out.DESCRIPTOR.full_name:
            raise _bad(path, f"expected a {out.DESCRIPTOR.full_name}, got {value.DESCRIPTOR.full_name}")
        out.CopyFrom(value)
    elif isinstance(value, (str, os.PathLike)):
        try:
            with open(value, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise _bad(path, f"cannot read {str(value)!r}: {e.strerror}") from None
        try:
            json_format.Parse(text, out)
        except json_format.ParseError as e:
            raise _bad(path, f"{str(value)!r} is not {_article(name)} {name} in JSON: {e}") from None
    elif isinstance(value, Mapping):
        try:
            json_format.ParseDict(dict(value), out)
        except json_format.ParseError as e:
            raise _bad(path, str(e)) from None
    else:
        raise _bad(path, f"{value!r} is not {_article(name)} {name}")


def _article(name: str) -> str:
    return "an" if name[:1] in "AEIOU" else "a"


def accelerator_spec(value: Any, out: Any = None, path: str = "spec") -> Any:
    """An AcceleratorSpec message from a dict of its fields (proto names: id, like,
    peak_tflops_bf16, hbm_gb, ...), the message itself, or the path of a JSON file holding it;
    written into ``out`` when given."""
    out = pb.AcceleratorSpec() if out is None else out
    _message(value, out, path)
    return out


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
        if kind == "message":
            _message(value, _get(scenario, dotted), f"{path}.{dotted}")
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
        if dotted in _NESTED:  # its fields appear flat (num_experts, kv_lora_rank, ...)
            continue
        v = _get(scenario, dotted)
        if kind in ("message", "obool", "ofloat"):  # set or not, whatever the value
            parent, _, leaf = dotted.rpartition(".")
            if _get(scenario, parent).HasField(leaf):
                out[key] = json_format.MessageToDict(v, preserving_proto_field_name=True) \
                    if kind == "message" else v
        elif kind in _ENUMS:
            if v:
                out[key] = enum_name(kind, v)
        elif kind == "strlist":
            if len(v):
                out[key] = list(v)
        elif v:
            out[key] = v
    return out
