# Shared by the scripts that fit, validate and tabulate (source it from the repository root).

# The run facts the calibration files leave out (data/README.md): the stack each dense run's
# source states, then the MoE runs' architecture, per-source and per-run facts.
annotations=(--stack-features data/stack-features.csv
             --stack-features data/model-architecture.csv
             --stack-features data/moe-run-features.csv
             --stack-features data/moe-stack-features.csv)

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
