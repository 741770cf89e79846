"""Client: a small typed wrapper over the scalecast.v1.Scalecast gRPC service."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, TypeVar, Union

import grpc
from google.protobuf.message import Message

from ._proto import health_pb, health_pb_grpc, pb, pb_grpc
from .errors import ScalecastError
from .results import (Accelerator, Calibration, CalibrationProfile, Comparison, Delta,
                      Measurement, ModelSpec, Plan, PlanProgress, Prediction, SweepProgress,
                      SweepResult, System, Validation)
from .scenario import SCENARIO_KEYS, accelerator_spec, apply_fields, build_scenario, enum_value

T = TypeVar("T")
ScenarioLike = Union[Mapping[str, Any], Message]
MeasurementLike = Union[Mapping[str, Any], Message, Measurement]

_MAX_MESSAGE_BYTES = 64 << 20  # the server's default --max-message-bytes
_MEASUREMENT_KEYS = {"id", "tokens_per_s_per_gpu", "step_time_s", "watts_per_gpu", "source",
                     "labels", "scenario"}


class Client:
    """A connection to a scalecast server.

    >>> with Client("127.0.0.1:50051") as c:
    ...     p = c.predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=2048, tp=2)

    ``token`` is sent as ``authorization: Bearer <token>`` (writes need it when the server has
    ``--auth-token-file``). ``timeout`` is the default deadline per call, in seconds (None = no
    deadline); every method also takes ``timeout=``. ``tls=True`` uses TLS, with
    ``root_certificates`` (PEM bytes, or a path to a PEM file; None = the system roots).
    Every failed call raises ScalecastError(code, message).
    """

    def __init__(self, address: str = "127.0.0.1:50051", token: Optional[str] = None,
                 timeout: Optional[float] = 60.0, tls: bool = False,
                 root_certificates: Optional[Union[bytes, str, os.PathLike[str]]] = None,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        self.address = address
        self.timeout = timeout
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())
        opts = [("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES), *options]
        if tls or root_certificates is not None:
            roots = root_certificates
            if roots is not None and not isinstance(roots, bytes):
                with open(roots, "rb") as f:
                    roots = f.read()
            creds = grpc.ssl_channel_credentials(root_certificates=roots)
            self._channel = grpc.secure_channel(address, creds, options=opts)
        else:
            self._channel = grpc.insecure_channel(address, options=opts)
        self._stub = pb_grpc.ScalecastStub(self._channel)
        self._health = health_pb_grpc.HealthStub(self._channel)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.address!r})"

    # -- plumbing ----------------------------------------------------------------------------

    def _call(self, method: Callable[..., T], request: Any, timeout: Optional[float]) -> T:
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout,
                          metadata=self._metadata)
        except grpc.RpcError as e:
            raise ScalecastError.from_rpc_error(e) from None

    @staticmethod
    def _split(kwargs: dict[str, Any], what: str) -> dict[str, Any]:
        unknown = set(kwargs) - SCENARIO_KEYS
        if unknown:
            raise TypeError(f"{what}() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        return kwargs

    # -- prediction --------------------------------------------------------------------------

    def predict(self, scenario: Optional[ScenarioLike] = None, *, timeout: Optional[float] = None,
                **fields: Any) -> Prediction:
        """Predicts one scenario. Keywords are Scenario fields (see scalecast.scenario), e.g.
        ``predict(model="llama2-70b", accelerator="h100-sxm-80gb", gpus=2048, tp=2)``;
        ``scenario=`` gives a base (dict or scalecast.v1.Scenario) that keywords override."""
        req = pb.PredictRequest(scenario=build_scenario(scenario, **self._split(fields, "predict")))
        resp = self._call(self._stub.Predict, req, timeout)
        return Prediction.from_proto(resp.prediction, resp.model_version, resp.calibration,
                                     resp.scenario if resp.HasField("scenario") else None)

    def compare(self, scenarios: Iterable[ScenarioLike], *, timeout: Optional[float] = None,
                **common: Any) -> Comparison:
        """Predicts scenarios side by side; each gets a Delta against the first. Keywords are
        Scenario fields shared by all (each scenario's own fields win)."""
        self._split(common, "compare")
        req = pb.CompareRequest()
        for i, s in enumerate(scenarios):
            msg = build_scenario(None, path=f"scenarios[{i}]", **common)
            if isinstance(s, Message):
                msg.MergeFrom(s)
            else:
                merged = build_scenario(s, path=f"scenarios[{i}]")
                msg.MergeFrom(merged)
            req.scenarios.append(msg)
        resp = self._call(self._stub.Compare, req, timeout)
        resolved = (list(resp.scenarios) if len(resp.scenarios) == len(resp.predictions)
                    else [None] * len(resp.predictions))
        return Comparison(predictions=[Prediction.from_proto(p, resp.model_version, scenario=s)
                                       for p, s in zip(resp.predictions, resolved)],
                          deltas=[Delta.from_proto(d) for d in resp.deltas],
                          model_version=resp.model_version)

    def sweep(self, gpu_counts: Optional[Iterable[int]] = None, *, top_k: int = 5,
              objective: str = "throughput", refresh: bool = False, max_layouts: int = 0,
              max_gpu_counts: int = 0, scenario: Optional[ScenarioLike] = None,
              timeout: Optional[float] = None,
              **fields: Any) -> Iterator[Union[SweepProgress, SweepResult]]:
        """Searches layouts over GPU counts. Yields SweepProgress events while the server works and
        one SweepResult per GPU count. The base scenario's blank layout fields are searched.
        ``objective`` is "throughput" (default) or "energy" (joules per token). A repeated
        identical sweep is served from the server's cache (``cached=True``) unless ``refresh``.

        The call starts when iteration starts; leaving the loop early cancels it."""
        req = pb.SweepRequest(
            base=build_scenario(scenario, path="base", **self._split(fields, "sweep")),
            gpu_counts=list(gpu_counts or ()), top_k=top_k,
            objective=enum_value("OBJECTIVE", objective, "objective"),
            limits=pb.SweepLimits(max_layouts=max_layouts, max_gpu_counts=max_gpu_counts),
            refresh=refresh)
        return self._sweep(req, timeout)

    def _sweep(self, req: Any, timeout: Optional[float]) -> Iterator[Union[SweepProgress, SweepResult]]:
        try:
            call = self._stub.Sweep(req, timeout=self.timeout if timeout is None else timeout,
                                    metadata=self._metadata)
        except grpc.RpcError as e:
            raise ScalecastError.from_rpc_error(e) from None
        try:
            for msg in call:
                if msg.HasField("progress"):
                    p = msg.progress
                    yield SweepProgress(p.gpu_count, p.evaluated_count, p.total_count)
                elif msg.HasField("result"):
                    yield SweepResult.from_proto(msg.result)
        except grpc.RpcError as e:
            raise ScalecastError.from_rpc_error(e) from None
        finally:
            call.cancel()  # no-op when the stream already ended

    def sweep_results(self, gpu_counts: Optional[Iterable[int]] = None, **kwargs: Any) -> list[SweepResult]:
        """sweep(), keeping only the results (one per GPU count, in request order)."""
        return [e for e in self.sweep(gpu_counts, **kwargs) if isinstance(e, SweepResult)]

    # -- planning ----------------------------------------------------------------------------

    # A candidate dict's keys: PlanCandidate's fields but its layout (the layout keywords'); the
    # reliability mapping's: Reliability's fields.
    _PLAN_CANDIDATE_KEYS = frozenset(pb.PlanCandidate.DESCRIPTOR.fields_by_name) - {"layout"}
    _RELIABILITY_KEYS = frozenset(pb.Reliability.DESCRIPTOR.fields_by_name)

    def plan(self, tokens: float,
             candidates: Union[Mapping[str, float], Iterable[Union[str, Mapping[str, Any]]]], *,
             gpu_counts: Optional[Iterable[int]] = None, deadline_days: float = 0.0,
             budget: float = 0.0, max_gpus: int = 0, max_power_kw: float = 0.0,
             max_global_batch_tokens: int = 0, reliability: Optional[Mapping[str, float]] = None,
             electricity_price_per_kwh: float = 0.0, pue: float = 0.0, top_k: int = 0,
             scenario: Optional[ScenarioLike] = None,
             progress: Optional[Callable[[PlanProgress], None]] = None,
             timeout: Optional[float] = None, **fields: Any) -> Plan:
        """Time to train on ``tokens`` tokens, cost and failures, across accelerators (the Plan
        call). ``candidates``: {"h100-sxm-80gb": 2.5, ...} (price per GPU-hour), or a list of
        ids (catalog or registered) or of dicts with accelerator, price_per_gpu_hour, gpu_counts,
        gpus_per_node, inter_node_gbps_per_gpu, inter_node_latency_us, accelerator_spec (a described part, as the
        accelerator_spec keyword, which applies to candidates that give none). ``gpu_counts`` applies to candidates that give none; none at all
        = searched (powers of two from 8, NVLink-domain multiples, up to max_gpus or 16,384).
        The workload comes from the scenario keywords (model, seq, precision, framework, ...;
        global_batch 0 = chosen within max_global_batch_tokens); layout keywords (tp, pp, ...)
        fix those fields for every candidate. ``reliability``: interruptions_per_1000_gpu_days,
        restart_s, checkpoint_write_gbps, checkpoint_interval_s (unset = public defaults, named
        in the result's warnings). ``progress`` is called with each PlanProgress."""
        base = build_scenario(scenario, path="scenario", **self._split(fields, "plan"))
        req = pb.PlanRequest(
            workload=base.workload, tokens=float(tokens), framework=base.framework,
            stack=base.stack, calibration=base.calibration,
            electricity_price_per_kwh=electricity_price_per_kwh, pue=pue, top_k=top_k,
            constraints=pb.PlanConstraints(
                deadline_days=deadline_days, budget=budget, max_gpus=max_gpus,
                max_power_kw=max_power_kw, max_global_batch_tokens=int(max_global_batch_tokens)))
        unknown = set(reliability or {}) - self._RELIABILITY_KEYS
        if unknown:
            raise TypeError(f"reliability: unknown field(s): {', '.join(sorted(unknown))}")
        for k, v in (reliability or {}).items():
            setattr(req.reliability, k, float(v))
        items: Iterable[Any] = (
            [{"accelerator": k, "price_per_gpu_hour": v} for k, v in candidates.items()]
            if isinstance(candidates, Mapping) else candidates)
        if isinstance(items, str):
            items = [items]
        for i, c in enumerate(items):
            if isinstance(c, str):
                c = {"accelerator": c}
            if not isinstance(c, Mapping):
                raise TypeError(f"candidates[{i}]: an accelerator id or a dict")
            unknown = set(c) - self._PLAN_CANDIDATE_KEYS
            if unknown:
                raise TypeError(f"candidates[{i}]: unknown field(s): {', '.join(sorted(unknown))}")
            pc = req.candidates.add()
            pc.accelerator = str(c["accelerator"])
            pc.price_per_gpu_hour = float(c.get("price_per_gpu_hour", 0.0) or 0.0)
            pc.gpu_counts.extend(int(g) for g in (c.get("gpu_counts") or gpu_counts or ()))
            pc.gpus_per_node = int(c.get("gpus_per_node", base.cluster.gpus_per_node) or 0)
            pc.inter_node_gbps_per_gpu = float(
                c.get("inter_node_gbps_per_gpu", base.cluster.inter_node_gbps_per_gpu) or 0.0)
            pc.inter_node_latency_us = float(
                c.get("inter_node_latency_us", base.cluster.inter_node_latency_us) or 0.0)
            pc.layout.CopyFrom(base.parallelism)
            if c.get("accelerator_spec") is not None:
                accelerator_spec(c["accelerator_spec"], pc.accelerator_spec,
                                 f"candidates[{i}].accelerator_spec")
            elif base.cluster.HasField("accelerator_spec"):
                pc.accelerator_spec.CopyFrom(base.cluster.accelerator_spec)
        if base.cluster.HasField("hbm_headroom"):
            req.hbm_headroom = base.cluster.hbm_headroom
        try:
            call = self._stub.Plan(req, timeout=self.timeout if timeout is None else timeout,
                                   metadata=self._metadata)
        except grpc.RpcError as e:
            raise ScalecastError.from_rpc_error(e) from None
        last = None
        try:
            for msg in call:
                if len(msg.options) > 0 or not msg.HasField("progress"):
                    last = msg
                elif progress is not None:
                    progress(PlanProgress(msg.progress.evaluated_count, msg.progress.total_count))
        except grpc.RpcError as e:
            raise ScalecastError.from_rpc_error(e) from None
        finally:
            call.cancel()
        return Plan.from_proto(last if last is not None else pb.PlanResponse())

    # -- measurements ------------------------------------------------------------------------

    @staticmethod
    def _measurement(item: MeasurementLike, path: str) -> Any:
        if isinstance(item, Message):
            if item.DESCRIPTOR.full_name != "scalecast.v1.Measurement":
                raise TypeError(f"expected a scalecast.v1.Measurement, got {item.DESCRIPTOR.full_name}")
            return item
        if isinstance(item, Measurement):
            item = {"scenario": item.scenario, "tokens_per_s_per_gpu": item.tokens_per_s_per_gpu,
                    "step_time_s": item.step_time_s, "watts_per_gpu": item.watts_per_gpu,
                    "source": item.source, "labels": item.labels}
        if not isinstance(item, Mapping):
            raise TypeError(f"{path}: a measurement is a dict, a Measurement or a scalecast.v1.Measurement")
        unknown = set(item) - _MEASUREMENT_KEYS - SCENARIO_KEYS
        if unknown:
            raise TypeError(f"{path}: unknown measurement field(s): {', '.join(sorted(unknown))}")
        m = pb.Measurement()
        m.scenario.CopyFrom(build_scenario(item.get("scenario"), path=f"{path}.scenario"))
        apply_fields(m.scenario, {k: v for k, v in item.items() if k in SCENARIO_KEYS},
                     f"{path}.scenario")
        m.tokens_per_s_per_gpu = float(item.get("tokens_per_s_per_gpu", 0.0))
        m.step_time_s = float(item.get("step_time_s", 0.0) or 0.0)
        m.watts_per_gpu = float(item.get("watts_per_gpu", 0.0) or 0.0)
        m.source = str(item.get("source", "") or "")
        for k, v in (item.get("labels") or {}).items():
            m.labels[str(k)] = str(v)
        return m

    def record_measurements(self, measurements: Iterable[MeasurementLike], *,
                            timeout: Optional[float] = None) -> list[str]:
        """Stores measured runs, all or nothing; returns their server-assigned ids.

        Each item is a scalecast.v1.Measurement, a Measurement, or a dict with
        ``tokens_per_s_per_gpu`` (required), optional ``step_time_s``, ``watts_per_gpu``,
        ``source``, ``labels``, and the scenario as flat keywords and/or ``scenario=``."""
        req = pb.RecordMeasurementsRequest(
            measurements=[self._measurement(m, f"measurements[{i}]") for i, m in enumerate(measurements)])
        return list(self._call(self._stub.RecordMeasurements, req, timeout).ids)

    def import_csv(self, path: Union[str, os.PathLike[str]], *, source: str = "",
                   labels: Optional[Mapping[str, str]] = None,
                   timeout: Optional[float] = None) -> list[str]:
        """Sends a measurements CSV (shared/data/README.md's columns) to the server, which reads it
        and records every row in one batch, or none if any row is bad (ScalecastError naming the
        line and column). Returns the ids of the runs stored now (duplicates are not).

        ``source`` is for rows whose source cell is blank; ``labels`` are added to every row."""
        with open(path, "rb") as f:
            csv = f.read()
        req = pb.ImportMeasurementsRequest(csv=csv, source=source, labels=dict(labels or {}))
        return list(self._call(self._stub.ImportMeasurements, req, timeout).ids)

    @staticmethod
    def _filter(accelerator: str, framework: str, source: str,
                labels: Optional[Mapping[str, str]]) -> Any:
        return pb.MeasurementFilter(accelerator=accelerator, framework=framework, source=source,
                                    labels=dict(labels or {}))

    def list_measurements(self, *, accelerator: str = "", framework: str = "", source: str = "",
                          labels: Optional[Mapping[str, str]] = None, page_size: int = 500,
                          timeout: Optional[float] = None) -> Iterator[Measurement]:
        """Stored runs matching the filter, fetched page by page as the iterator advances."""
        token = ""
        while True:
            req = pb.ListMeasurementsRequest(
                filter=self._filter(accelerator, framework, source, labels),
                page_size=page_size, page_token=token)
            resp = self._call(self._stub.ListMeasurements, req, timeout)
            for m in resp.measurements:
                yield Measurement.from_proto(m)
            token = resp.next_page_token
            if not token:
                return

    def count_measurements(self, *, accelerator: str = "", framework: str = "", source: str = "",
                           labels: Optional[Mapping[str, str]] = None,
                           timeout: Optional[float] = None) -> int:
        """How many stored runs match the filter (one small call)."""
        req = pb.ListMeasurementsRequest(filter=self._filter(accelerator, framework, source, labels),
                                         page_size=1)
        return self._call(self._stub.ListMeasurements, req, timeout).total_count

    def delete_measurement(self, id: str, *, timeout: Optional[float] = None) -> None:
        self._call(self._stub.DeleteMeasurement, pb.DeleteMeasurementRequest(id=id), timeout)

    def validate(self, *, accelerator: str = "", framework: str = "", source: str = "",
                 labels: Optional[Mapping[str, str]] = None, calibration: str = "",
                 include_rows: bool = False, timeout: Optional[float] = None) -> Validation:
        """The model's error on the stored runs that match the filter: overall, per accelerator,
        framework, source and label (see Validation for the caps on the last two)."""
        req = pb.ValidateRequest(filter=self._filter(accelerator, framework, source, labels),
                                 calibration=calibration, include_rows=include_rows)
        return Validation.from_proto(self._call(self._stub.Validate, req, timeout))

    def calibrate(self, name: str, *, accelerator: str = "", framework: str = "", source: str = "",
                  labels: Optional[Mapping[str, str]] = None, start_from: str = "",
                  cross_validate: bool = False, replace: bool = False,
                  timeout: Optional[float] = None) -> Calibration:
        """Fits a calibration profile named ``name`` to the stored runs that match the filter and
        stores it (a write: needs the token when the server has one). A name already stored is
        ScalecastError(ALREADY_EXISTS) unless ``replace=True``."""
        req = pb.CalibrateRequest(name=name, filter=self._filter(accelerator, framework, source, labels),
                                  start_from=start_from, cross_validate=cross_validate,
                                  replace=replace)
        return Calibration.from_proto(self._call(self._stub.Calibrate, req, timeout))

    def list_profiles(self, *, timeout: Optional[float] = None) -> list[CalibrationProfile]:
        """The stored calibration profiles, by name (the built-in default is not listed). The
        server sends them a page at a time; every page is read."""
        out: list[CalibrationProfile] = []
        token = ""
        while True:
            resp = self._call(self._stub.ListProfiles, pb.ListProfilesRequest(page_token=token),
                              timeout)
            out.extend(CalibrationProfile.from_proto(p) for p in resp.profiles)
            token = resp.next_page_token
            if not token:
                return out

    def delete_profile(self, name: str, *, timeout: Optional[float] = None) -> None:
        """Deletes the stored profile ``name`` (a write: needs the token when the server has
        one). ScalecastError(NOT_FOUND) when there is no such profile."""
        self._call(self._stub.DeleteProfile, pb.DeleteProfileRequest(name=name), timeout)

    # -- catalog and health ------------------------------------------------------------------

    def accelerators(self, *, timeout: Optional[float] = None) -> list[Accelerator]:
        resp = self._call(self._stub.ListAccelerators, pb.ListAcceleratorsRequest(), timeout)
        return [Accelerator.from_proto(a) for a in resp.accelerators]

    def systems(self, *, timeout: Optional[float] = None) -> list[System]:
        """The servers, cloud instance types and VM sizes an accelerator may name: each a part
        and its node (GPUs a node, network a GPU between nodes)."""
        resp = self._call(self._stub.ListAccelerators, pb.ListAcceleratorsRequest(), timeout)
        return [System.from_proto(s) for s in resp.systems]

    def register_accelerator(self, spec: Any, *, replace: bool = False,
                             timeout: Optional[float] = None) -> Accelerator:
        """Registers an accelerator you describe (a write: needs the token when the server has
        one), shared by every replica through the store. ``spec`` is a dict of AcceleratorSpec
        fields (``id`` required; ``like`` names the catalog part whose fitted efficiencies it
        borrows, "" = the nearest generation; set fields override that part's), the message, or
        the path of a JSON file. Returns the part as resolved. ScalecastError(ALREADY_EXISTS)
        for a registered id unless ``replace=True``; INVALID_ARGUMENT naming the field for a
        bad spec (nothing is stored)."""
        req = pb.RegisterAcceleratorRequest(spec=accelerator_spec(spec), replace=replace)
        return Accelerator.from_proto(self._call(self._stub.RegisterAccelerator, req,
                                                 timeout).accelerator)

    def delete_accelerator(self, id: str, *, timeout: Optional[float] = None) -> None:
        """Deletes a registered accelerator (a write). ScalecastError(NOT_FOUND) when it is not
        registered."""
        self._call(self._stub.DeleteAccelerator, pb.DeleteAcceleratorRequest(id=id), timeout)

    def models(self, *, timeout: Optional[float] = None) -> list[ModelSpec]:
        resp = self._call(self._stub.ListModels, pb.ListModelsRequest(), timeout)
        sizes = list(resp.sizes)
        return [ModelSpec.from_proto(m, sizes[i] if i < len(sizes) else None)
                for i, m in enumerate(resp.models)]

    def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        """grpc.health.v1 status: "SERVING", "NOT_SERVING", ... ("" = the whole server)."""
        resp = self._call(self._health.Check, health_pb.HealthCheckRequest(service=service), timeout)
        return health_pb.HealthCheckResponse.ServingStatus.Name(resp.status)
