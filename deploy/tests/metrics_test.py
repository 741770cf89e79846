#!/usr/bin/python3
"""Scrapes a real scalecast-server's /metrics after a known set of calls and checks every counter
against the calls made; then `promtool check metrics` must accept the scrape.

Run by ctest (deploy/CMakeLists.txt) with SCALECAST_SERVER_BIN set; by hand:
  SCALECAST_SERVER_BIN=build/server/scalecast-server /usr/bin/python3 deploy/tests/metrics_test.py
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scalecast_testlib as t  # noqa: E402

import grpc  # noqa: E402  (Debian's python3-grpcio)

# go-grpc-prometheus's code names, as the server labels grpc_code.
CODE_NAME = {
    grpc.StatusCode.OK: "OK",
    grpc.StatusCode.CANCELLED: "Canceled",
    grpc.StatusCode.UNKNOWN: "Unknown",
    grpc.StatusCode.INVALID_ARGUMENT: "InvalidArgument",
    grpc.StatusCode.DEADLINE_EXCEEDED: "DeadlineExceeded",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.PERMISSION_DENIED: "PermissionDenied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "ResourceExhausted",
    grpc.StatusCode.FAILED_PRECONDITION: "FailedPrecondition",
    grpc.StatusCode.ABORTED: "Aborted",
    grpc.StatusCode.OUT_OF_RANGE: "OutOfRange",
    grpc.StatusCode.UNIMPLEMENTED: "Unimplemented",
    grpc.StatusCode.INTERNAL: "Internal",
    grpc.StatusCode.UNAVAILABLE: "Unavailable",
    grpc.StatusCode.DATA_LOSS: "DataLoss",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthenticated",
}

failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def eq(got, want, what):
    check(got == want, "%s == %r (got %r)" % (what, want, got))


def close(got, want, what, rel=1e-9):
    ok = got is not None and abs(got - want) <= rel * max(1.0, abs(want))
    check(ok, "%s ~= %r (got %r)" % (what, want, got))


def main():
    work = t.tempdir("scalecast-metrics-test-")
    pb, pb_grpc = t.generate_stubs(work)
    server = t.ScalecastServer(work)
    try:
        try:
            expected_mape = run(server, pb, pb_grpc)
        finally:
            rc = server.stop()
            check(rc == 0, "server exits 0 on SIGTERM (got %r)" % rc)
            if failures:
                print("--- server log ---\n" + server.read_log())
        # Validate alone sets the gauge to Validate's error: a second server on the same store.
        check_validate_gauge(pb, pb_grpc, work, expected_mape)
        # Many sources: the per-source series stay within their bound.
        check_source_series_bound(pb, pb_grpc, os.path.join(work, "bound"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("PASS")


def run(server, pb, pb_grpc):
    ch = t.channel_ready(grpc, server.grpc_address)
    stub = pb_grpc.ScalecastStub(ch)
    S = {"grpc_service": t.SERVICE}

    # Before any call: our own counters exist at zero, build info is 1.
    s0 = t.parse_metrics(t.scrape(server))
    eq(t.value(s0, "scalecast_build_info"), 1.0, "scalecast_build_info")
    check(any(n == "scalecast_build_info" and l.get("version") and l.get("model_version")
              for n, l, _ in s0), "scalecast_build_info has version and model_version labels")
    eq(t.value(s0, "scalecast_predictions_total"), 0.0, "predictions_total at start")
    eq(t.value(s0, "scalecast_sweep_cache_requests_total", result="hit"), 0.0, "cache hits at start")
    eq(t.value(s0, "scalecast_sweep_cache_requests_total", result="miss"), 0.0,
       "cache misses at start")
    eq(t.value(s0, "scalecast_calibration_profiles"), 0.0, "calibration_profiles at start")
    eq(t.value(s0, "grpc_server_started_total", **S), None, "no scalecast RPC started yet")

    # Predict: 3 with a complete layout (answered inline), 1 planner search (on the pool), 2 bad;
    # one more (OK) below, the reference for the measurements: 7 in all, 5 OK.
    ok_predictions = []
    for _ in range(3):
        ok_predictions.append(stub.Predict(pb.PredictRequest(scenario=t.scenario(pb)), timeout=30))
    stub.Predict(pb.PredictRequest(scenario=t.scenario(pb, complete_layout=False)), timeout=30)
    err_codes = []
    for gpus in (0, -8):
        bad = t.scenario(pb, gpus=gpus)
        try:
            stub.Predict(pb.PredictRequest(scenario=bad), timeout=30)
            err_codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as e:
            err_codes.append(e.code())
    check(all(c != grpc.StatusCode.OK for c in err_codes), "bad Predicts fail (%s)" % err_codes)
    err_names = {}
    for c in err_codes:
        err_names[CODE_NAME[c]] = err_names.get(CODE_NAME[c], 0) + 1

    # Sweep twice, the same request: computed, then from the cache.
    sweep_req = pb.SweepRequest(base=t.scenario(pb, complete_layout=False), gpu_counts=[64, 128],
                                top_k=3)
    first = list(stub.Sweep(sweep_req, timeout=60))
    s1 = t.parse_metrics(t.scrape(server))
    second = list(stub.Sweep(sweep_req, timeout=60))
    first_results = [m.result for m in first if m.WhichOneof("kind") == "result"]
    second_results = [m.result for m in second if m.WhichOneof("kind") == "result"]
    eq(len(first_results), 2, "first sweep results")
    eq(len(second_results), 2, "second sweep results")
    check(all(not r.cached for r in first_results), "first sweep computed")
    check(all(r.cached for r in second_results), "second sweep cached")

    stub.ListAccelerators(pb.ListAcceleratorsRequest(), timeout=30)

    # Measurements at known ratios to the prediction: the model's error is known exactly.
    # The reference prediction for the measured scenario (the framework changes the prediction).
    ref = stub.Predict(pb.PredictRequest(scenario=t.scenario(pb, framework="megatron")), timeout=30)
    predicted = ref.prediction.tokens_per_s_per_gpu
    # One stack ~18 % slower than predicted: Calibrate's few-shot rule takes a layer from them
    # (runs that contradicted each other would store none).
    factors = [0.8, 0.82, 0.84]
    ms = []
    for f in factors:
        m = pb.Measurement(scenario=t.scenario(pb, framework="megatron"),
                           tokens_per_s_per_gpu=predicted * f, source="deploy-metrics-test")
        ms.append(m)
    rec = stub.RecordMeasurements(pb.RecordMeasurementsRequest(measurements=ms), timeout=30)
    eq(rec.recorded_count, len(factors), "recorded_count")
    val = stub.Validate(pb.ValidateRequest(), timeout=30)
    eq(val.failed_count, 0, "Validate failed_count")
    expected_mape = sum(abs(1.0 / f - 1.0) for f in factors) / len(factors)
    cal = stub.Calibrate(pb.CalibrateRequest(name="deploy-test"), timeout=60)
    eq(cal.profile.name, "deploy-test", "calibrated profile name")

    text = t.scrape(server)
    s = t.parse_metrics(text)

    # gRPC server metrics.
    P = dict(S, grpc_method="Predict", grpc_type="unary")
    eq(t.value(s, "grpc_server_started_total", **P), 7.0, "started_total{Predict}")
    eq(t.value(s, "grpc_server_handled_total", grpc_code="OK", **P), 5.0, "handled_total{Predict,OK}")
    for name, n in err_names.items():
        eq(t.value(s, "grpc_server_handled_total", grpc_code=name, **P), float(n),
           "handled_total{Predict,%s}" % name)
    eq(t.value(s, "grpc_server_handled_total", **P), 7.0, "handled_total{Predict} over all codes")
    eq(t.value(s, "grpc_server_handling_seconds_count", **P), 7.0, "handling_seconds_count{Predict}")
    eq(t.value(s, "grpc_server_handling_seconds_bucket", le="+Inf", **P), 7.0,
       "handling_seconds_bucket{Predict,le=+Inf}")
    buckets = sorted(((float(l["le"]), v) for n, l, v in s
                      if n == "grpc_server_handling_seconds_bucket"
                      and l.get("grpc_method") == "Predict"), key=lambda x: x[0])
    check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
          "handling_seconds buckets are cumulative")
    hsum = t.value(s, "grpc_server_handling_seconds_sum", **P)
    check(hsum is not None and hsum > 0, "handling_seconds_sum{Predict} > 0 (got %r)" % hsum)
    eq(t.value(s, "grpc_server_msg_received_total", **P), 7.0, "msg_received_total{Predict}")
    eq(t.value(s, "grpc_server_msg_sent_total", **P), 5.0, "msg_sent_total{Predict} (OK calls)")

    W = dict(S, grpc_method="Sweep", grpc_type="server_stream")
    eq(t.value(s, "grpc_server_started_total", **W), 2.0, "started_total{Sweep,server_stream}")
    eq(t.value(s, "grpc_server_handled_total", grpc_code="OK", **W), 2.0, "handled_total{Sweep,OK}")
    eq(t.value(s, "grpc_server_msg_sent_total", **W), float(len(first) + len(second)),
       "msg_sent_total{Sweep} == stream messages the client received")
    eq(t.value(s, "grpc_server_msg_received_total", **W), 2.0, "msg_received_total{Sweep}")
    eq(t.value(s, "grpc_server_handling_seconds_count", **W), 2.0, "handling_seconds_count{Sweep}")

    for method in ("ListAccelerators", "RecordMeasurements", "Validate", "Calibrate"):
        eq(t.value(s, "grpc_server_handled_total", grpc_method=method, grpc_code="OK",
                   grpc_type="unary", **S), 1.0, "handled_total{%s,OK}" % method)
    eq(t.value(s, "grpc_server_handled_total", grpc_method="Compare", **S), None,
       "no series for a method never called")
    types = {l.get("grpc_type") for n, l, _ in s if n == "grpc_server_started_total"}
    check(types <= {"unary", "server_stream"}, "grpc_type values %s" % sorted(types))

    # scalecast's own.
    eq(t.value(s, "scalecast_sweep_cache_requests_total", result="miss"), 1.0, "sweep cache misses")
    eq(t.value(s, "scalecast_sweep_cache_requests_total", result="hit"), 1.0, "sweep cache hits")
    eq(t.value(s, "scalecast_sweep_duration_seconds_count"), 2.0, "sweep_duration_seconds_count")
    eq(t.value(s, "scalecast_sweep_duration_seconds_bucket", le="+Inf"), 2.0,
       "sweep_duration_seconds_bucket{le=+Inf}")
    layouts = t.value(s, "scalecast_sweep_layouts_evaluated_total")
    layouts_after_first = t.value(s1, "scalecast_sweep_layouts_evaluated_total")
    evaluated = sum(r.evaluated_count for r in first_results)
    check(layouts is not None and 0 < layouts <= evaluated,
          "0 < sweep_layouts_evaluated_total (%r) <= layouts the sweep reports (%d)"
          % (layouts, evaluated))
    eq(layouts, layouts_after_first, "a cached sweep evaluates no layouts")
    eq(t.value(s, "scalecast_predictions_total"), 5.0 + layouts + val.overall.count,
       "predictions_total == 5 Predicts + sweep layouts + Validate's %d runs" % val.overall.count)
    eq(t.value(s, "scalecast_measurements_stored_total"), float(len(factors)),
       "measurements_stored_total")
    eq(t.value(s, "scalecast_calibration_profiles"), 1.0, "calibration_profiles after Calibrate")
    # Calibrate (the last call) sets the gauge from its in-sample fit.
    close(t.value(s, "scalecast_model_mape_ratio", accelerator="h100-sxm-80gb", framework="megatron"),
          cal.after.mape, "model_mape_ratio{h100-sxm-80gb,megatron} == Calibrate's after.mape",
          rel=1e-6)
    # Validate's value, from a server that saw only Validate.
    eq(sorted(l.get("framework") for n, l, _ in s
              if n == "scalecast_model_mape_ratio" and "framework" in l),
       ["megatron"], "model_mape_ratio series per accelerator and framework")
    # Validate's per-source value: a series labelled with the source alone.
    eq([l for n, l, _ in s if n == "scalecast_model_mape_ratio" and "source" in l],
       [{"source": "deploy-metrics-test"}], "model_mape_ratio series per source")
    close(t.value(s, "scalecast_model_mape_ratio", source="deploy-metrics-test"),
          val.by_source["deploy-metrics-test"].mape,
          "model_mape_ratio{source} == Validate's by_source mape", rel=1e-9)
    close(val.by_source["deploy-metrics-test"].mape, expected_mape,
          "Validate by_source mape == MAPE of the known ratios", rel=1e-6)
    check(abs(val.by_accelerator["h100-sxm-80gb"].mape - expected_mape) < 1e-6,
          "Validate MAPE %r == %r (measurements at known ratios)"
          % (val.by_accelerator["h100-sxm-80gb"].mape, expected_mape))

    # The CLI's `health` (the image's HEALTHCHECK) is one grpc.health.v1.Health/Check call.
    cli = os.environ.get("SCALECAST_CLI_BIN")
    if cli:
        H = dict(grpc_service="grpc.health.v1.Health", grpc_method="Check", grpc_type="unary",
                 grpc_code="OK")
        before = t.value(s, "grpc_server_handled_total", **H) or 0.0
        r = subprocess.run([cli, "--server", server.grpc_address, "health"], capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 0, "scalecast health exits 0 while serving (rc=%d %s%s)"
              % (r.returncode, r.stdout.strip(), r.stderr.strip()))
        after = t.value(t.parse_metrics(t.scrape(server)), "grpc_server_handled_total", **H)
        eq(after, before + 1.0, "handled_total{grpc.health.v1.Health,Check,OK} after `health`")
    else:
        print("skip SCALECAST_CLI_BIN not set: `scalecast health` not exercised")

    # promtool accepts the scrape.
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    if not os.path.exists(promtool):
        check(False, "promtool is installed (Debian package prometheus)")
        return expected_mape
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=30)
    print("promtool check metrics: rc=%d %s%s" % (r.returncode, r.stdout.strip(), r.stderr.strip()))
    check(r.returncode == 0, "promtool check metrics passes on the scrape")
    return expected_mape


def check_validate_gauge(pb, pb_grpc, work, expected_mape):
    server = t.ScalecastServer(work)  # reopens the SQLite file: 3 stored runs, 1 profile
    try:
        stub = pb_grpc.ScalecastStub(t.channel_ready(grpc, server.grpc_address))
        s = t.parse_metrics(t.scrape(server))
        eq(t.value(s, "scalecast_calibration_profiles"), 1.0,
           "calibration_profiles after a restart (read from the store)")
        eq(t.value(s, "scalecast_measurements_stored_total"), 0.0,
           "measurements_stored_total starts at 0 after a restart")
        stub.Validate(pb.ValidateRequest(), timeout=30)
        s = t.parse_metrics(t.scrape(server))
        close(t.value(s, "scalecast_model_mape_ratio", accelerator="h100-sxm-80gb",
                      framework="megatron"), expected_mape,
              "model_mape_ratio after Validate == MAPE of the known ratios", rel=1e-6)
        eq(t.value(s, "scalecast_predictions_total"), 3.0, "predictions_total == Validate's 3 runs")
    finally:
        rc = server.stop()
        check(rc == 0, "second server exits 0 (got %r)" % rc)
    cli = os.environ.get("SCALECAST_CLI_BIN")
    if cli:
        r = subprocess.run([cli, "--server", server.grpc_address, "health"], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode != 0, "scalecast health fails once the server is gone (rc=%d)"
              % r.returncode)


MAX_SOURCE_SERIES = 50   # Metrics::kMaxModelErrorSources
MAX_LABEL_VALUE_BYTES = 64  # Metrics::kMaxLabelValueBytes


def source_series(samples):
    return {l["source"]: v for n, l, v in samples
            if n == "scalecast_model_mape_ratio" and "source" in l}


def check_source_series_bound(pb, pb_grpc, work):
    """60 sources validated at once: 50 per-source series, the source with the most runs kept, a
    212-byte source shortened; a later Validate of an evicted source evicts the least recent."""
    os.makedirs(work)
    server = t.ScalecastServer(work)
    try:
        stub = pb_grpc.ScalecastStub(t.channel_ready(grpc, server.grpc_address))
        sc = t.scenario(pb, framework="megatron")
        predicted = stub.Predict(pb.PredictRequest(scenario=sc), timeout=30)
        predicted = predicted.prediction.tokens_per_s_per_gpu
        long_source = "L" * 180 + " and the rest of a long citation"  # 212 bytes (max 256)
        ms = [pb.Measurement(scenario=sc, tokens_per_s_per_gpu=predicted, source="bound-%02d" % i)
              for i in range(59)]
        ms += [pb.Measurement(scenario=sc, tokens_per_s_per_gpu=predicted * f, source=long_source)
               for f in (0.8, 1.25)]
        stub.RecordMeasurements(pb.RecordMeasurementsRequest(measurements=ms), timeout=30)
        val = stub.Validate(pb.ValidateRequest(), timeout=30)
        eq(len(val.by_source), 60, "Validate by_source groups")
        text = t.scrape(server)
        series = source_series(t.parse_metrics(text))
        eq(len(series), MAX_SOURCE_SERIES, "per-source series after 60 sources")
        check(all(len(k.encode()) <= MAX_LABEL_VALUE_BYTES for k in series),
              "every source label value is at most %d bytes" % MAX_LABEL_VALUE_BYTES)
        shortened = [k for k in series if k.startswith("L" * 55 + "~")]
        check(len(shortened) == 1 and len(shortened[0]) == MAX_LABEL_VALUE_BYTES,
              "the 212-byte source (2 runs, the most) is kept, shortened: %s" % shortened)
        if shortened:
            close(series[shortened[0]], (0.25 + 0.2) / 2, "its MAPE", rel=1e-6)
        # Ties broken by name: bound-00..bound-48 kept, bound-49..bound-58 left out.
        eq(sorted(k for k in series if k.startswith("bound-")),
           ["bound-%02d" % i for i in range(49)], "the sources kept")
        # Validating an evicted source brings it back and evicts the least recently set.
        stub.Validate(pb.ValidateRequest(filter=pb.MeasurementFilter(source="bound-58")), timeout=30)
        after = source_series(t.parse_metrics(t.scrape(server)))
        eq(len(after), MAX_SOURCE_SERIES, "per-source series after one more Validate")
        check("bound-58" in after and "bound-48" not in after,
              "bound-58 set again, bound-48 (the least recently set) removed")
        promtool = shutil.which("promtool") or "/usr/bin/promtool"
        if os.path.exists(promtool):
            r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                               text=True, timeout=30)
            check(r.returncode == 0, "promtool check metrics passes with 50 source series (%s%s)"
                  % (r.stdout.strip(), r.stderr.strip()))
    finally:
        rc = server.stop()
        check(rc == 0, "bound-test server exits 0 (got %r)" % rc)
        if failures:
            print("--- bound-test server log ---\n" + server.read_log())


if __name__ == "__main__":
    main()
