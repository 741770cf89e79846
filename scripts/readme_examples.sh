#!/usr/bin/env bash
# Regenerates the outputs shown in README.md: builds what the examples run (the CLI, the server,
# the Python stubs), then runs every ```console block against a fresh server and writes each
# command's real output back (scripts/readme_examples.py; the ctest `readme_examples` checks them).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target scalecast scalecast-server scalecast_python_stubs
exec /usr/bin/python3 scripts/readme_examples.py --build "$build" --write
