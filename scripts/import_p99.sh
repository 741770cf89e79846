#!/usr/bin/env bash
# The README's "health and Predict during an import" figure (issue 27): two scalecast-server
# replicas on one real PostgreSQL; replica B imports a CSV of ROWS rows while a client calls
# health and Predict on replica A in turn; prints their p50, p99 and max latency
# (tests/server_memory_test BulkImport.*, which asserts only that every call answers OK while
# the import runs). Needs a build (./build) and PostgreSQL (scripts/deps.sh installs it).
#
#   scripts/import_p99.sh [ROWS]     (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
export SCALECAST_P99_IMPORT_ROWS=${1:-100000}
export SCALECAST_REQUIRE_POSTGRES=1
./build/tests/server_memory_test --gtest_filter='BulkImport.*' 2>&1 |
  grep -E "during a|Failure|OK \]|FAILED" || true
