#!/usr/bin/env bash
# The main job: installs what is missing, builds, and prints the scaling model's validation
# report on the calibration set (predicted vs measured tokens/s per GPU for every run, errors
# per framework and accelerator, leave-one-framework-out error).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
csv=${1:-../shared/data/calibration.csv}
exec ./build/tools/scalecast-validate "$csv"
