#!/usr/bin/env python3
"""docs.design_examples: every code block of a document that is marked

    <!-- compiled: tests/docs/skeleton_family.cpp -->
    ```cpp
    ...
    ```

must be a verbatim excerpt of that file (its lines, in order, contiguous),
so the document shows code the build compiles. Fails, naming the block and
its first line that differs, on a stale block, on a marker without a block,
or on a document without any marked block.

    check_design_examples.py ROOT [DOC...]   (default: docs/DESIGN.md)
"""
import os
import re
import sys

MARK = re.compile(r"^<!-- compiled: (\S+) -->\s*$")


def blocks(lines):
    """(marker line number, path, block lines) for each marked block."""
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        j = i + 1
        if j >= len(lines) or not lines[j].startswith("```"):
            out.append((i + 1, m.group(1), None))
            continue
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            k += 1
        out.append((i + 1, m.group(1), lines[j + 1:k]))
    return out


def excerpt_at(block, source):
    """Index in source where block starts verbatim, or (-1, longest prefix matched)."""
    best = 0
    for s in range(len(source) - len(block) + 1):
        n = 0
        while n < len(block) and source[s + n] == block[n]:
            n += 1
        if n == len(block):
            return s, n
        best = max(best, n)
    return -1, best


def check(root, doc):
    lines = open(os.path.join(root, doc), encoding="utf-8").read().split("\n")
    found = blocks(lines)
    errors = []
    if not found:
        errors.append(f"{doc}: no block marked <!-- compiled: FILE -->")
    for line_no, path, block in found:
        where = f"{doc}:{line_no}"
        if block is None:
            errors.append(f"{where}: the marker of {path} is not followed by a ``` block")
            continue
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            errors.append(f"{where}: {path} does not exist")
            continue
        source = open(full, encoding="utf-8").read().split("\n")
        at, matched = excerpt_at(block, source)
        if at < 0:
            errors.append(f"{where}: the block is not a verbatim excerpt of {path}; "
                          f"its line {matched + 1} differs: {block[matched]!r}")
        else:
            print(f"ok: {where} = {path}:{at + 1}-{at + len(block)}")
    return errors


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    docs = sys.argv[2:] or ["docs/DESIGN.md"]
    errors = [e for d in docs for e in check(root, d)]
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
