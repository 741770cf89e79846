#!/usr/bin/env bash
# The main job: installs what is missing, builds, and starts scalecast-server on the embedded
# SQLite default (./var/scalecast.db) with the built-in calibration profile. It prints where it
# listens (gRPC 127.0.0.1:50051, metrics http://127.0.0.1:9464/metrics); Ctrl-C stops it.
# Extra arguments go to the server (scalecast-server --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target scalecast-server scalecast-validate
if cmake --build build --target help | grep -q '^scalecast:'; then
  cmake --build build -j "$jobs" --target scalecast
fi
mkdir -p var
exec ./build/server/scalecast-server "$@"
