#!/usr/bin/env bash
# Predict against an empty Health/Check under the same h2load run: calls per second of each,
# alternating, ROUNDS times, against a scalecast-server started here on loopback (the README's
# "Predict vs Health" figures), and the calls per CPU second the server spent on them (its user
# and system time from /proc: steadier than wall-clock rates when other work shares the cores).
# Needs h2load (Debian: nghttp2-client) and a build (./build).
#
#   scripts/predict_vs_health.sh [ROUNDS] [REQUESTS]     (defaults 3 and 50000)
#   SCALECAST_SERVER=path/to/scalecast-server scripts/predict_vs_health.sh   (another build)
#   SCALECAST_SERVER_CPUS=0 SCALECAST_LOAD_CPUS=1 scripts/predict_vs_health.sh
#       the server and h2load pinned to those CPUs (taskset lists), each away from the other
#   SCALECAST_CALLGRIND=1 scripts/predict_vs_health.sh 2 2000
#       the server under valgrind's callgrind: the user-space instructions it executes per call
#       instead of rates (the same count on a loaded machine as on an idle one; the kernel's
#       share of a call is not in it). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-50000}
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$dir"' EXIT
# The request bodies as gRPC frames (1 byte flags, 4 bytes length, the message): an empty
# HealthCheckRequest and a full-layout Predict of llama2-70b on 512 H100 (the planner stays out).
PYTHONPATH=clients/python:build/clients/python/gen /usr/bin/python3 - "$dir" <<'PY'
import struct, sys
from scalecast._proto import pb
req = pb.PredictRequest()
s = req.scenario
s.workload.model.name, s.workload.seq_len, s.workload.global_batch = "llama2-70b", 4096, 1024
s.cluster.accelerator, s.cluster.num_gpus, s.framework = "h100-sxm-80gb", 512, "megatron"
p = s.parallelism
p.tp, p.pp, p.vpp, p.cp, p.micro_batch = 8, 4, 1, 1, 1
p.sharding, p.recompute = pb.SHARDING_ZERO1, pb.RECOMPUTE_NONE
body = req.SerializeToString()
open(f"{sys.argv[1]}/predict", "wb").write(b"\0" + struct.pack(">I", len(body)) + body)
open(f"{sys.argv[1]}/health", "wb").write(b"\0" + struct.pack(">I", 0))
PY
launch=()
pin_load=()
[ -n "${SCALECAST_SERVER_CPUS:-}" ] && launch=(taskset -c "$SCALECAST_SERVER_CPUS")
[ -n "${SCALECAST_LOAD_CPUS:-}" ] && pin_load=(taskset -c "$SCALECAST_LOAD_CPUS")
if [ -n "${SCALECAST_CALLGRIND:-}" ]; then
  command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }
  launch+=(valgrind --tool=callgrind "--callgrind-out-file=$dir/callgrind.out")
fi
"${launch[@]}" "${SCALECAST_SERVER:-./build/server/scalecast-server}" --listen 127.0.0.1:0 \
  --db :memory: --metrics-address "" > "$dir/server.out" 2>&1 &
server=$!
for _ in $(seq 600); do grep -q "listening on" "$dir/server.out" 2>/dev/null && break; sleep 0.1; done
address=$(sed -n 's/.* listening on \([^,]*\),.*/\1/p' "$dir/server.out" | head -1)
# The Predict body is a valid request (h2load counts HTTP status only, not grpc-status).
PYTHONPATH=clients/python:build/clients/python/gen /usr/bin/python3 - "$dir" "$address" <<'PY'
import sys, grpc
from scalecast._proto import pb, pb_grpc
body = open(f"{sys.argv[1]}/predict", "rb").read()[5:]
with grpc.insecure_channel(sys.argv[2]) as ch:
    pb_grpc.ScalecastStub(ch).Predict(pb.PredictRequest.FromString(body), timeout=30)
PY
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server/stat"; }
rate() {  # METHOD BODY: "calls/s calls-per-server-CPU-second", or an error when a call failed
  local out before after
  before=$(cpu_ticks)
  out=$("${pin_load[@]}" h2load -n "$requests" -c 4 -m 32 -t 1 \
          -H 'content-type: application/grpc' -H 'te: trailers' -d "$2" "http://$address/$1" 2>&1)
  after=$(cpu_ticks)
  grep -q "$requests succeeded" <<<"$out" || { echo "$out" >&2; return 1; }
  echo "$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")" \
    "$(awk -v n="$requests" -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" \
         'BEGIN { print n / (t / hz) }')"
}
# Under callgrind: the instructions of REQUESTS calls, counted from zero and dumped around them.
instructions() {  # METHOD BODY: instructions per call
  local out
  callgrind_control -z "$server" >/dev/null 2>&1
  out=$(h2load -n "$requests" -c 4 -m 32 -t 1 -H 'content-type: application/grpc' \
          -H 'te: trailers' -d "$2" "http://$address/$1" 2>&1)
  grep -q "$requests succeeded" <<<"$out" || { echo "$out" >&2; return 1; }
  rm -f "$dir"/callgrind.out.*
  callgrind_control -d "$server" >/dev/null 2>&1
  for _ in $(seq 100); do ls "$dir"/callgrind.out.* >/dev/null 2>&1 && break; sleep 0.1; done
  sleep 0.5  # the dump is written whole before the next command
  awk -v n="$requests" '/^(summary|totals):/ { print $2 / n; exit }' "$dir"/callgrind.out.*
}
if [ -n "${SCALECAST_CALLGRIND:-}" ]; then
  instructions scalecast.v1.Scalecast/Predict "$dir/predict" >/dev/null  # warm up
  echo "round   Health instructions/call   Predict instructions/call   Health/Predict"
  for r in $(seq "$rounds"); do
    h=$(instructions grpc.health.v1.Health/Check "$dir/health")
    p=$(instructions scalecast.v1.Scalecast/Predict "$dir/predict")
    awk -v r="$r" -v h="$h" -v p="$p" 'BEGIN { printf "%5d   %24.0f   %25.0f   %14.3f\n", r, h, p, h / p }'
  done
  exit 0
fi
echo "round   Health calls/s (per CPU s)   Predict calls/s (per CPU s)   Predict/Health (per CPU s)   load average"
for r in $(seq "$rounds"); do
  read -r h hc <<<"$(rate grpc.health.v1.Health/Check "$dir/health")"
  read -r p pc <<<"$(rate scalecast.v1.Scalecast/Predict "$dir/predict")"
  awk -v r="$r" -v h="$h" -v hc="$hc" -v p="$p" -v pc="$pc" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "%5d   %14.0f (%9.0f)   %15.0f (%9.0f)   %14.2f (%11.2f)   %12s\n", r, h, hc, p, pc,
             p / h, pc / hc, l }'
done
