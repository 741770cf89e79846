# Shared by the scripts that fit, validate and tabulate (source it from the repository root).

# Reads a list file of data/ (one path a line; blank lines and "#" comments skipped).
list_files() {
  local line
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -z $line || $line == \#* ]] || printf '%s\n' "$line"
  done <"$1"
}

# The run facts the calibration files leave out, in order (data/annotation-files.txt).
annotations=()
while IFS= read -r f; do annotations+=(--stack-features "$f"); done < <(list_files data/annotation-files.txt)

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

# Runs added under data/ with their citations (data/run-files.txt).
mapfile -t era_runs < <(list_files data/run-files.txt)

