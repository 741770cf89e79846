"""Typed results: plain dataclasses mirroring the scalecast.v1 messages.

Enums come back as lower-case names ("fsdp", "selective"; "" = unspecified). Every result keeps
the message it was made from in ``raw`` (not shown in repr, not compared).
"""

from __future__ import annotations

import datetime as _dt
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from .scenario import enum_name, enum_value, scenario_to_dict


_RECOMPUTE_SHORT = {"selective": "sel"}


@dataclass(frozen=True)
class Layout:
    """A parallel layout (scalecast.v1.Parallelism); 0/"" = left to the planner."""
    tp: int = 0
    pp: int = 0
    vpp: int = 0
    cp: int = 0
    dp: int = 0
    sharding: str = ""
    shard_group: int = 0
    micro_batch: int = 0
    recompute: str = ""
    sequence_parallel: bool = False
    ep: int = 0   # expert parallel (MoE): routed experts split over ep ranks
    etp: int = 0  # expert-tensor parallel (MoE): each expert's GEMMs split over etp ranks
    # selective recompute's modules (Megatron-Core names); empty = the framework's policy
    recompute_modules: tuple[str, ...] = ()
    # full recompute on this many layers of each pipeline stage; 0 = every layer
    recompute_layers: int = 0

    @property
    def gpus(self) -> int:
        """tp * pp * cp * dp (0 when a degree is unset)."""
        return self.tp * self.pp * self.cp * self.dp

    def __str__(self) -> str:
        """The CLI's notation (see its glossary): ``tp2 pp4 vpp4 cp2 dp64 ep8 etp2 zero1 mb1 rc=none
        sp``; vpp, cp, ep and etp only above 1, hsdp with its group (``hsdp8``), rc=none|sel|full,
        full on N layers of each stage (``rc=full:4``), or the selective modules joined by +
        (``rc=mla_up_proj+moe_act``)."""
        parts = [f"tp{self.tp}", f"pp{self.pp}"]
        if self.vpp > 1:
            parts.append(f"vpp{self.vpp}")
        if self.cp > 1:
            parts.append(f"cp{self.cp}")
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
        if self.sequence_parallel:
            parts.append("sp")
        return " ".join(parts)

    @classmethod
    def from_proto(cls, p: Any) -> "Layout":
        return cls(tp=p.tp, pp=p.pp, vpp=p.vpp, cp=p.cp, dp=p.dp,
                   sharding=enum_name("SHARDING", p.sharding), shard_group=p.shard_group,
                   micro_batch=p.micro_batch, recompute=enum_name("RECOMPUTE", p.recompute),
                   sequence_parallel=p.sequence_parallel, ep=p.ep, etp=p.etp,
                   recompute_modules=tuple(p.recompute_modules),
                   recompute_layers=p.recompute_layers)

    def as_kwargs(self) -> dict[str, Any]:
        """Scenario keywords for this layout (unset fields left out)."""
        return {k: v for k, v in self.__dict__.items() if v}


@dataclass(frozen=True)
class CommTime:
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
                capacity_bytes=m.capacity_bytes, fits=m.fits),
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


def _plain_names(cls: Any, message: Any) -> list:
    """The plain fields (numbers, bools, strings) of `message`'s type that the dataclass `cls`
    also has, from the descriptor: a field added to both needs no line in from_proto/to_proto."""
    names = {f.name for f in dataclasses.fields(cls)}
    return [f.name for f in message.DESCRIPTOR.fields
            if f.name in names and f.message_type is None and f.enum_type is None
            and f.label != f.LABEL_REPEATED]


def _plain_from_proto(cls: Any, message: Any) -> dict:
    """Those fields' values, as keyword arguments of `cls`."""
    return {name: getattr(message, name) for name in _plain_names(cls, message)}


@dataclass(frozen=True)
class MoeSpec:
    """Mixture-of-experts feed-forward layers (scalecast.v1.MoeSpec); num_experts 0 = dense."""
    num_experts: int = 0          # routed experts per MoE layer
    experts_per_token: int = 0    # top-k
    expert_ffn_hidden: int = 0    # one routed expert's FFN width
    shared_experts: int = 0       # experts every token passes through
    shared_ffn_hidden: int = 0    # their total FFN width; 0 = shared_experts x expert_ffn_hidden
    dense_layers: int = 0         # layers with a dense FFN of ModelSpec.ffn_hidden
    capacity_factor: float = 0.0  # tokens an expert takes / an even share; 0 = dropless
    force_balance: bool = False   # tokens spread evenly over experts (benchmarks); else learned
    expert_bias: bool = False     # the routed experts' linears have biases (GPT-OSS)
    latent_size: int = 0          # latent MoE: the routed experts' width; 0 = hidden
    router_groups: int = 0        # group-limited routing: expert groups (0 = no limit)
    router_group_topk: int = 0    # groups one token's experts come from

    @classmethod
    def from_proto(cls, e: Any) -> "MoeSpec":
        return cls(**_plain_from_proto(cls, e))

    def to_proto(self, out: Any) -> None:
        """Writes the fields into a scalecast.v1.MoeSpec message."""
        for k, v in self.__dict__.items():
            setattr(out, k, v)


@dataclass(frozen=True)
class MlaSpec:
    """Multi-head latent attention (scalecast.v1.MlaSpec; DeepSeek-V3, Kimi-K2); kv_lora_rank 0 =
    ordinary (grouped-query) attention."""
    q_lora_rank: int = 0  # 0 = queries projected directly
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0

    @classmethod
    def from_proto(cls, a: Any) -> "MlaSpec":
        return cls(**_plain_from_proto(cls, a))

    def to_proto(self, out: Any) -> None:
        """Writes the fields into a scalecast.v1.MlaSpec message."""
        for k, v in self.__dict__.items():
            setattr(out, k, v)


@dataclass(frozen=True)
class ModelSpec:
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
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    mlp: str
    vocab: int
    head_dim: int = 0
    moe: Optional[MoeSpec] = None
    mla: Optional[MlaSpec] = None
    attention_window: int = 0
    full_attention_every: int = 0
    layer_pattern: str = ""
    mamba_heads: int = 0
    mamba_head_dim: int = 0
    mamba_state: int = 0
    mamba_groups: int = 0
    mtp_layers: int = 0
    total_params: float = 0.0
    activated_params: float = 0.0
    tie_embeddings: bool = False
    hf_config_json: str = ""

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
        # The plain fields by name from the descriptor; the enum and the messages below.
        return cls(**_plain_from_proto(cls, m), mlp=enum_name("MLP", m.mlp),
                   moe=MoeSpec.from_proto(m.moe) if m.HasField("moe") else None,
                   mla=MlaSpec.from_proto(m.mla) if m.HasField("mla") else None,
                   total_params=size.total_params if size is not None else 0.0,
                   activated_params=size.activated_params if size is not None else 0.0)

    def to_proto(self, out: Any = None) -> Any:
        """A scalecast.v1.ModelSpec with these fields (into `out` when given); moe/mla None are
        left absent, as a dense model's are on the wire."""
        from ._proto import pb
        if out is None:
            out = pb.ModelSpec()
        for k in _plain_names(type(self), out):
            setattr(out, k, getattr(self, k))
        out.mlp = enum_value("MLP", self.mlp, "model.mlp")
        if self.moe is not None:
            self.moe.to_proto(out.moe)
        if self.mla is not None:
            self.mla.to_proto(out.mla)
        return out
