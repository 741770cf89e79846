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
# Mixture-of-experts: every run of moe.csv in sample, and each MoE model left out in turn (the
# fit keeps the dense runs).
./build/tools/scalecast-validate --no-rows --holdout-by moe-model \
  --stack-features data/stack-features.csv --stack-features data/model-architecture.csv \
  --stack-features data/moe-run-features.csv --stack-features data/moe-stack-features.csv \
  --markdown docs/accuracy-moe.md \
  "$data/calibration.csv" "$data/calibration-stacks.csv" "$data/moe.csv" >/dev/null
# Copy the tables into the README between its accuracy markers.
/usr/bin/python3 - <<'PY'
import re
readme = open("README.md").read()
tables = open("docs/accuracy.md").read()
new, n = re.subn(r"(<!-- accuracy:begin[^\n]*-->\n).*?(<!-- accuracy:end -->)",
                 lambda m: m.group(1) + tables + m.group(2), readme, flags=re.S)
if n != 1:
    raise SystemExit("README.md: accuracy markers not found")
moe = open("docs/accuracy-moe.md").read()
new, n = re.subn(r"(<!-- accuracy-moe:begin[^\n]*-->\n).*?(<!-- accuracy-moe:end -->)",
                 lambda m: m.group(1) + moe + m.group(2), new, flags=re.S)
if n != 1:
    raise SystemExit("README.md: accuracy-moe markers not found")
open("README.md", "w").write(new)
PY
