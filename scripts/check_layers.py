#!/usr/bin/env python3
"""Checks the include graph of src/ against the layers of docs/DESIGN.md.

    check_layers.py SRC_DIR      exit 0 when the graph is clean, 1 with one line per problem
    check_layers.py --self-test  proves the checker finds a cycle and a layer breach

A node is a folder: the top folder (core, report, ...) or, under family/ and
backend/, the subfolder (family/coll, backend/cuda), so a cycle between two
families or two backends shows too. Two rules:
  1. no cycle between folders;
  2. a folder includes only its own layer or lower ones (LAYERS, bottom first).
"""
import os
import re
import sys
import tempfile

# Bottom first; folders on one line are one layer and may include each other
# (rule 1 still forbids a cycle).
LAYERS = [
    ["core"],
    ["runtime", "engine", "report"],
    ["coll"],
    ["backend"],
    ["family"],
    ["cli"],
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SPLIT = {"family", "backend"}  # folders whose subfolders are nodes of their own


def node_of(rel):
    parts = rel.replace(os.sep, "/").split("/")
    if len(parts) > 2 and parts[0] in SPLIT:
        return parts[0] + "/" + parts[1]
    return parts[0] if len(parts) > 1 else "."


def layer_of(node):
    top = node.split("/")[0]
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    return None


def graph(src):
    edges = {}  # node -> {node: first "file -> include" seen}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                if not os.path.exists(os.path.join(src, inc)):
                    continue  # a system or generated header
                a, b = node_of(rel), node_of(inc)
                if a != b:
                    edges.setdefault(a, {}).setdefault(b, f"{rel} -> {inc}")
    return edges


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(set(edges) | {w for e in edges.values() for w in e}):
        if v not in index:
            visit(v)
    return out


def problems(src):
    edges = graph(src)
    out = []
    for comp in cycles(edges):
        where = [edges[a][b] for a in comp for b in comp if b in edges.get(a, {})]
        out.append(f"include cycle between {', '.join(comp)}: {'; '.join(where)}")
    for a, targets in sorted(edges.items()):
        for b, where in sorted(targets.items()):
            la, lb = layer_of(a), layer_of(b)
            if la is None or lb is None:
                out.append(f"{a} or {b} is in no layer of check_layers.py: {where}")
            elif lb > la or (lb == la and a.split("/")[0] != b.split("/")[0]):
                out.append(f"{a} (layer {la}) includes {b} (layer {lb}): {where}")
    return out


def self_test():
    with tempfile.TemporaryDirectory() as d:
        def write(rel, *incs):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write("".join(f'#include "{i}"\n' for i in incs))

        write("core/a.hpp")
        write("family/x/x.hpp", "core/a.hpp", "family/y/y.hpp")
        write("family/y/y.hpp", "family/x/x.hpp")
        write("report/r.hpp", "family/x/x.hpp")
        found = problems(d)
        assert any("cycle between family/x, family/y" in p for p in found), found
        assert any("report (layer 1) includes family/x (layer 4)" in p for p in found), found
        write("family/y/y.hpp", "core/a.hpp")
        write("report/r.hpp", "core/a.hpp")
        assert problems(d) == [], problems(d)
    print("check_layers self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    found = problems(argv[1])
    for p in found:
        print(p)
    if not found:
        print(f"include graph of {argv[1]}: no cycle, every folder in its layer")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
