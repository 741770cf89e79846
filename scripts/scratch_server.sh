# shellcheck shell=bash
# Sourced by the scripts that ask a fresh server of this build (scripts/famous_runs.sh,
# scripts/outside_nemo2608.sh): `start_scratch_server BUILD` starts scalecast-server on a random
# loopback port with a throwaway SQLite store, stops it and removes the store on exit, and waits
# until it answers; `cli ARGS` runs the CLI against it; `field NAMES ARGS` prints the named CSV
# columns ("tokens_per_s_per_gpu layout") of `scalecast predict --csv ARGS`, space-separated.
start_scratch_server() {
  scratch_build=$1
  scratch_dir=$(mktemp -d)
  scratch_port=$((40000 + RANDOM % 20000))
  "$scratch_build/server/scalecast-server" --db "$scratch_dir/scratch.db" \
    --listen "127.0.0.1:$scratch_port" --metrics-address '' > "$scratch_dir/server.log" 2>&1 &
  scratch_server=$!
  trap 'kill $scratch_server 2> /dev/null; wait $scratch_server 2> /dev/null; rm -rf "$scratch_dir"' EXIT
  for _ in $(seq 50); do cli models > /dev/null 2>&1 && break; sleep 0.1; done
}

cli() { "$scratch_build/clients/cli/scalecast" --server "127.0.0.1:$scratch_port" "$@"; }

field() {
  local names=$1
  shift
  cli predict --csv "$@" | /usr/bin/python3 -c '
import csv, sys
row = list(csv.DictReader(sys.stdin))[-1]
print(" ".join(row[n] for n in sys.argv[1].split()))' "$names"
}
