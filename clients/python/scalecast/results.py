"""Typed results: plain dataclasses mirroring the scalecast.v1 messages.

Enums come back as lower-case names ("fsdp", "selective"; "" = unspecified). Every result keeps
the message it was made from in ``raw`` (not shown in repr, not compared).
"""

from __future__ import annotations

import datetime as _dt
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from ._proto import options_pb, pb
from .scenario import FieldDescriptor, _enum_prefix, enum_name, enum_value, scenario_to_dict


_RECOMPUTE_SHORT = {"selective": "sel"}

# The dataclass of each scenario message (Layout, ModelSpec, MoeSpec, MlaSpec) by message name.
_SPECS: dict[str, Any] = {}


def _spec_type(f: Any) -> tuple[str, Any]:
    """A field's Python type (as an annotation) and default: enums are their lower-case names,
    messages their dataclass (None = absent), lists tuples."""
    if f.label == FieldDescriptor.LABEL_REPEATED:
        return "tuple[str, ...]", ()
    if f.message_type is not None:
        return f"Optional[{f.message_type.name}]", None
    if f.enum_type is not None or f.type == FieldDescriptor.TYPE_STRING:
        return "str", ""
    if f.type == FieldDescriptor.TYPE_BOOL:
        return "bool", False
    if f.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return "float", 0.0
    return "int", 0


def _from_message(message: str, path: str, required: tuple[str, ...] = ()) -> Any:
    """Class decorator: a frozen dataclass whose attributes are the fields of scalecast.v1.<message>
    that the proto marks with (scalecast.v1.field) (the scenario keywords), read from the
    descriptor when this module is imported: same names, declaration order (those in `required`
    first, without a default), then the class's own attributes. A field added to the proto needs
    no line here. `path` names the message in errors ("model")."""
    def wrap(cls: Any) -> Any:
        desc = pb.DESCRIPTOR.message_types_by_name[message]
        fields = [f for f in desc.fields if f.GetOptions().HasExtension(options_pb.field)]
        fields.sort(key=lambda f: f.name not in required)  # stable: declaration order otherwise
        own = cls.__dict__.get("__annotations__", {})
        annotations = {}
        helps = []
        for f in fields:
            annotations[f.name], default = _spec_type(f)
            if f.name not in required:
                setattr(cls, f.name, default)
            helps.append(f"    {f.name}: {f.GetOptions().Extensions[options_pb.field].help}")
        cls.__annotations__ = {**annotations, **own}
        cls._fields = tuple(fields)
        cls._path = path
        cls.__doc__ = (cls.__doc__ or "") + "\n\n    Fields (the proto's help):\n" + "\n".join(helps)
        _SPECS[message] = dataclass(frozen=True)(cls)
        return _SPECS[message]
    return wrap


class _Spec:
    """from_proto / to_proto for the _from_message dataclasses, field by field by the
    descriptor."""

    @classmethod
    def _values_from_proto(cls, m: Any) -> dict[str, Any]:
        out = {}
        for f in cls._fields:
            v = getattr(m, f.name)
            if f.label == FieldDescriptor.LABEL_REPEATED:
                v = tuple(v)
            elif f.message_type is not None:
                v = _SPECS[f.message_type.name].from_proto(v) if m.HasField(f.name) else None
            elif f.enum_type is not None:
                v = enum_name(_enum_prefix(f.enum_type), v)
            out[f.name] = v
        return out

    @classmethod
    def from_proto(cls, m: Any) -> Any:
        return cls(**cls._values_from_proto(m))

    def to_proto(self, out: Any = None) -> Any:
        """The scalecast.v1 message with these fields (into `out` when given); a message field
        None is left absent, as a dense model's moe and mla are on the wire."""
        if out is None:
            out = getattr(pb, type(self)._fields[0].containing_type.name)()
        for f in type(self)._fields:
            v = getattr(self, f.name)
            if f.label == FieldDescriptor.LABEL_REPEATED:
                del getattr(out, f.name)[:]
                getattr(out, f.name).extend(v)
            elif f.message_type is not None:
                if v is not None:
                    v.to_proto(getattr(out, f.name))
            elif f.enum_type is not None:
                setattr(out, f.name,
                        enum_value(_enum_prefix(f.enum_type), v, f"{self._path}.{f.name}"))
            else:
                setattr(out, f.name, v)
        return out


