#!/usr/bin/env bash
# Docker smoke test: builds deploy/Dockerfile, starts the container, waits for its HEALTHCHECK
# (`scalecast health`), makes a Predict and a Sweep with the CLI inside the container, scrapes
# /metrics from the host, checks the counters, stops the container (SIGTERM: it must exit 0)
# and removes it and its volume, on failure too. Then the PostgreSQL path: builds
# deploy/postgres/Dockerfile, starts it and two scalecast replicas on one network, imports runs
# through replica A, lists them through replica B, kills A with SIGKILL and lists them again.
#
# Where Docker cannot be had (no docker binary and none installable, dockerd does not start, no
# debian:bookworm-slim image and none can be made), it prints one line "smoke: SKIPPED: <why>"
# and exits 0. Where Docker works, any failure exits non-zero. Every wait is bounded.
#
# Environment:
#   SCALECAST_SMOKE=0                  skip on purpose
#   SCALECAST_SMOKE_IMAGE              image tag to build (scalecast:smoke)
#   SCALECAST_SMOKE_BUILD_TIMEOUT      seconds for `docker build` (3600: it compiles on 2 cores)
#   SCALECAST_SMOKE_BUILD_NETWORK      --network for `docker build` (default: Docker's default)
#   SCALECAST_SMOKE_KEEP_IMAGE=0       remove the image and its build stage afterwards (kept by
#                                      default: a rerun then reuses Docker's build cache)
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)
image=${SCALECAST_SMOKE_IMAGE:-scalecast:smoke}
build_timeout=${SCALECAST_SMOKE_BUILD_TIMEOUT:-3600}
name="scalecast-smoke-$$"
volume="$name-data"

say() { echo "smoke: $*"; }
skip() {
  echo "smoke: SKIPPED: $*"
  exit 0
}
died=""
die() {
  died=1
  echo "smoke: FAILED: $*" >&2
  exit 1
}
err_line=""
trap 'err_line=${err_line:-$LINENO}' ERR

[ "${SCALECAST_SMOKE:-1}" != "0" ] || skip "SCALECAST_SMOKE=0"

# Every plain `docker` call below is bounded (a hung daemon must not hang the test); the long
# ones (`timeout N docker ...`) run the binary directly with their own limit.
docker() { timeout 120 "$(type -P docker)" "$@"; }

# --- 1. A Docker engine -------------------------------------------------------------------------
base_tool=""
for cand in "$repo/../shared/tools/debian-base-image.sh" \
  "$(git -C "$repo" rev-parse --show-toplevel 2>/dev/null || echo "$repo")/../shared/tools/debian-base-image.sh"; do
  if [ -f "$cand" ]; then
    base_tool=$cand
    break
  fi
done

docker_ok() { timeout 20 docker info >/dev/null 2>&1; }

if ! command -v docker >/dev/null 2>&1 && [ -z "$base_tool" ]; then
  skip "no docker command, and ../shared/tools/debian-base-image.sh (which installs and starts it) is not there"
fi
if ! docker_ok || ! timeout 20 docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  if [ -z "$base_tool" ]; then
    docker_ok || skip "no Docker engine answers (docker info failed) and ../shared/tools/debian-base-image.sh is not there to start one"
  elif [ "$(id -u)" -ne 0 ]; then
    docker_ok || skip "no Docker engine answers (docker info failed) and starting dockerd needs root"
  else
    say "starting Docker / making debian:bookworm-slim with $base_tool"
    tool_log=$(mktemp)
    if ! timeout 1800 bash "$base_tool" >"$tool_log" 2>&1; then
      why=$(grep -v '^\s*$' "$tool_log" | tail -n 1)
      if ! docker_ok; then
        detail=""
        if [ -f /var/log/dockerd.log ]; then
          detail=$(grep -iE 'level=(error|fatal)|failed|error' /var/log/dockerd.log | tail -n 1 | cut -c1-300 || true)
        fi
        rm -f "$tool_log"
        skip "dockerd could not be started here: ${why:-debian-base-image.sh failed}${detail:+ (dockerd.log: $detail)}"
      fi
      rm -f "$tool_log"
      skip "Docker runs, but no debian:bookworm-slim image could be made: ${why:-debian-base-image.sh failed}"
    fi
    rm -f "$tool_log"
  fi
