#!/usr/bin/env bash
# The accuracy tables of the README: in-sample and leave-one-source-out error per source and per
# accelerator on both calibration sets, with the FLOPs-only baseline and the 80 % band's
# coverage. Writes docs/accuracy.md and prints the full report.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${SCALECAST_SHARED_DATA:-../shared/data}
cmake --build build --target scalecast-validate >/dev/null
./build/tools/scalecast-validate --no-rows --stack-features data/stack-features.csv \
  --markdown docs/accuracy.md "$data/calibration.csv" "$data/calibration-stacks.csv"
