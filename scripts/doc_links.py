#!/usr/bin/python3
"""Checks the relative links of Markdown files: each target file exists, and a #fragment names a
heading of the file it points to (GitHub's anchors: lower case, punctuation dropped, spaces to
hyphens).

  /usr/bin/python3 scripts/doc_links.py README.md docs/*.md data/README.md

Prints one line per broken link (file:line: target: why) and exits 1 if there is any, else
prints how many links it checked and exits 0. Links with a scheme (https:, mailto:) are not
followed. Fenced code blocks are skipped: their brackets are code, not links.
"""
import functools
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchor(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(path):
    """(line number, text) of each line outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line


@functools.cache
def anchors(path):
    """The anchors of a file's headings."""
    return {anchor(m.group(1)) for _, line in prose_lines(path) if (m := HEADING.match(line))}


def check(path):
    """Broken links of one file, and how many links it has."""
    broken, count = [], 0
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            count += 1
            file_part, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part \
                else path
            if not os.path.exists(dest):
                broken.append(f"{path}:{number}: {target}: no such file")
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                broken.append(f"{path}:{number}: {target}: no heading #{fragment} in {dest}")
    return broken, count


def main(paths):
    if not paths:
        sys.exit("usage: doc_links.py FILE.md ...")
    broken, total = [], 0
    for path in paths:
        b, n = check(path)
        broken += b
        total += n
    for line in broken:
        print(line)
    if broken:
        sys.exit(1)
    print(f"{total} relative links in {len(paths)} files, all resolve")


if __name__ == "__main__":
    main(sys.argv[1:])