fi
docker_ok || skip "no Docker engine answers (docker info failed)"
if ! timeout 20 docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  say "debian:bookworm-slim is not local: docker build will try to pull it"
fi

# --- 2. Cleanup, whatever happens ---------------------------------------------------------------
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ] && [ -z "$died" ]; then
    echo "smoke: FAILED: a command failed (exit $rc) near line ${err_line:-?} of deploy/smoke.sh" >&2
  fi
  if [ $rc -ne 0 ] && timeout 20 docker container inspect "$name" >/dev/null 2>&1; then
    echo "smoke: --- container log ---" >&2
    timeout 20 docker logs --tail 50 "$name" >&2 2>&1 || true
  fi
  timeout 60 docker rm -f "$name" "$name-pg" "$name-a" "$name-b" >/dev/null 2>&1 || true
  timeout 60 docker volume rm -f "$volume" "$volume-pg" >/dev/null 2>&1 || true
  timeout 60 docker network rm "$name-net" >/dev/null 2>&1 || true
  if [ "${SCALECAST_SMOKE_KEEP_IMAGE:-1}" = "0" ]; then
    timeout 60 docker image rm -f "$image" >/dev/null 2>&1 || true
    timeout 120 docker image prune -f --filter label=scalecast.stage=build >/dev/null 2>&1 || true
  fi
  [ -z "${ctx:-}" ] || rm -f "$ctx"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 3. The image -------------------------------------------------------------------------------
# The context is only what the build needs (no build directories), as a tar on stdin.
ctx=$(mktemp)
tar -C "$repo" --exclude='__pycache__' --exclude='*.pyc' -cf "$ctx" \
  CMakeLists.txt cmake proto model storage jobs server clients tools deploy
say "building $image (docker build, up to ${build_timeout}s)"
build_args=(-f deploy/Dockerfile)
[ -z "${SCALECAST_SMOKE_BUILD_NETWORK:-}" ] || build_args+=(--network "$SCALECAST_SMOKE_BUILD_NETWORK")
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
build_log=$(mktemp)
if ! timeout "$build_timeout" docker build "${build_args[@]}" -t "$image" - <"$ctx" >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  rm -f "$build_log"
  die "docker build failed (or ran past ${build_timeout}s)"
fi
rm -f "$build_log"
say "built $image: $(docker image inspect -f '{{.Id}} {{.Size}} bytes' "$image")"
# Bounded disk: drop the image this tag replaced and older build stages (the current build stage
# stays, as the cache of the next run; rebuilding its id is a cache hit).
new_id=$(docker image inspect -f '{{.Id}}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  timeout 120 docker image rm "$old_id" >/dev/null 2>&1 || true
fi
stage_id=$(timeout 600 docker build -q "${build_args[@]}" --target build - <"$ctx" 2>/dev/null || true)
if [ -n "$stage_id" ]; then
  for id in $(docker images -q --no-trunc --filter dangling=true --filter label=scalecast.stage=build); do
    [ "$id" = "$stage_id" ] || timeout 120 docker image rm "$id" >/dev/null 2>&1 || true
  done
fi
user=$(docker image inspect -f '{{.Config.User}}' "$image")
case "$user" in "" | root | 0 | 0:*) die "the image runs as root (User='$user')" ;; esac

# --- 4. Run it, wait for health -----------------------------------------------------------------
timeout 60 docker volume create "$volume" >/dev/null
# As the k8s Deployment runs it: read-only root filesystem, a writable /tmp, no capabilities.
timeout 60 docker run -d --name "$name" -p 127.0.0.1::50051 -p 127.0.0.1::9464 \
  -v "$volume:/var/lib/scalecast" --read-only --tmpfs /tmp --cap-drop ALL \
  --security-opt no-new-privileges --health-interval 2s --health-start-period 30s \
  "$image" >/dev/null
status=""
for _ in $(seq 60); do
  status=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$name" 2>/dev/null || true)
  case "$status" in
    "running healthy") break ;;
    exited* | dead*) die "the container stopped before it was healthy ($status)" ;;
  esac
  sleep 1