@_from_message("Parallelism", "parallelism")
class Layout(_Spec):
    """A parallel layout (scalecast.v1.Parallelism); 0/"" = left to the planner."""

    @property
    def gpus(self) -> int:
        """tp * pp * cp * dp (0 when a degree is unset)."""
        return self.tp * self.pp * self.cp * self.dp

    def __str__(self) -> str:
        """The CLI's notation (see its glossary): ``tp2 pp4 vpp4 cp2 dp64 ep8 etp2 zero1 mb1 rc=none
        sp``; vpp, cp, ep and etp only above 1, a two-level context parallelism's all-to-all group
        (``a2a4``), hsdp with its group (``hsdp8``), rc=none|sel|full,
        full on N layers of each stage (``rc=full:4``), or the selective modules joined by +
        (``rc=mla_up_proj+moe_act``)."""
        parts = [f"tp{self.tp}", f"pp{self.pp}"]
        if self.vpp > 1:
            parts.append(f"vpp{self.vpp}")
        if self.cp > 1:
            parts.append(f"cp{self.cp}")
        if self.cp_a2a:
            parts.append(f"a2a{self.cp_a2a}")
        if self.dp:
            parts.append(f"dp{self.dp}")
        if self.ep > 1:
            parts.append(f"ep{self.ep}")
        if self.etp > 1:
            parts.append(f"etp{self.etp}")
        if self.sharding:
            group = self.shard_group if self.sharding == "hsdp" and self.shard_group else ""
            parts.append(f"{self.sharding}{group}")
        if self.micro_batch:
            parts.append(f"mb{self.micro_batch}")
        if self.recompute_modules:
            parts.append("rc=" + "+".join(self.recompute_modules))
        elif self.recompute_layers:
            parts.append(f"rc=full:{self.recompute_layers}")
        elif self.recompute:
            parts.append("rc=" + _RECOMPUTE_SHORT.get(self.recompute, self.recompute))
        if self.cpu_offload_layers:
            parts.append(f"offload:{self.cpu_offload_layers}")
        if self.sequence_parallel:
            parts.append("sp")
        return " ".join(parts)

    def as_kwargs(self) -> dict[str, Any]:
        """Scenario keywords for this layout (unset fields left out)."""
        return {k: v for k, v in self.__dict__.items() if v}


@dataclass(frozen=True)
class CommTime:
    """One kind of communication in a step: `kind` is a value of the proto's CommKind enum, in
    lower case without its prefix ("dp_allgather", "ep_alltoall", ...)."""
    kind: str
    total_s: float
    exposed_s: float
    bytes_per_gpu: int
    ranks: int


