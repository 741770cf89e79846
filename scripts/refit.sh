#!/usr/bin/env bash
# Refits the built-in default profile (model/data/default_profile.txt) on the calibration sets
# and the stack features their sources state (data/stack-features.csv). Run after a physics
# change; then rebuild. Needs the shared data beside the checkout (../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
data=${SCALECAST_SHARED_DATA:-../shared/data}
cmake --build build --target scalecast-validate >/dev/null
./build/tools/scalecast-validate --fit --no-rows --no-holdout \
  --write-profile model/data/default_profile.txt "${annotations[@]}" \
  "$data/calibration.csv" "$data/calibration-stacks.csv" "$data/moe.csv" "${era_runs[@]}"