done
[ "$status" = "running healthy" ] || die "not healthy after 60 s ($status)"
say "container $name is healthy"

uid=$(timeout 30 docker exec "$name" id -u)
[ "$uid" != "0" ] || die "the server runs as root"

# --- 5. Predict and Sweep through the CLI, inside the container ----------------------------------
cli() { timeout 120 docker exec "$name" scalecast --server 127.0.0.1:50051 "$@"; }
out=$(cli health) || die "scalecast health failed: $out"
say "health: $out"
out=$(cli predict --model llama2-7b --accelerator h100-sxm-80gb --gpus 64 --seq 4096 --global-batch 512) ||
  die "scalecast predict failed: $out"
[ -n "$out" ] || die "scalecast predict printed nothing"
echo "$out" | sed 's/^/  predict | /'
out=$(cli sweep --model llama2-7b --accelerator h100-sxm-80gb --gpus 64,128 --seq 4096 --global-batch 512) ||
  die "scalecast sweep failed: $out"
[ -n "$out" ] || die "scalecast sweep printed nothing"
echo "$out" | sed 's/^/  sweep   | /'

# --- 6. Metrics, from the host ------------------------------------------------------------------
mport=$(docker port "$name" 9464/tcp | head -n 1 | sed 's/.*://')
[ -n "$mport" ] || die "no host port for 9464"
fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 10 "$1"
  else
    /usr/bin/python3 -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=10).read().decode())' "$1"
  fi
}
metrics=$(fetch "http://127.0.0.1:$mport/metrics") || die "cannot scrape http://127.0.0.1:$mport/metrics"
# The sum of the samples of a metric whose line contains every given fragment.
sample() {
  local name=$1
  shift
  echo "$metrics" | awk -v n="$name" -v f="$*" '
    BEGIN { k = split(f, frags, " ") }
    $0 !~ /^#/ { split($0, a, /[{ ]/); if (a[1] != n) next
      for (i = 1; i <= k; i++) if (index($0, frags[i]) == 0) next
      s += $NF; found = 1 }
    END { if (found) print s + 0; else print "none" }'
}
expect() {  # expect <what> <got> <op> <want>
  if awk -v g="$2" -v w="$4" -v op="$3" 'BEGIN { exit !(g != "none" && ((op == ">=" && g + 0 >= w + 0) || (op == "==" && g + 0 == w + 0))) }'; then
    say "ok   $1 = $2"
  else
    die "$1 = $2, expected $3 $4"
  fi
}
svc='grpc_service="scalecast.v1.Scalecast"'
expect 'grpc_server_handled_total{Predict,OK}' \
  "$(sample grpc_server_handled_total "$svc" 'grpc_method="Predict"' 'grpc_code="OK"')" '>=' 1
expect 'grpc_server_handled_total{Sweep,OK}' \
  "$(sample grpc_server_handled_total "$svc" 'grpc_method="Sweep"' 'grpc_code="OK"')" '>=' 1
expect 'grpc_server_msg_sent_total{Sweep}' \
  "$(sample grpc_server_msg_sent_total "$svc" 'grpc_method="Sweep"')" '>=' 2
expect 'grpc_server_handled_total{grpc.health.v1.Health}' \
  "$(sample grpc_server_handled_total 'grpc_service="grpc.health.v1.Health"')" '>=' 1
expect 'scalecast_sweep_cache_requests_total{result="miss"}' \
  "$(sample scalecast_sweep_cache_requests_total 'result="miss"')" '==' 1
expect 'scalecast_sweep_layouts_evaluated_total' "$(sample scalecast_sweep_layouts_evaluated_total)" '>=' 1
expect 'scalecast_predictions_total' "$(sample scalecast_predictions_total)" '>=' 2
expect 'scalecast_build_info' "$(sample scalecast_build_info)" '==' 1
if command -v promtool >/dev/null 2>&1; then
  echo "$metrics" | promtool check metrics || die "promtool check metrics failed on the scrape"
  say "ok   promtool check metrics"
fi

# --- 7. The store is on the volume; SIGTERM stops it cleanly ------------------------------------
timeout 30 docker exec "$name" test -s /var/lib/scalecast/scalecast.db ||
  die "no SQLite file at /var/lib/scalecast/scalecast.db"
