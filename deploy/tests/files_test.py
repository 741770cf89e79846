#!/usr/bin/python3
"""Static checks that the deploy files agree with each other and with the requirements:
the dashboard's datasource uid is the provisioned one, the paths docker-compose mounts exist, the
Prometheus target is the compose service's metrics port, the Dockerfile's runtime stage is
non-root with a volume and a CLI health check, the k8s Deployment has 2 replicas with native gRPC
probes, and smoke.sh skips cleanly when told to. Stdlib only (no YAML parser: line-level checks).
"""

import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.dirname(HERE)
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def read(*parts):
    with open(os.path.join(DEPLOY, *parts)) as f:
        return f.read()


def main():
    ds = read("grafana", "provisioning", "datasources", "prometheus.yml")
    ds_uid = re.search(r"^\s*uid:\s*(\S+)", ds, re.M).group(1)
    check(re.search(r"^\s*type:\s*prometheus\s*$", ds, re.M) is not None, "datasource is prometheus")
    check("url: http://prometheus:9090" in ds, "datasource url is the compose service prometheus:9090")

    dash = json.loads(read("grafana", "dashboards", "scalecast.json"))
    check(dash.get("title") == "scalecast" and bool(dash.get("uid")), "dashboard uid and title")
    ids = [p["id"] for p in dash["panels"]]
    check(len(ids) == len(set(ids)), "panel ids are unique")
    exprs = []
    for p in dash["panels"]:
        if p.get("type") == "row":
            continue
        check(p.get("datasource", {}).get("uid") == ds_uid,
              "panel %r uses the provisioned datasource %s" % (p["title"], ds_uid))
        check(bool(p.get("targets")), "panel %r has queries" % p["title"])
        for tg in p.get("targets", []):
            check(tg.get("datasource", {}).get("uid") == ds_uid,
                  "query %s of %r uses datasource %s" % (tg.get("refId"), p["title"], ds_uid))
            exprs.append(tg["expr"])
    joined = "\n".join(exprs)
    for what, pattern in [
        ("request rate by method", r'sum by \(grpc_method\) \(rate\(grpc_server_handled_total\{grpc_service="scalecast\.v1\.Scalecast"\}'),
        ("errors by method and code", r'sum by \(grpc_method, grpc_code\).*grpc_code!="OK"'),
        ("latency p50", r"histogram_quantile\(0\.5, sum by \(le, grpc_method\) \(rate\(grpc_server_handling_seconds_bucket"),
        ("latency p99", r"histogram_quantile\(0\.99, sum by \(le, grpc_method\) \(rate\(grpc_server_handling_seconds_bucket"),
        ("sweep cache hit ratio", r'scalecast_sweep_cache_requests_total\{result="hit"\}.*/.*scalecast_sweep_cache_requests_total'),
        ("sweep duration", r"histogram_quantile\(0\.\d+, sum by \(le\) \(rate\(scalecast_sweep_duration_seconds_bucket"),
        ("model error by accelerator", r"by \(accelerator.*scalecast_model_mape_ratio\{source=\"\"\}"),
        ("model error per source", r"by \(source\) \(scalecast_model_mape_ratio\{source!=\"\"\}"),
    ]:
        check(re.search(pattern, joined) is not None, "dashboard has a %s query" % what)

    prov = read("grafana", "provisioning", "dashboards", "scalecast.yml")
    prov_path = re.search(r"^\s*path:\s*(\S+)", prov, re.M).group(1)

    compose = read("docker-compose.yml")
    for src, dst in re.findall(r"^\s*-\s*(\./[^:\s]+):([^:\s]+)", compose, re.M):
        check(os.path.exists(os.path.join(DEPLOY, src)), "compose mounts %s, which exists" % src)
        if src == "./grafana/dashboards":
            check(dst == prov_path, "dashboards mounted where the provider reads them (%s)" % dst)
    check(re.search(r"dockerfile:\s*deploy/Dockerfile", compose) is not None
          and re.search(r"context:\s*\.\.\s*$", compose, re.M) is not None,
          "compose builds deploy/Dockerfile from the repository root")
    check(re.search(r"^  (scalecast|prometheus|grafana):", compose, re.M) is not None and
          all(re.search(r"^  %s:" % s, compose, re.M) for s in ("scalecast", "prometheus", "grafana")),
          "compose has scalecast, prometheus and grafana")
    check("SCALECAST_METRICS_ADDRESS: 0.0.0.0:9464" in compose, "compose serves metrics on 0.0.0.0:9464")
    check(re.search(r"^  postgres:", compose, re.M) is not None and
          "postgres-data:/var/lib/scalecast-pg" in compose and
          re.search(r"^  postgres-data:", compose, re.M) is not None,
          "compose runs postgres with its data on a volume")
    check("SCALECAST_DB: postgresql://scalecast@postgres:5432/scalecast" in compose and
          re.search(r"^  scalecast-2:", compose, re.M) is not None,
          "compose's two scalecast replicas share the postgres store")
    check(re.search(r"SCALECAST_DB: postgresql://[^@\s]*:[^@\s]*@", compose) is None,
          "no password inside a compose URI")
    check('"scalecast:9464"' in read("prometheus.yml"), "prometheus.yml scrapes scalecast:9464")
    # Where a compose client is installed, it must accept the file (no engine needed).
    compose_cmd = None
    if shutil.which("docker-compose"):
        compose_cmd = ["docker-compose"]
    elif shutil.which("docker") and subprocess.run(["docker", "compose", "version"],
                                                   capture_output=True, timeout=30).returncode == 0:
        compose_cmd = ["docker", "compose"]
    if compose_cmd:
        r = subprocess.run(compose_cmd + ["-p", "scalecast", "-f",
                                          os.path.join(DEPLOY, "docker-compose.yml"), "config", "-q"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "%s config accepts docker-compose.yml %s"
              % (" ".join(compose_cmd), r.stderr.strip()))
    else:
        print("skip no docker compose client: docker-compose.yml not validated by one")

    df = read("Dockerfile")
    stages = re.findall(r"^FROM\s+(\S+)", df, re.M)
    check(stages == ["debian:bookworm-slim", "debian:bookworm-slim"], "two bookworm-slim stages")
    installs = re.findall(r"apt-get install[^\n]*", df)
    check(installs and all("--no-install-recommends" in i for i in installs),
          "every apt-get install has --no-install-recommends")
    runtime = df[df.rindex("\nFROM "):]
    runtime_pkgs = re.search(r"--no-install-recommends \\\n(.*?)&& rm", runtime, re.S).group(1)
    check(re.search(r"-dev\b", runtime_pkgs) is None, "the runtime stage installs no -dev package")
    check(re.search(r"^USER\s+(?!0\b|root\b)\S+", runtime, re.M) is not None, "runs as non-root")
    check(re.search(r'^VOLUME\s+\["/var/lib/scalecast"\]', runtime, re.M) is not None,
          "the SQLite directory is a volume")
    check("SCALECAST_DB=/var/lib/scalecast/" in runtime, "the database lives on the volume")
    check("SCALECAST_LISTEN=0.0.0.0:50051" in runtime, "listens on 0.0.0.0")
    check(re.search(r'HEALTHCHECK.*\n?.*CMD \["scalecast", "--server", "127\.0\.0\.1:50051", "health"\]',
                    runtime) is not None, "HEALTHCHECK runs `scalecast health`")
    check("-DSCALECAST_BUILD_TESTS=OFF" in df and "-DSCALECAST_BUILD_BENCH=OFF" in df and
          "--target scalecast-server scalecast" in df, "builds only the server and the CLI")

    dep = read("k8s", "deployment.yaml")
    check(re.search(r"^\s*replicas:\s*2\s*$", dep, re.M) is not None, "Deployment has 2 replicas")
    for probe in ("readinessProbe", "livenessProbe"):
        check(re.search(probe + r":\s*\n\s*grpc:\s*\n\s*port:\s*50051", dep) is not None,
              "%s is a native grpc probe on 50051" % probe)
    check(re.search(r"readinessProbe:\s*\n\s*grpc:\s*\n\s*port:\s*50051\s*\n\s*"
                    r"service:\s*scalecast\.v1\.Scalecast", dep) is not None,
          "readiness asks for the scalecast service (NOT_SERVING while the store is down)")
    check(re.search(r"resources:\s*\n\s*requests:\s*\n\s*cpu:.*\n\s*memory:", dep) is not None,
          "resource requests")
    cm = read("k8s", "configmap.yaml")
    cm_name = re.search(r"^  name:\s*(\S+)", cm, re.M).group(1)
    check(re.search(r"configMapRef:\s*\n\s*name:\s*%s\b" % re.escape(cm_name), dep) is not None,
          "the Deployment reads ConfigMap %s" % cm_name)
    check('SCALECAST_LISTEN: "0.0.0.0:50051"' in cm, "ConfigMap listens on 0.0.0.0:50051")
    svc = read("k8s", "service.yaml")
    check("kind: Service" in svc and "port: 50051" in svc, "Service on 50051")
    kust = read("k8s", "kustomization.yaml")
    for f in ("configmap.yaml", "deployment.yaml", "service.yaml", "postgres.yaml"):
        check(f in kust, "kustomization lists %s" % f)
    pg = read("k8s", "postgres.yaml")
    check("kind: StatefulSet" in pg and "volumeClaimTemplates:" in pg,
          "postgres.yaml keeps its data on a PersistentVolumeClaim")
    check(re.search(r'SCALECAST_DB: "postgresql://scalecast@scalecast-postgres:5432/', cm) is not None,
          "the replicas share postgres.yaml's database")
    check(re.search(r"name: PGPASSWORD\s*\n\s*valueFrom:\s*\n\s*secretKeyRef:\s*\n\s*name: scalecast-db",
                    dep) is not None, "the password reaches the replicas from the scalecast-db Secret")
    check("name: scalecast-db" in kust, "kustomization generates the scalecast-db Secret")

    if shutil.which("kubectl"):  # renders offline; no cluster needed
        r = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, "k8s")],
                           capture_output=True, text=True, timeout=60)
        kinds = sorted(re.findall(r"^kind:\s*(\S+)", r.stdout, re.M))
        check(r.returncode == 0 and kinds == ["ConfigMap", "Deployment", "Secret", "Service",
                                              "Service", "StatefulSet"],
              "kubectl kustomize deploy/k8s renders %s %s" % (kinds, r.stderr.strip()))
    else:
        print("skip no kubectl: deploy/k8s not rendered with kustomize")

    readme = read("README.md")
    for section in ("## Run with Docker", "## Metrics", "## Deploy on Kubernetes"):
        check(section in readme, "README has %r" % section)
    for metric in ("grpc_server_started_total", "grpc_server_handled_total",
                   "grpc_server_handling_seconds", "grpc_server_msg_sent_total",
                   "grpc_server_msg_received_total", "scalecast_predictions_total",
                   "scalecast_sweep_layouts_evaluated_total", "scalecast_sweep_cache_requests_total",
                   "scalecast_sweep_duration_seconds", "scalecast_measurements_stored_total",
                   "scalecast_calibration_profiles", "scalecast_model_mape_ratio",
                   "scalecast_build_info"):
        check(metric in readme, "README lists %s" % metric)

    smoke = os.path.join(DEPLOY, "smoke.sh")
    r = subprocess.run(["bash", "-n", smoke], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "smoke.sh parses (bash -n) %s" % r.stderr.strip())
    env = dict(os.environ, SCALECAST_SMOKE="0")
    r = subprocess.run(["bash", smoke], capture_output=True, text=True, timeout=30, env=env)
    check(r.returncode == 0 and r.stdout.strip() == "smoke: SKIPPED: SCALECAST_SMOKE=0",
          "smoke.sh with SCALECAST_SMOKE=0 prints one SKIPPED line and exits 0 (rc=%d, %r)"
          % (r.returncode, r.stdout.strip()))

    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
