#!/usr/bin/env python3
"""Every room of the product names its job on its first line (docs/layout.md), checked.

A room is one file with one responsibility. A reader finds a behaviour by reading first lines, so:
  - a header (.h) starts with a `//` comment;
  - a source (.cc) starts with a `//` comment, or with the include of its own header (`x.cc`
    includes `.../x.h` first): the header's first line is then the job;
  - a shell script or Python file starts with a `#` comment (after a `#!` line, if any) or, for
    Python, a docstring.
Checked over the product's folders and the e2e, scripts and images trees; tests/, bench/ and
fuzz/ files name what they test through their first include and are not checked.

  check_rooms.py [<source root>]    prints each file that breaks the rule, exits 1 if any
"""

import os
import sys

CHECKED_TOPS = ("common", "node", "device-plugin", "dra", "cni", "inspect", "e2e", "scripts",
                "images")
SKIP_DIRS = {"build", ".git", "node_modules", "proto"}
SUFFIXES = (".h", ".cc", ".sh", ".py")


def checked_files(root):
    for top in CHECKED_TOPS:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for f in sorted(filenames):
                if f.endswith(SUFFIXES):
                    yield os.path.join(dirpath, f)


def first_lines(path):
    """The file's first line and the line after a `#!` line (both "" when absent)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n", 2)
    first = lines[0] if lines else ""
    second = lines[1] if len(lines) > 1 else ""
    return first, second


def problem(root, path):
    """Why `path` does not name its job on its first line, or None."""
    rel = os.path.relpath(path, root)
    first, second = first_lines(path)
    if rel.endswith(".h"):
        return None if first.startswith("//") else f"{rel}: a header starts with a // comment " \
            f"naming its job (first line: {first[:60]!r})"
    if rel.endswith(".cc"):
        if first.startswith("//"):
            return None
        own = os.path.splitext(os.path.basename(rel))[0] + ".h"
        inc = first.strip()
        if inc.startswith("#include \"") and (inc[10:-1] == own or inc[10:-1].endswith("/" + own)):
            return None
        return f"{rel}: a source starts with a // comment or the include of its own header " \
            f"{own} (first line: {first[:60]!r})"
    line = second if first.startswith("#!") else first
    if line.startswith("#") and not line.startswith("#!") and line[1:].strip():
        return None
    if rel.endswith(".py") and line.startswith('"""'):
        return None
    return f"{rel}: a script starts with a # comment naming its job" \
        f"{' after its #! line' if first.startswith('#!') else ''} (line: {line[:60]!r})"


def check(root):
    return [p for p in (problem(root, f) for f in checked_files(root)) if p]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
