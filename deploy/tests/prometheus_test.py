#!/usr/bin/python3
"""A real Prometheus (Debian's /usr/bin/prometheus) on loopback scrapes a real scalecast-server
every second, using deploy/prometheus.yml with only the target and the intervals rewritten. The
test makes calls, reads grpc_server_handled_total back through Prometheus's HTTP API, and runs
every PromQL query of the Grafana dashboard (deploy/grafana/dashboards/scalecast.json): each must
return status "success" and, once the calls are scraped, data.

Run by ctest (deploy/CMakeLists.txt) with SCALECAST_SERVER_BIN set; by hand:
  SCALECAST_SERVER_BIN=build/server/scalecast-server /usr/bin/python3 deploy/tests/prometheus_test.py
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scalecast_testlib as t  # noqa: E402

import grpc  # noqa: E402

DEPLOY = os.path.join(t.REPO, "deploy")
PROMETHEUS = os.environ.get("PROMETHEUS_BIN", "/usr/bin/prometheus")
DASHBOARD = os.path.join(DEPLOY, "grafana", "dashboards", "scalecast.json")
# Grafana's built-in variables, as Grafana would fill them in for a 1 s scrape interval.
GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "5m",
                "${__rate_interval}": "1m", "${__interval}": "15s", "${__range}": "5m"}

failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def dashboard_exprs(node, out):
    """Every "expr" string anywhere in the dashboard JSON."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                out.append(v)
            else:
                dashboard_exprs(v, out)
    elif isinstance(node, list):
        for v in node:
            dashboard_exprs(v, out)
    return out


# The two runs recorded, measured at these ratios to the prediction, each from its own source.
SOURCES = {0.8: "deploy-prometheus-test-a", 1.25: "deploy-prometheus-test-b"}


def panel_exprs(dashboard, title):
    """The queries of the dashboard panel titled `title`."""
    return [tg["expr"] for p in dashboard["panels"] if p.get("title") == title
            for tg in p.get("targets", [])]


def fill_vars(expr):
    for k in sorted(GRAFANA_VARS, key=len, reverse=True):
        expr = expr.replace(k, GRAFANA_VARS[k])
    left = re.findall(r"\$\{?\w+", expr)
    if left:
        t.fail("dashboard query uses a variable the test does not know: %s in %s" % (left, expr))
    return expr


