#!/usr/bin/env bash
# The few-shot table of the README: for each stack of each source of the three shared calibration
# sets (dense and MoE; a stack is a source's rows of one framework on one accelerator, what a user
# calibrates under one name), the default profile fitted without the source, a layer calibrated
# on every 8th of the stack's rows (at least 2) with Calibrate's few-shot rule
# (model/calibration.h FitLayer) and the prior the other sources' held-out rows give
# (LayerPriorsFromHeldOut), and its other rows predicted with and without the layer. Writes
# docs/fewshot.md, copies it into README.md between the fewshot markers and prints the full
# report. For diagnostics (--rows FILE, per source without --per-stack, --per-accelerator, a
# given prior) run ./build/tools/scalecast-fewshot itself with these arguments and no --markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
data=${SCALECAST_SHARED_DATA:-../shared/data}
cmake --build build --target scalecast-fewshot >/dev/null
./build/tools/scalecast-fewshot "${annotations[@]}" --per-stack --markdown docs/fewshot.md \
  "$data/calibration.csv" "$data/calibration-stacks.csv" "$data/moe.csv"
splice_readme fewshot docs/fewshot.md
