#!/usr/bin/env bash
# The README's write-memory figures (issue 27): tests/server_memory_test at full size against a
# real PostgreSQL: 8 concurrent ImportMeasurements of ROWS rows each into one scalecast-server
# in a 1 GiB memory cgroup (where this machine lets the test make one; its peak RSS, VmHWM, is
# checked either way), then a Validate over RUNS stored runs, then one RecordMeasurements of ROWS
# runs on a fresh server. Prints the peaks (and how long each phase took: information, not a
# bound). Takes minutes on 2 cores at the defaults. Needs a build (./build) and PostgreSQL
# (scripts/deps.sh installs it).
#
#   scripts/write_memory.sh [ROWS] [RUNS]     (defaults 100000 and 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
export SCALECAST_MEMORY_IMPORT_ROWS=${1:-100000}
export SCALECAST_MEMORY_RUNS=${2:-1000000}
export SCALECAST_REQUIRE_POSTGRES=1
./build/tests/server_memory_test 2>&1 |
  grep -E "memory limit|concurrent imports|validate over|record batch|Failure|OK \]|FAILED" || true
