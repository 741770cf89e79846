"""Helpers shared by the deploy tests (stdlib + Debian's python3-grpcio/python3-protobuf).

- generate_stubs(): Python gRPC stubs for proto/scalecast/v1/scalecast.proto, generated at test
  time into a temp dir with protoc and Debian's grpc_python_plugin.
- ScalecastServer: a real scalecast-server on loopback (gRPC and metrics on free ports, a
  throwaway SQLite file), stopped with SIGTERM.
- scrape()/parse_metrics(): the /metrics page and its samples.
- Scenario builders for the calls the tests make.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = "scalecast.v1.Scalecast"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def server_bin():
    path = os.environ.get("SCALECAST_SERVER_BIN")
    if not path:
        for cand in ("build/server/scalecast-server", "build-deploy/server/scalecast-server"):
            if os.path.exists(os.path.join(REPO, cand)):
                path = os.path.join(REPO, cand)
                break
    if not path or not os.access(path, os.X_OK):
        fail("scalecast-server not found: set SCALECAST_SERVER_BIN")
    return path


def generate_stubs(out_dir):
    """Generates scalecast_pb2 / scalecast_pb2_grpc under out_dir and puts it on sys.path."""
    protoc = shutil.which("protoc") or "/usr/bin/protoc"
    plugin = "/usr/bin/grpc_python_plugin"
    if not os.path.exists(plugin):
        plugin = shutil.which("grpc_python_plugin") or plugin
    cmd = [protoc, "--proto_path=" + REPO, "--python_out=" + out_dir, "--grpc_out=" + out_dir,
           "--plugin=protoc-gen-grpc=" + plugin, "proto/scalecast/v1/options.proto",
           "proto/scalecast/v1/scalecast.proto"]
    # protoc finds google/protobuf/timestamp.proto in its own include dir (/usr/include).
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("protoc failed: %s\n%s" % (" ".join(cmd), r.stderr))
    for d in ("proto", "proto/scalecast", "proto/scalecast/v1"):
        open(os.path.join(out_dir, d, "__init__.py"), "a").close()
    sys.path.insert(0, out_dir)
    from proto.scalecast.v1 import scalecast_pb2, scalecast_pb2_grpc  # noqa: E402
    return scalecast_pb2, scalecast_pb2_grpc


class ScalecastServer:
    """scalecast-server on 127.0.0.1 with gRPC and metrics on ports the server picks."""

    def __init__(self, workdir, extra_args=()):
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "server.log")
        self.log = open(self.log_path, "w+")
        args = [server_bin(), "--listen", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0",
                "--db", os.path.join(workdir, "scalecast.db"), "--threads", "2",
                "--grace-period-ms", "1000"] + list(extra_args)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        # The first stdout line: "... listening on HOST:PORT, database ..., metrics on
        # http://HOST:PORT/metrics". readline() is bounded by the server exiting or printing.
        line = self._readline(timeout=30)
        m = re.search(r"listening on ([0-9.]+):(\d+)", line)
        mm = re.search(r"metrics on http://([0-9.]+):(\d+)/metrics", line)
        if not m or not mm:
            self.stop()
            fail("unexpected server banner %r; log:\n%s" % (line, self.read_log()))
        self.grpc_address = "%s:%s" % (m.group(1), m.group(2))
        self.metrics_port = int(mm.group(2))
        self.metrics_url = "http://127.0.0.1:%d/metrics" % self.metrics_port

    def _readline(self, timeout):
        import threading
        result = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        if not result:
            self.stop()
            fail("server printed nothing in %ds; log:\n%s" % (timeout, self.read_log()))
        return result[0]

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        return self.proc.returncode


def channel_ready(grpc, address, timeout=20):
    ch = grpc.insecure_channel(address)
    grpc.channel_ready_future(ch).result(timeout=timeout)
    return ch


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def scrape(server):
    return http_get(server.metrics_url)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {label: value}, float)] for every sample line of the text exposition format."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError("unparsable sample line: %r" % line)
        labels = dict(_LABEL.findall(m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def value(samples, name, **labels):
    """The sum of the samples named `name` whose labels include `labels` (None if none match)."""
    total, found = 0.0, False
    for n, l, v in samples:
        if n == name and all(l.get(k) == str(want) for k, want in labels.items()):
            total += v
            found = True
    return total if found else None


def scenario(pb, gpus=64, accelerator="h100-sxm-80gb", framework="", complete_layout=True):
    s = pb.Scenario()
    s.workload.model.name = "llama2-7b"
    s.workload.seq_len = 4096
    s.workload.global_batch = 512
    s.workload.precision = pb.PRECISION_BF16
    s.cluster.accelerator = accelerator
    s.cluster.num_gpus = gpus
    s.framework = framework
    if complete_layout:
        p = s.parallelism
        p.tp, p.pp, p.vpp, p.cp, p.dp = 1, 1, 1, 1, gpus
        p.sharding = pb.SHARDING_ZERO1
        p.micro_batch = 1
        p.recompute = pb.RECOMPUTE_NONE
    return s


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tempdir(prefix):
    return tempfile.mkdtemp(prefix=prefix)


def wait_until(pred, timeout, interval=0.25, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    fail("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))