class Prometheus:
    def __init__(self, work, metrics_port):
        with open(os.path.join(DEPLOY, "prometheus.yml")) as f:
            cfg = f.read()
        n = cfg.count('"scalecast:9464"')
        if n != 1:
            t.fail('deploy/prometheus.yml: expected one target "scalecast:9464", found %d' % n)
        cfg = cfg.replace('"scalecast:9464"', '"127.0.0.1:%d"' % metrics_port)
        # The compose file's second replica does not exist here: drop its target.
        cfg = re.sub(r'\n[ \t]*#[^\n]*\n[ \t]*- targets: \["scalecast-2:9464"\]\n[ \t]*labels:\n[^\n]*',
                     "", cfg)
        if "scalecast-2" in cfg:
            t.fail("deploy/prometheus.yml: could not drop the scalecast-2 target")
        cfg = re.sub(r"(scrape_interval|evaluation_interval): *\S+", r"\1: 1s", cfg)
        self.config = os.path.join(work, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write(cfg)
        self.log_path = os.path.join(work, "prometheus.log")
        self.log = open(self.log_path, "w")
        self.proc = None
        for _ in range(5):  # a free port can be taken between the probe and the bind: retry
            self.port = t.free_port()
            self.url = "http://127.0.0.1:%d" % self.port
            self.proc = subprocess.Popen(
                [PROMETHEUS, "--config.file=" + self.config,
                 "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % self.port,
                 "--storage.tsdb.retention.time=1h", "--log.level=warn"],
                stdout=self.log, stderr=subprocess.STDOUT)
            if self._wait_ready(30):
                return
            self.stop()
        t.fail("prometheus did not become ready; log:\n" + self.read_log())

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                t.http_get(self.url + "/-/ready", timeout=2)
                return True
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        return False

    def api(self, path, **params):
        url = "%s/api/v1/%s?%s" % (self.url, path, urllib.parse.urlencode(params))
        try:
            return json.loads(t.http_get(url))
        except urllib.error.HTTPError as e:  # 400/422: the body still says why
            return json.loads(e.read().decode("utf-8"))

    def query(self, expr):
        return self.api("query", query=expr)

    def scalar(self, expr):
        """The single value of an instant query, or None."""
        r = self.query(expr)
        if r.get("status") != "success" or not r["data"]["result"]:
            return None
        return float(r["data"]["result"][0]["value"][1])

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def main():
    if not os.access(PROMETHEUS, os.X_OK):
        t.fail("%s not found: install Debian's prometheus package (scripts/deps.sh)" % PROMETHEUS)
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    r = subprocess.run([promtool, "check", "config", os.path.join(DEPLOY, "prometheus.yml")],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "promtool check config deploy/prometheus.yml: %s" %
          (r.stdout + r.stderr).strip().replace("\n", " "))

    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = dashboard_exprs(dashboard, [])
    check(len(exprs) >= 6, "the dashboard has queries (%d)" % len(exprs))

    work = t.tempdir("scalecast-prometheus-test-")
    pb, pb_grpc = t.generate_stubs(work)
    server = t.ScalecastServer(work)
    prom = None
    try:
        prom = Prometheus(work, server.metrics_port)
        run(server, prom, pb, pb_grpc, exprs, dashboard)
    finally:
        if prom:
            prom.stop()
        rc = server.stop()
        check(rc == 0, "server exits 0 on SIGTERM (got %r)" % rc)
        if failures:
            print("--- server log ---\n" + server.read_log())
            if prom:
                print("--- prometheus log ---\n" + prom.read_log())
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("PASS")


def run(server, prom, pb, pb_grpc, exprs, dashboard):
    # The target is up: Prometheus scraped the server at least once.
    t.wait_until(lambda: prom.scalar('up{job="scalecast"}') == 1.0, 30,
                 what='up{job="scalecast"} == 1')
    check(True, 'Prometheus scrapes the server: up{job="scalecast"} == 1')

    stub = pb_grpc.ScalecastStub(t.channel_ready(grpc, server.grpc_address))
    n_ok, n_bad = 5, 2
    for _ in range(n_ok):
        stub.Predict(pb.PredictRequest(scenario=t.scenario(pb)), timeout=30)
    bad_codes = set()
    for _ in range(n_bad):
        try:
            stub.Predict(pb.PredictRequest(scenario=t.scenario(pb, gpus=0)), timeout=30)
        except grpc.RpcError as e:
            bad_codes.add(e.code())
    check(bad_codes == {grpc.StatusCode.INVALID_ARGUMENT},
          "Predict with 0 GPUs is INVALID_ARGUMENT (%s)" % bad_codes)
    sweep = pb.SweepRequest(base=t.scenario(pb, complete_layout=False), gpu_counts=[64], top_k=2)
    for _ in range(2):  # a miss, then a hit
        list(stub.Sweep(sweep, timeout=60))
    predicted = stub.Predict(pb.PredictRequest(scenario=t.scenario(pb, framework="megatron")),
                             timeout=30)
    n_ok += 1
    ms = [pb.Measurement(scenario=t.scenario(pb, framework="megatron"),
                         tokens_per_s_per_gpu=predicted.prediction.tokens_per_s_per_gpu * f,
                         source=src) for f, src in SOURCES.items()]
    stub.RecordMeasurements(pb.RecordMeasurementsRequest(measurements=ms), timeout=30)
    stub.Validate(pb.ValidateRequest(), timeout=30)

    # grpc_server_handled_total, read back through Prometheus.
    sel = 'grpc_service="scalecast.v1.Scalecast",grpc_method="Predict"'
    ok_q = 'sum(grpc_server_handled_total{%s,grpc_code="OK"})' % sel
    bad_q = 'sum(grpc_server_handled_total{%s,grpc_code="InvalidArgument"})' % sel
    t.wait_until(lambda: prom.scalar(ok_q) == n_ok and prom.scalar(bad_q) == n_bad, 30,
                 what="Prometheus to scrape the calls")
    check(prom.scalar(ok_q) == n_ok, "%s == %d via /api/v1/query" % (ok_q, n_ok))
    check(prom.scalar(bad_q) == n_bad, "%s == %d via /api/v1/query" % (bad_q, n_bad))
    r = prom.query('grpc_server_handled_total{grpc_service="scalecast.v1.Scalecast",'
                   'grpc_method="Sweep"}')
    series = r["data"]["result"]
    check(len(series) == 1 and series[0]["metric"].get("grpc_type") == "server_stream"
          and float(series[0]["value"][1]) == 2.0,
          "grpc_server_handled_total{Sweep} is one server_stream series at 2: %s" % series)
    check(prom.scalar('scalecast_sweep_cache_requests_total{result="hit"}') == 1.0,
          "sweep cache hits == 1 via Prometheus")

    # The check below can fail: a broken query is an error, not an empty success.
    bad = prom.query("sum(rate(grpc_server_handled_total[1m])")
    check(bad.get("status") == "error", "a malformed query is reported as an error (%s)"
          % bad.get("errorType"))

    # Every dashboard query: valid PromQL (status success), and data once the calls are scraped
    # (a rate needs two samples after a change: wait for them, bounded).
    deadline = time.monotonic() + 30
    pending = list(dict.fromkeys(exprs))
    results = {}
    while True:
        still = []
        for e in pending:
            q = fill_vars(e)
            r = prom.query(q)
            results[e] = r
            if r.get("status") != "success":
                continue  # a hard error: reported below, no point waiting
            if not r["data"]["result"]:
                still.append(e)
        pending = still
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for e in dict.fromkeys(exprs):
        r = results[e]
        check(r.get("status") == "success",
              "dashboard query succeeds: %s%s" % (e, "" if r.get("status") == "success" else
                                                   " -> %s: %s" % (r.get("errorType"),
                                                                   r.get("error"))))
        check(r.get("status") != "success" or bool(r["data"]["result"]),
              "dashboard query returns data: %s" % e)
        now = time.time()
        rr = prom.api("query_range", query=fill_vars(e), start="%.3f" % (now - 60),
                      end="%.3f" % now, step="1")
        check(rr.get("status") == "success", "  ... and as a range query (%s)" %
              rr.get("error", "ok"))

    # A few dashboard values are known exactly.
    by_method = prom.query(fill_vars(
        'sum by (grpc_method) (rate(grpc_server_handled_total'
        '{grpc_service="scalecast.v1.Scalecast"}[$__rate_interval]))'))
    methods = {s["metric"].get("grpc_method") for s in by_method["data"]["result"]}
    check({"Predict", "Sweep", "RecordMeasurements", "Validate"} <= methods,
          "request rate by method covers the methods called (%s)" % sorted(methods))
    mape = prom.scalar('max by (accelerator, framework) '
                       '(scalecast_model_mape_ratio{accelerator="h100-sxm-80gb"})')
    expected = (abs(1 / 0.8 - 1) + abs(1 / 1.25 - 1)) / 2
    check(mape is not None and abs(mape - expected) < 1e-6,
          "model error by accelerator == %.6f (got %r)" % (expected, mape))
    # The per-accelerator panel sees only the per-accelerator series, not the per-source ones.
    acc = prom.query(fill_vars(panel_exprs(dashboard, "Model error (MAPE) by accelerator")[0]))
    check([s["metric"] for s in acc["data"]["result"]]
          == [{"accelerator": "h100-sxm-80gb", "framework": "megatron"}],
          "the per-accelerator panel returns one series (%s)" % acc["data"]["result"])
    # The per-source panels return each source's series at its run's error, after the Validate.
    for title in ("Model error per source", "Model error per source (latest)"):
        exprs = panel_exprs(dashboard, title)
        check(len(exprs) == 1, "the dashboard has a %r panel with one query" % title)
        if not exprs:
            continue
        want = {src: abs(1 / f - 1) for f, src in SOURCES.items()}

        def per_source():
            r = prom.query(fill_vars(exprs[0]))
            return {s["metric"].get("source"): float(s["value"][1])
                    for s in r.get("data", {}).get("result", [])}

        # Both sources are set by one Validate; a scrape can land between the two: wait, bounded.
        deadline = time.monotonic() + 15
        got = per_source()
        while sorted(got) != sorted(want) and time.monotonic() < deadline:
            time.sleep(0.5)
            got = per_source()
        check(sorted(got) == sorted(want)
              and all(abs(got[k] - want[k]) < 1e-6 for k in want),
              "%r returns %s (got %s)" % (title, want, got))


if __name__ == "__main__":
    main()
