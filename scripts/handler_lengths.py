#!/usr/bin/python3
"""Fails when a gRPC handler in server/ is longer than the limit (60 lines of body).

Handlers are: ScalecastService's method for each rpc of proto/scalecast/v1/scalecast.proto's
service, every member function of a class that derives from a grpc::Server*Reactor, and every
function that returns one (the helpers that answer a call). Handlers translate, call and write;
the work lives in jobs/ and model/. The code is clang-formatted (functions at namespace scope
start and end at column 0, class members at column 2), which is what this reads.

usage: handler_lengths.py [--limit N] [--proto FILE] [--list] FILE.cc...
"""

from __future__ import annotations

import argparse
import re
import sys


def rpc_names(proto: str) -> set[str]:
    with open(proto, encoding="utf-8") as f:
        return set(re.findall(r"^\s*rpc\s+(\w+)\s*\(", f.read(), re.M))


def _code(line: str) -> str:
    return line.split("//")[0].rstrip()


def functions(lines: list[str], lo: int, hi: int, indent: str, reactor: bool, out: list) -> None:
    """Appends (body lines, first line, name, in a reactor class) for each function defined
    between lines lo and hi at `indent`, descending into namespaces and classes."""
    i = lo
    while i < hi:
        line = lines[i]
        at = line.startswith(indent) and len(line) > len(indent) and line[len(indent)] != " "
        if not at or line.strip().startswith(("//", "#", "}", "public:", "private:",
                                              "protected:")):
            i += 1
            continue
        j, head = i, ""
        while j < hi:  # the declaration up to its `{` or `;`
            head += _code(lines[j]) + " "
            if _code(lines[j]).endswith(("{", ";")):
                break
            j += 1
        if j >= hi:
            return
        if _code(lines[j]).endswith(";"):
            i = j + 1
            continue
        k = j + 1
        while k < hi and not lines[k].startswith(indent + "}"):
            k += 1
        head = head.strip()
        if re.match(r"(namespace|extern)\b", head):
            functions(lines, j + 1, k, indent, reactor, out)
        elif re.match(r"(template\s*<[^>]*>\s*)?(class|struct)\b", head):
            derives = re.search(r"grpc::Server\w*Reactor", head) is not None
            functions(lines, j + 1, k, indent + "  ", derives, out)
        elif "(" in head and "=" not in head.split("(")[0] and not re.match(r"(enum|union)\b",
                                                                            head):
            words = head.split("(")[0].split()
            out.append((k - j - 1, i + 1, words[-1] if words else "?", reactor, head))
        i = k + 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--proto", default="proto/scalecast/v1/scalecast.proto")
    ap.add_argument("--list", action="store_true", help="print every handler's length")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rpcs = rpc_names(args.proto)
    if not rpcs:
        print(f"handler_lengths: no rpc in {args.proto}", file=sys.stderr)
        return 2
    over, seen = [], 0
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        found: list = []
        functions(lines, 0, len(lines), "", False, found)
        for n, line, name, in_reactor, head in found:
            handler = (in_reactor or name.split("::")[-1] in rpcs and "::" in name
                       or re.search(r"grpc::Server\w*Reactor\w*<?[^(]*\*\s*[\w:]+$",
                                    head.split("(")[0]) is not None)
            if not handler:
                continue
            seen += 1
            if args.list:
                print(f"{n:4d} {path}:{line}: {name}")
            if n > args.limit:
                over.append(f"{path}:{line}: {name} is {n} lines (limit {args.limit})")
    for o in over:
        print(o)
    print(f"handler_lengths: {seen} handlers, {len(over)} over {args.limit} lines")
    return 1 if over or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