timeout 60 docker stop -t 20 "$name" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$name")
[ "$code" = "0" ] || die "the server exited $code on SIGTERM"
say "ok   stopped on SIGTERM, exit code 0"

# --- 8. PostgreSQL: two replicas, one store -----------------------------------------------------
pg_image=${SCALECAST_SMOKE_PG_IMAGE:-scalecast-postgres:smoke}
say "building $pg_image (deploy/postgres/Dockerfile)"
build_log=$(mktemp)
pg_build_args=(-f deploy/postgres/Dockerfile)
[ -z "${SCALECAST_SMOKE_BUILD_NETWORK:-}" ] || pg_build_args+=(--network "$SCALECAST_SMOKE_BUILD_NETWORK")
if ! timeout "$build_timeout" docker build "${pg_build_args[@]}" -t "$pg_image" - <"$ctx" \
  >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  rm -f "$build_log"
  die "docker build of deploy/postgres/Dockerfile failed"
fi
rm -f "$build_log"
timeout 60 docker network create "$name-net" >/dev/null
timeout 60 docker volume create "$volume-pg" >/dev/null
timeout 60 docker run -d --name "$name-pg" --network "$name-net" --network-alias postgres \
  -e POSTGRES_PASSWORD=smoke-pw -v "$volume-pg:/var/lib/scalecast-pg" "$pg_image" >/dev/null
wait_healthy() {  # wait_healthy <container> <seconds>
  local st=""
  for _ in $(seq "$2"); do
    st=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$1" 2>/dev/null || true)
    case "$st" in
      "running healthy") return 0 ;;
      exited* | dead*) die "$1 stopped before it was healthy ($st)" ;;
    esac
    sleep 1
  done
  die "$1 not healthy after $2 s ($st)"
}
wait_healthy "$name-pg" 120
say "postgres is healthy"
for r in a b; do
  timeout 60 docker run -d --name "$name-$r" --network "$name-net" \
    -e SCALECAST_DB=postgresql://scalecast@postgres:5432/scalecast -e PGPASSWORD=smoke-pw \
    --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
    --health-interval 2s --health-start-period 30s "$image" >/dev/null
done
wait_healthy "$name-a" 60
wait_healthy "$name-b" 60
logs=$(docker logs "$name-a" 2>&1)
echo "$logs" | grep -q "database postgresql://scalecast@postgres:5432/scalecast" ||
  die "replica a does not report the PostgreSQL store: $logs"
! echo "$logs" | grep -q smoke-pw || die "the password appears in the log"
cli_on() { local c=$1; shift; timeout 120 docker exec -i "$c" scalecast --server 127.0.0.1:50051 "$@"; }
# Five runs, in shared/data/calibration.csv's columns.
csv='id,source,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,accelerator,num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,global_batch,recompute,tokens_per_s_per_gpu,note'
for i in 1 2 3 4 5; do
  csv="$csv
$i,smoke,megatron,llama2-7b,32,4096,32,32,11008,gated,32000,4096,h100-sxm-80gb,$((8 * i)),8,bf16,1,1,1,1,$((8 * i)),zero1,1,$((64 * i)),selective,$((3000 + i)),smoke"
done
echo "$csv" | timeout 60 docker exec -i "$name-a" sh -c 'cat > /tmp/runs.csv'
out=$(cli_on "$name-a" measurements import /tmp/runs.csv 2>&1) || die "import through replica a failed: $out"
say "replica a: $out"
out=$(cli_on "$name-b" measurements list --page-size 100 2>&1) || die "list through replica b failed: $out"
echo "$out" | grep -q " of 5 matching" || die "replica b does not list the 5 runs: $out"
say "ok   replica b lists the 5 runs replica a recorded"
timeout 60 docker kill -s KILL "$name-a" >/dev/null
out=$(cli_on "$name-b" measurements list --page-size 100 2>&1) || die "list after kill -9 failed: $out"
echo "$out" | grep -q " of 5 matching" || die "runs lost after kill -9 of replica a: $out"
say "ok   kill -9 of replica a lost nothing"
say "PASSED"