@dataclass(frozen=True)
class TimeBreakdown:
    """Seconds per optimizer step on the critical path."""
    compute_s: float
    recompute_s: float
    pipeline_bubble_s: float
    optimizer_s: float
    comm: list[CommTime]

    @property
    def exposed_comm_s(self) -> float:
        return sum(c.exposed_s for c in self.comm)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU at peak."""
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    other_bytes: int
    total_bytes: int
    capacity_bytes: int
    fits: bool
    host_bytes: int = 0  # activations offloaded to host memory (cpu_offload_layers)
    host_capacity_bytes: int = 0

    @property
    def total_gib(self) -> float:
        return self.total_bytes / 2**30


@dataclass(frozen=True)
class PowerEstimate:
    watts_per_gpu: float
    cluster_kw: float
    joules_per_token: float


@dataclass(frozen=True)
class Uncertainty:
    """A band on tokens/s per GPU: ``level`` (0.8) of runs like this one fall in [low, high]."""
    low: float
    high: float
    level: float
    basis: str  # in words: "calibrated: 85 runs of nemo on h100" / "extrapolated: ..."

    def __str__(self) -> str:
        return f"{self.low:,.1f}-{self.high:,.1f} tokens/s per GPU ({self.level:.0%} band)"


@dataclass(frozen=True)
class Prediction:
    label: str
    layout: Layout
    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float  # fraction
    hfu: float  # fraction
    model_tflops_per_gpu: float
    time: TimeBreakdown
    memory: MemoryBreakdown
    power: PowerEstimate
    warnings: list[str]
    model_version: str = ""  # set by predict()
    calibration: str = ""    # the profile used; set by predict()
    uncertainty: Optional[Uncertainty] = None  # None when the server sent no band
    # The scenario as the server resolved it (preset shape, precision, node size and network
    # filled in), in the flat keyword form of scalecast.scenario; {} from an older server.
    scenario: dict[str, Any] = field(default_factory=dict)
    raw: Any = field(default=None, repr=False, compare=False)

    @property
    def gpus(self) -> int:
        return self.layout.gpus

    @property
    def fits(self) -> bool:
        return self.memory.fits

    @classmethod
    def from_proto(cls, p: Any, model_version: str = "", calibration: str = "",
                   scenario: Any = None) -> "Prediction":
        t, m, w, u = p.time, p.memory, p.power, p.uncertainty
        band = (Uncertainty(u.low, u.high, u.level, u.basis)
                if p.HasField("uncertainty") and u.level > 0 else None)
        return cls(
            label=p.label, layout=Layout.from_proto(p.layout), step_time_s=p.step_time_s,
            tokens_per_s=p.tokens_per_s, tokens_per_s_per_gpu=p.tokens_per_s_per_gpu,
            mfu=p.mfu, hfu=p.hfu, model_tflops_per_gpu=p.model_tflops_per_gpu,
            time=TimeBreakdown(
                compute_s=t.compute_s, recompute_s=t.recompute_s,
                pipeline_bubble_s=t.pipeline_bubble_s, optimizer_s=t.optimizer_s,
                comm=[CommTime(c.kind, c.total_s, c.exposed_s, c.bytes_per_gpu, c.ranks)
                      for c in t.comm]),
            memory=MemoryBreakdown(
                weights_bytes=m.weights_bytes, gradients_bytes=m.gradients_bytes,
                optimizer_bytes=m.optimizer_bytes, activations_bytes=m.activations_bytes,
                other_bytes=m.other_bytes, total_bytes=m.total_bytes,
                capacity_bytes=m.capacity_bytes, fits=m.fits, host_bytes=m.host_bytes,
                host_capacity_bytes=m.host_capacity_bytes),
            power=PowerEstimate(w.watts_per_gpu, w.cluster_kw, w.joules_per_token),
            warnings=list(p.warnings), model_version=model_version, calibration=calibration,
            uncertainty=band,
            scenario=scenario_to_dict(scenario) if scenario is not None else {}, raw=p)


@dataclass(frozen=True)
class Delta:
    """One scenario against the first of a comparison."""
    throughput_ratio: float
    per_gpu_throughput_ratio: float
    scaling_efficiency: float
    watts_per_gpu_ratio: float
    joules_per_token_ratio: float
    mfu_delta: float

    @classmethod
    def from_proto(cls, d: Any) -> "Delta":
        return cls(d.throughput_ratio, d.per_gpu_throughput_ratio, d.scaling_efficiency,
                   d.watts_per_gpu_ratio, d.joules_per_token_ratio, d.mfu_delta)


@dataclass(frozen=True)
class Comparison:
    predictions: list[Prediction]  # each with its resolved .scenario
    deltas: list[Delta]  # deltas[i]: predictions[i] against predictions[0]
    model_version: str


@dataclass(frozen=True)
class SweepProgress:
    gpu_count: int
    evaluated_count: int
    total_count: int

    @property
    def fraction(self) -> float:
        return self.evaluated_count / self.total_count if self.total_count else 0.0


@dataclass(frozen=True)
class SweepResult:
    gpu_count: int
    best: Optional[Prediction]  # None when no layout fits
    top: list[Prediction]       # top_k, best first
    evaluated_count: int
    infeasible_count: int
    infeasible_reasons: dict[str, int]
    cached: bool

    @classmethod
    def from_proto(cls, r: Any) -> "SweepResult":
        scenario = r.scenario if r.HasField("scenario") else None
        return cls(
            gpu_count=r.gpu_count,
            best=Prediction.from_proto(r.best, scenario=scenario) if r.HasField("best") else None,
            top=[Prediction.from_proto(p, scenario=scenario) for p in r.top],
            evaluated_count=r.evaluated_count, infeasible_count=r.infeasible_count,
            infeasible_reasons={x.reason: x.count for x in r.infeasible_reasons},
            cached=r.cached)


@dataclass(frozen=True)
class PlanOption:
    """One accelerator at one GPU count in a plan: its best layout and batch, and what the
    training run would take (model/goodput.h: interruptions and checkpoints included)."""
    accelerator: str
    gpus: int
    candidate: int          # index into the request's candidates
    global_batch: int       # sequences per step chosen
    prediction: Prediction  # the step (its .scenario is the resolved one)
    days: float             # wall clock
    goodput: float          # useful time / wall clock
    gpu_hours: float
    energy_mwh: float
    cost: float
    facility_kw: float
    meets_constraints: bool
    violations: list[str]
    pareto: bool
    smallest: bool          # its accelerator's smallest count meeting the constraints
    top: bool
    mtbf_s: float
    checkpoint_interval_s: float
    checkpoint_write_s: float

    @classmethod
    def from_proto(cls, o: Any) -> "PlanOption":
        g = o.goodput_detail
        return cls(
            accelerator=o.accelerator, gpus=o.num_gpus, candidate=o.candidate,
            global_batch=o.scenario.workload.global_batch,
            prediction=Prediction.from_proto(o.prediction, scenario=o.scenario), days=o.days,
            goodput=o.goodput, gpu_hours=o.gpu_hours, energy_mwh=o.energy_mwh, cost=o.cost,
            facility_kw=o.facility_kw, meets_constraints=o.meets_constraints,
            violations=list(o.violations), pareto=o.pareto, smallest=o.smallest, top=o.top,
            mtbf_s=g.mtbf_s, checkpoint_interval_s=g.checkpoint_interval_s,
            checkpoint_write_s=g.checkpoint_write_s)


@dataclass(frozen=True)
class PlanDoubling:
    """Going from from_gpus to twice as many on one accelerator."""
    accelerator: str
    from_gpus: int
    to_gpus: int
    speedup: float             # days(from) / days(to); 2 = perfect
    extra_cost: float          # GPU-hours when the plan is unpriced
    cost_per_day_saved: float


@dataclass(frozen=True)
class PlanProgress:
    evaluated_count: int  # GPU counts searched or skipped so far
    total_count: int


@dataclass(frozen=True)
class Plan:
    """The answer of Client.plan(): options ranked (meeting the constraints first, then cost or
    GPU-hours, then days), the doublings, and the defaults the server used (``warnings``)."""
    options: list[PlanOption]
    doublings: list[PlanDoubling]
    warnings: list[str]
    ranked_by_cost: bool
    gpu_counts_evaluated: int
    gpu_counts_total: int
    layouts_evaluated: int
    layouts_total: int

    @property
    def pareto(self) -> list[PlanOption]:
        return sorted((o for o in self.options if o.pareto), key=lambda o: o.days)

    def smallest(self, accelerator: Optional[str] = None) -> Optional[PlanOption]:
        """The smallest cluster meeting the constraints (of one accelerator, or of any)."""
        found = [o for o in self.options
                 if o.smallest and (accelerator is None or o.accelerator == accelerator)]
        return min(found, key=lambda o: (o.gpus, o.cost), default=None)

    @classmethod
    def from_proto(cls, r: Any) -> "Plan":
        return cls(
            options=[PlanOption.from_proto(o) for o in r.options],
            doublings=[PlanDoubling(d.accelerator, d.from_gpus, d.to_gpus, d.speedup,
                                    d.extra_cost, d.cost_per_day_saved) for d in r.doublings],
            warnings=list(r.warnings), ranked_by_cost=r.ranked_by_cost,
            gpu_counts_evaluated=r.stats.gpu_counts_evaluated,
            gpu_counts_total=r.stats.gpu_counts_total,
            layouts_evaluated=r.stats.layouts_evaluated, layouts_total=r.stats.layouts_total)


@dataclass(frozen=True)
class Measurement:
    """A stored measured run. ``scenario`` is in the flat keyword form (see scalecast.scenario)."""
    id: str
    scenario: dict[str, Any]
    tokens_per_s_per_gpu: float
    step_time_s: float = 0.0
    watts_per_gpu: float = 0.0
    source: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    recorded_at: Optional[_dt.datetime] = None
    raw: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_proto(cls, m: Any) -> "Measurement":
        at = None
        if m.HasField("recorded_at"):
            at = m.recorded_at.ToDatetime().replace(tzinfo=_dt.timezone.utc)
        return cls(id=m.id, scenario=scenario_to_dict(m.scenario),
                   tokens_per_s_per_gpu=m.tokens_per_s_per_gpu, step_time_s=m.step_time_s,
                   watts_per_gpu=m.watts_per_gpu, source=m.source, labels=dict(m.labels),
                   recorded_at=at, raw=m)


@dataclass(frozen=True)
class ErrorStats:
    count: int
    mape: float        # fraction
    median_ape: float  # fraction

    @classmethod
    def from_proto(cls, e: Any) -> "ErrorStats":
        return cls(e.count, e.mape, e.median_ape)


@dataclass(frozen=True)
class ValidationRow:
    measurement_id: str
    label: str
    framework: str
    accelerator: str
    predicted_tokens_per_s_per_gpu: float
    measured_tokens_per_s_per_gpu: float
    error: float  # predicted / measured - 1
    layout: Layout
    failure: str

    @classmethod
    def from_proto(cls, r: Any) -> "ValidationRow":
        return cls(r.measurement_id, r.label, r.framework, r.accelerator,
                   r.predicted_tokens_per_s_per_gpu, r.measured_tokens_per_s_per_gpu, r.error,
                   Layout.from_proto(r.layout), r.failure)


def _largest_first(groups: Any) -> dict[str, ErrorStats]:
    """A by_source/by_label map, most runs first (ties: by name), as the server ranks them."""
    return {k: ErrorStats.from_proto(e)
            for k, e in sorted(groups.items(), key=lambda kv: (-kv[1].count, kv[0]))}


@dataclass(frozen=True)
class Validation:
    """The model's error on stored runs (ValidateResponse).

    ``by_source`` is keyed by measurement source; ``by_label`` by ``"key=value"`` for each
    measurement label (a run counts once in each of its labels' groups). The server sends at most
    the 100 groups of each with the most runs, most runs first here; ``by_source_omitted_count``
    and ``by_label_omitted_count`` say how many groups it left out."""
    overall: ErrorStats
    by_accelerator: dict[str, ErrorStats]
    by_framework: dict[str, ErrorStats]
    rows: list[ValidationRow]
    failed_count: int
    calibration: str
    model_version: str
    by_source: dict[str, ErrorStats] = field(default_factory=dict)
    by_label: dict[str, ErrorStats] = field(default_factory=dict)
    by_source_omitted_count: int = 0
    by_label_omitted_count: int = 0
    # With a stored calibration: its drift in words (CalibrationProfile.drift), "" when none.
    profile_drift: str = ""

    @classmethod
    def from_proto(cls, v: Any) -> "Validation":
        return cls(
            overall=ErrorStats.from_proto(v.overall),
            by_accelerator={k: ErrorStats.from_proto(e) for k, e in sorted(v.by_accelerator.items())},
            by_framework={k: ErrorStats.from_proto(e) for k, e in sorted(v.by_framework.items())},
            rows=[ValidationRow.from_proto(r) for r in v.rows], failed_count=v.failed_count,
            calibration=v.calibration, model_version=v.model_version,
            by_source=_largest_first(v.by_source), by_label=_largest_first(v.by_label),
            by_source_omitted_count=v.by_source_omitted_count,
            by_label_omitted_count=v.by_label_omitted_count, profile_drift=v.profile_drift)


@dataclass(frozen=True)
class ParameterChange:
    """One parameter a calibration layer changed over its base profile, and the runs behind it."""
    key: str          # e.g. "accel.h100.gemm_eff"
    old_value: float  # the base profile's value
    new_value: float
    runs: int         # runs whose prediction the parameter moves
    evidence: str     # which runs, in words

    @classmethod
    def from_proto(cls, c: Any) -> "ParameterChange":
        return cls(c.key, c.old_value, c.new_value, c.runs, c.evidence)


@dataclass(frozen=True)
class CalibrationProfile:
    """A stored calibration profile: its fitted parameters, what it was fitted on, and its error
    on those runs (fractions): the starting profile's, in-sample after the fit, and
    cross-validated (0 when not asked). A layer names its ``base`` profile and lists only the
    parameters it changed (``changes``)."""
    name: str
    parameters: dict[str, float]
    fitted_on: str
    fitted_count: int
    created_at: Optional[_dt.datetime]
    mape_before: float = 0.0
    mape_after: float = 0.0
    cross_validated_mape: float = 0.0
    base: str = ""
    changes: tuple[ParameterChange, ...] = ()
    # Set when Calibrate declined: the profile is ``base`` unchanged, stored under the name.
    declined_reason: str = ""
    # Runs of its filter stored since it was fitted: how many, their median measured /
    # predicted, and in words when outside its 80 % band (else "").
    drift: str = ""
    drift_runs: int = 0
    drift_ratio: float = 1.0

    @classmethod
    def from_proto(cls, p: Any) -> "CalibrationProfile":
        at = (p.created_at.ToDatetime().replace(tzinfo=_dt.timezone.utc)
              if p.HasField("created_at") else None)
        return cls(p.name, dict(sorted(p.parameters.items())), p.fitted_on, p.fitted_count, at,
                   p.mape_before, p.mape_after, p.cross_validated_mape, p.base,
                   tuple(ParameterChange.from_proto(c) for c in p.changes), p.declined_reason,
                   p.drift, p.drift_runs, p.drift_ratio if p.drift_runs else 1.0)


@dataclass(frozen=True)
class Calibration:
    """What Calibrate did: whether the layer was taken (``accepted``) and why (``reason``); the
    error on the fitted runs before and after, in sample and held out (leave-one-out); and on
    the other stored runs (``others_*``; an even sample when ``others_sampled``), and the stored
    runs left out of those checks because the model cannot evaluate them (``others_skipped``, the
    first 10 named, ``others_skipped_count`` in all)."""
    profile: CalibrationProfile
    before: ErrorStats  # the starting profile on the same runs
    after: ErrorStats   # in-sample
    cross_validated_mape: float  # 0 when not asked
    cross_validated: dict[str, ErrorStats]
    accepted: bool = True
    reason: str = ""
    held_out_before: Optional[ErrorStats] = None
    held_out_after: Optional[ErrorStats] = None
    validated: bool = False
    others_before: Optional[ErrorStats] = None
    others_after: Optional[ErrorStats] = None
    others_stored: int = 0
    others_sampled: bool = False
    others_skipped: tuple[str, ...] = ()
    others_skipped_count: int = 0

    @classmethod
    def from_proto(cls, c: Any) -> "Calibration":
        return cls(
            profile=CalibrationProfile.from_proto(c.profile),
            before=ErrorStats.from_proto(c.before), after=ErrorStats.from_proto(c.after),
            cross_validated_mape=c.cross_validated_mape,
            cross_validated={k: ErrorStats.from_proto(e) for k, e in sorted(c.cross_validated.items())},
            accepted=c.accepted, reason=c.reason,
            held_out_before=ErrorStats.from_proto(c.held_out_before),
            held_out_after=ErrorStats.from_proto(c.held_out_after), validated=c.validated,
            others_before=ErrorStats.from_proto(c.others_before),
            others_after=ErrorStats.from_proto(c.others_after), others_stored=c.others_stored,
            others_sampled=c.others_sampled, others_skipped=tuple(c.others_skipped),
            others_skipped_count=c.others_skipped_count)


@dataclass(frozen=True)
class Accelerator:
    id: str
    name: str
    family: str
    peak_tflops: dict[str, float]  # dense, by precision name
    hbm_bytes: float
    hbm_bytes_per_s: float
    tdp_watts: float
    power_limit_watts: float
    idle_watts: float
    gpus_per_node: int
    nvlink_domain: int
    nvlink_bytes_per_s: float
    network_gbps_per_gpu: float
    origin: str = "catalog"  # "catalog" or "registered"
    like: str = ""           # a registered part: the catalog part whose efficiencies it uses
    like_basis: str = ""     # why, when they are borrowed from other silicon

    @classmethod
    def from_proto(cls, a: Any) -> "Accelerator":
        return cls(a.id, a.name, a.family, dict(a.peak_tflops), a.hbm_bytes, a.hbm_bytes_per_s,
                   a.tdp_watts, a.power_limit_watts, a.idle_watts, a.gpus_per_node,
                   a.nvlink_domain, a.nvlink_bytes_per_s, a.network_gbps_per_gpu,
                   a.origin or "catalog", a.like, a.like_basis)


@dataclass(frozen=True)
class System:
    """A server, cloud instance type or VM size that names a catalog part and its node
    (scalecast.v1.System); a scenario's accelerator may name it."""
    id: str
    name: str
    aliases: tuple[str, ...]
    accelerator: str  # the part's catalog id
    gpus_per_node: int
    network_gbps_per_gpu: float  # between nodes

    @classmethod
    def from_proto(cls, s: Any) -> "System":
        return cls(s.id, s.name, tuple(s.aliases), s.accelerator, s.gpus_per_node,
                   s.network_gbps_per_gpu)


@_from_message("MoeSpec", "model.moe")
class MoeSpec(_Spec):
    """Mixture-of-experts feed-forward layers (scalecast.v1.MoeSpec); num_experts 0 = dense."""


@_from_message("MlaSpec", "model.mla")
class MlaSpec(_Spec):
    """Multi-head latent attention (scalecast.v1.MlaSpec; DeepSeek-V3, Kimi-K2); kv_lora_rank 0 =
    ordinary (grouped-query) attention."""


@_from_message("ModelSpec", "model",
               required=("name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "mlp",
                         "vocab"))
class ModelSpec(_Spec):
    """A model shape (scalecast.v1.ModelSpec) as the server's catalog lists it.

    ``moe`` and ``mla`` are None for a dense model with ordinary attention. ``head_dim`` 0 means
    hidden / heads; ``attention_window`` 0 means every layer attends to the whole sequence, else
    windowed layers see that many tokens and every ``full_attention_every``-th layer is full.
    ``layer_pattern`` (one of "M*-E" per layer: Mamba-2, attention, dense MLP, MoE) and the
    ``mamba_*`` fields describe hybrid models. ``mtp_layers`` counts the multi-token prediction
    modules trained with it (DeepSeek-V3: 1), each a layer and one more pass through the output
    head on the last pipeline stage. ``total_params`` / ``activated_params`` are the
    server's counts (0 = not known; activated = what one token passes through).
    """
    total_params: float = 0.0
    activated_params: float = 0.0

    @classmethod
    def from_hf_config(cls, path: str, name: str = "") -> "ModelSpec":
        """A model given by its Hugging Face config.json: the file's text is sent as is and the
        server maps its keys (those it does not use come back in the prediction's warnings).
        ``name`` is a label; a preset name puts the config's shape over that preset's."""
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        return cls(name, 0, 0, 0, 0, 0, "", 0, hf_config_json=text)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None and self.moe.num_experts > 0

    @classmethod
    def from_proto(cls, m: Any, size: Any = None) -> "ModelSpec":
        return cls(**cls._values_from_proto(m),
                   total_params=size.total_params if size is not None else 0.0,
                   activated_params=size.activated_params if size is not None else 0.0)
