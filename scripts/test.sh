#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (ctest: C++ unit and
# integration tests, the Python client's tests, the metrics/Prometheus/dashboard tests), then the
# Docker smoke test (deploy/smoke.sh; it says plainly when Docker cannot be started here and is
# skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# The store suite and the replica tests run against a real PostgreSQL (Debian's, installed by
# scripts/deps.sh, started by the tests themselves): here its absence is a failure, not a skip.
export SCALECAST_REQUIRE_POSTGRES=1
ctest --test-dir build --output-on-failure -j "$jobs" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
bash deploy/smoke.sh
# One closing line for CI with ctest's counts (the smoke test's output comes after ctest's).
total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 \1/p' "$log" | tail -1)
set -- $total
echo "tests: $(( $1 - $2 )) passed, $2 failed"
