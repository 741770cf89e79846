#!/usr/bin/python3
"""Runs every ```console block of README.md against a real scalecast-server and checks or rewrites
what the README shows after each `$ command`.

    scripts/readme_examples.py --build build --check   # compare the output's shape (ctest)
    scripts/readme_examples.py --build build --write   # regenerate the README's outputs

The commands run as a user runs them after `cmake --install`: the build is installed into a
fresh prefix (its bin/ first on PATH, its Python package on PYTHONPATH), a fresh server listens on
a free port with a throwaway database (SCALECAST_SERVER points at it), and the working directory
is a scratch copy of the checkout's layout (symlinks, with an empty docs/ for written files)
beside a link to ../shared, so `../shared/data/calibration.csv` resolves as it does in a checkout.
The blocks run in README order in one server, so later blocks see what earlier ones recorded.

--check compares shapes, not digits: numbers become N, layouts (tp2 pp4 ...) become LAYOUT,
measurement ids and page tokens are masked, runs of spaces and of dashes shrink to one, and the
"<- ..." row marks are compared as a set. Any difference fails with both versions side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```console\n(.*?)^```\n", re.S | re.M)
MARK = "@@readme-example-done@@"


FILE_BLOCK = re.compile(r"^<!-- file: (\S+) -->\n```\w*\n(.*?)^```\n", re.S | re.M)


def sync_file_blocks(readme: str, write: bool) -> tuple[str, list[str]]:
    """Code blocks marked `<!-- file: PATH -->` must show PATH as it is: rewritten from the file
    (write) or reported when they differ (check)."""
    stale = []

    def one(m: re.Match) -> str:
        text = open(os.path.join(ROOT, m.group(1))).read()
        if text != m.group(2):
            stale.append(m.group(1))
        return m.group(0).replace(m.group(2), text) if write else m.group(0)

    return FILE_BLOCK.sub(one, readme), stale


def blocks(readme: str) -> list[tuple[int, int, list[tuple[str, list[str]]]]]:
    """(start, end, [(command, output lines)]) for every ```console block's body."""
    out = []
    for m in FENCE.finditer(readme):
        cmds: list[tuple[str, list[str]]] = []
        for line in m.group(1).splitlines():
            if line.startswith("$ "):
                cmds.append((line[2:], []))
            elif cmds:
                cmds[-1][1].append(line)
            elif line.strip():
                raise SystemExit(f"README: output before any command in a console block: {line!r}")
        out.append((m.start(1), m.end(1), cmds))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(binary: str, db: str, log: str):
    port = free_port()
    with open(log, "w") as logf:
        proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--db", db,
                                 "--metrics-address", ""], stdout=logf, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"scalecast-server did not start: {open(log).read()}")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def install(build: str, prefix: str) -> str:
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    site = [os.path.join(prefix, d) for d in ("lib",) if os.path.isdir(os.path.join(prefix, d))]
    for base in site:
        for dirpath, dirnames, _ in os.walk(base):
            if "scalecast" in dirnames and dirpath.endswith("dist-packages"):
                return dirpath
    raise SystemExit(f"cmake --install put no scalecast package under {prefix}/lib")


def scratch_checkout(tmp: str) -> str:
    """tmp/shared -> the real ../shared; tmp/repo/<entry> -> the checkout's, docs/ empty."""
    shared = os.path.join(os.path.dirname(ROOT), "shared")
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(tmp, "shared"))
    repo = os.path.join(tmp, "repo")
    os.mkdir(repo)
    for name in os.listdir(ROOT):
        if name in ("docs", ".git") or name.startswith("build") or name == "var":
            continue
        os.symlink(os.path.join(ROOT, name), os.path.join(repo, name))
    os.mkdir(os.path.join(repo, "docs"))
    return repo


def run_block(cmds: list[tuple[str, list[str]]], cwd: str, env: dict[str, str]) -> list[list[str]]:
    """Runs a block's commands in one bash, so `echo $?` sees the previous command's status."""
    script = []
    for cmd, _ in cmds:
        script.append(f"{cmd} 2>&1\n__rc=$?\nprintf '%s\\n' '{MARK}'\n(exit $__rc)\n")
    res = subprocess.run(["bash", "-c", "".join(script)], cwd=cwd, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    outs: list[list[str]] = [[]]
    for line in res.stdout.splitlines():
        if line == MARK:
            outs.append([])
        else:
            outs[-1].append(line)
    if len(outs) != len(cmds) + 1:
        raise SystemExit(f"README block did not run to the end:\n{res.stdout}")
    return [[l.rstrip() for l in o] for o in outs[:-1]]


NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
LAYOUT = re.compile(r"\btp\d+(?: (?:pp|vpp|cp|dp|mb)\d+| (?:ddp|zero1|zero2|fsdp|hsdp\d*)"
                    r"| rc=(?:none|sel|full)| sp)*")


def shape(lines: list[str]) -> tuple[list[str], list[str]]:
    """Lines with the digits masked; and the row marks ("<- knee") found, in order."""
    out, marks = [], []
    for line in lines:
        if "<- " in line:
            line, _, mark = line.partition("<- ")
            marks.append(NUMBER.sub("N", mark.strip()))
        line = re.sub(r"\bm-[0-9a-f]{16}\b", "m-ID", line)
        line = re.sub(r"--page-token \S+", "--page-token TOKEN", line)
        line = LAYOUT.sub("LAYOUT", line)
        line = NUMBER.sub("N", line)
        line = re.sub(r"N(?:[-.:/xT]N)+", "N", line)
        line = re.sub(r"-{2,}", "--", line)
        line = re.sub(r"\s+", " ", line).strip()
        out.append(line)
    return out, marks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the CMake build directory")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    args = ap.parse_args()

    readme, stale = sync_file_blocks(open(args.readme).read(), args.write)
    if stale and args.check:
        print("FAIL: README code blocks differ from their files: " + ", ".join(stale))
    found = blocks(readme)
    if not found:
        raise SystemExit("README: no ```console blocks")
    build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory(prefix="readme-examples-") as tmp:
        prefix = os.path.join(tmp, "prefix")
        site = install(build, prefix)
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        cwd = scratch_checkout(work)
        env = dict(os.environ)
        # Debian's python3 first: it has python3-grpcio and python3-protobuf.
        env["PATH"] = os.pathsep.join([os.path.join(prefix, "bin"), "/usr/bin",
                                       env.get("PATH", "")])
        env["PYTHONPATH"] = site
        env.pop("SCALECAST_PY_GEN", None)
        env.pop("SCALECAST_TOKEN", None)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        with server(os.path.join(prefix, "bin", "scalecast-server"),
                    os.path.join(tmp, "scalecast.db"), os.path.join(tmp, "server.log")) as addr:
            env["SCALECAST_SERVER"] = addr
            results = [run_block(cmds, cwd, env) for _, _, cmds in found]
        if args.write:
            for src in ("scaling-plot.svg",):
                made = os.path.join(cwd, "docs", src)
                if os.path.exists(made):
                    shutil.copyfile(made, os.path.join(ROOT, "docs", src))
                    if shutil.which("rsvg-convert"):
                        subprocess.run(["rsvg-convert", "-o", os.path.join(ROOT, "docs",
                                        "scaling-plot.png"), made], check=True)

    if args.write:
        out, pos = [], 0
        for (start, end, cmds), outs in zip(found, results):
            out.append(readme[pos:start])
            for (cmd, _), lines in zip(cmds, outs):
                out.append(f"$ {cmd}\n")
                out.extend(f"{l}\n" for l in lines)
            pos = end
        out.append(readme[pos:])
        open(args.readme, "w").write("".join(out))
        print(f"{args.readme}: {sum(len(c) for _, _, c in found)} commands in {len(found)} blocks "
              "rewritten")
        return 0

    failures = 0
    for (_, _, cmds), outs in zip(found, results):
        for (cmd, want), got in zip(cmds, outs):
            if cmd.strip() == "echo $?":  # exit statuses are compared exactly
                if want != got:
                    failures += 1
                    print(f"FAIL: $ {cmd}: README {want}, now {got}")
                continue
            want_shape, want_marks = shape(want)
            got_shape, got_marks = shape(got)
            if want_shape == got_shape and sorted(want_marks) == sorted(got_marks):
                continue
            failures += 1
            print(f"FAIL: $ {cmd}")
            if want_marks != got_marks:
                print(f"  row marks: README {want_marks}, now {got_marks}")
            for d in difflib.unified_diff(want_shape, got_shape, "README (shape)", "now (shape)",
                                          lineterm="", n=1):
                print("  " + d)
            print("  --- now, in full:")
            for line in got:
                print("  " + line)
    total = sum(len(c) for _, _, c in found)
    print(f"README examples: {total - failures} of {total} commands match the README's shape"
          + ("" if not failures else "; regenerate with scripts/readme_examples.sh"))
    return 1 if failures or stale else 0


if __name__ == "__main__":
    sys.exit(main())
