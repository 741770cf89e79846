#!/usr/bin/env bash
# The main job: installs what is missing, builds, installs the programs where a shell finds them,
# and starts scalecast-server on the embedded SQLite default (./var/scalecast.db) with the
# built-in calibration profile. It prints where it listens (gRPC 127.0.0.1:50051, metrics
# http://127.0.0.1:9464/metrics); Ctrl-C stops it. Extra arguments go to the server
# (scalecast-server --help lists them).
#
# Install: `cmake --install build` into SCALECAST_PREFIX (default /usr/local; root is needed
# there): bin/scalecast, bin/scalecast-server, bin/scalecast-plan-cluster, and the Python package
# `scalecast` in lib/python3.11/dist-packages, which Debian's python3 searches. Without root and
# without SCALECAST_PREFIX nothing is installed and the programs stay in build/ (printed below).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target scalecast-server scalecast scalecast-validate \
  scalecast_python_stubs
prefix=${SCALECAST_PREFIX:-/usr/local}
if [ -n "${SCALECAST_PREFIX:-}" ] || [ "$(id -u)" -eq 0 ]; then
  cmake --install build --prefix "$prefix" >/dev/null
  echo "run.sh: installed scalecast, scalecast-server, scalecast-plan-cluster in $prefix/bin" \
    "and the Python package scalecast for /usr/bin/python3"
  case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "run.sh: $prefix/bin is not on PATH: export PATH=$prefix/bin:\$PATH" ;;
  esac
else
  echo "run.sh: not root and no SCALECAST_PREFIX: nothing installed; the CLI is" \
    "$PWD/build/clients/cli/scalecast, the Python package needs PYTHONPATH=$PWD/clients/python"
fi
mkdir -p var
exec ./build/server/scalecast-server "$@"
