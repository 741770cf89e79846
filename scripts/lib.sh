# Shared by the scripts that fit, validate and tabulate (source it from the repository root).

# The run facts the calibration files leave out (data/README.md): the stack each dense run's
# source states, then the MoE runs' architecture, per-source and per-run facts.
# The release each source ran (data/source-releases.csv by source, data/mosaicml-releases.csv by
# run) comes first, so that a run's own file overrides it.
annotations=(--stack-features data/source-releases.csv
             --stack-features data/mosaicml-releases.csv
             --stack-features data/stack-features.csv
             --stack-features data/grad-reduce-dtype.csv
             --stack-features data/model-architecture.csv
             --stack-features data/moe-run-features.csv
             --stack-features data/moe-stack-features.csv
             --stack-features data/megatron-bridge-fp8-params.csv
             --stack-features data/megatron-bridge-offload.csv)

# splice_readme MARKER FILE: replaces README.md's text between "<!-- MARKER:begin ... -->" and
# "<!-- MARKER:end -->" with FILE; fails when the markers are not there exactly once.
splice_readme() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import re, sys
marker, path = sys.argv[1], sys.argv[2]
readme = open("README.md").read()
table = open(path).read()
new, n = re.subn(r"(<!-- " + re.escape(marker) + r":begin[^\n]*-->\n).*?(<!-- " +
                 re.escape(marker) + r":end -->)",
                 lambda m: m.group(1) + table + m.group(2), readme, flags=re.S)
if n != 1:
    raise SystemExit(f"README.md: {marker} markers not found")
open("README.md", "w").write(new)
PY
}

# Runs added under data/ with their citations (data/README.md): releases other than the shared
# data's, and older stacks (2021-2023); fitted on and checked like the shared runs.
era_runs=(data/nemo-releases.csv data/dgxc-releases.csv data/megatron-2021.csv data/era-papers.csv
          data/mlperf-gpt3.csv)

