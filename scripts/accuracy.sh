#!/usr/bin/env bash
# The accuracy tables of the README: in-sample and leave-one-source-out error per source and per
# accelerator on both calibration sets, with the FLOPs-only baseline and the 80 % band's
# coverage. Writes docs/accuracy.md and prints the full report.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
data=${SCALECAST_SHARED_DATA:-../shared/data}
cmake --build build --target scalecast-validate >/dev/null
./build/tools/scalecast-validate --no-rows "${annotations[@]}" \
  --markdown docs/accuracy.md "$data/calibration.csv" "$data/calibration-stacks.csv"
# Mixture-of-experts: every run of moe.csv in sample, and each MoE model left out in turn (the
# fit keeps the dense runs).
./build/tools/scalecast-validate --no-rows --holdout-by moe-model \
  "${annotations[@]}" --markdown docs/accuracy-moe.md \
  "$data/calibration.csv" "$data/calibration-stacks.csv" "$data/moe.csv" >/dev/null
# Every run, shared and added (data/README.md), each source left out in turn; then each software
# era left out (fit on releases before 2025, predict those of 2025 on, and the reverse).
all_runs=("$data/calibration.csv" "$data/calibration-stacks.csv" "$data/moe.csv" "${era_runs[@]}")
./build/tools/scalecast-validate --no-rows "${annotations[@]}" --markdown docs/accuracy-all.md \
  "${all_runs[@]}" >/dev/null
./build/tools/scalecast-validate --no-rows --holdout-by era "${annotations[@]}" \
  --markdown docs/accuracy-era.md "${all_runs[@]}" >/dev/null
# The same held-out runs asked for with less stated: features, then version, then framework left
# to the defaults (each source left out, fitted on every fact of the others).
./build/tools/scalecast-validate --facts-markdown "${annotations[@]}" "${all_runs[@]}" \
  >docs/accuracy-facts.md
# Controlled pairs: what a change buys, measured and predicted, on runs that differ in it only
# (fp8 against bf16 and between recipes; one release against the next, across sources).
./build/tools/scalecast-validate --no-rows --no-holdout "${annotations[@]}" \
  --pairs workload.precision,stack.fp8_recipe --pairs-markdown docs/pairs-precision.md \
  "${all_runs[@]}" >/dev/null
./build/tools/scalecast-validate --no-rows --no-holdout "${annotations[@]}" \
  --pairs source,stack.version --pairs-markdown docs/pairs-release.md "${all_runs[@]}" >/dev/null
# The release table, from the framework table itself.
./build/tools/scalecast-validate --releases-markdown >docs/releases.md
# The record table (the best published MFU per generation and precision), from model/records.cc.
./build/tools/scalecast-validate --records-markdown >docs/records.md
# Copy the tables into the README between their markers.
splice_readme accuracy docs/accuracy.md
splice_readme accuracy-moe docs/accuracy-moe.md
splice_readme accuracy-all docs/accuracy-all.md
splice_readme accuracy-era docs/accuracy-era.md
splice_readme accuracy-facts docs/accuracy-facts.md
splice_readme pairs-precision docs/pairs-precision.md
splice_readme pairs-release docs/pairs-release.md
splice_readme releases docs/releases.md
splice_readme records docs/records.md
