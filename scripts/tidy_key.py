#!/usr/bin/env python3
"""The cache key of one clang-tidy run (scripts/tidy.sh): tidy_key.py BUILD_DIR FILE TIDY

A SHA-256 over what the run's result depends on: clang-tidy's version, the .clang-tidy
file, and the translation unit as the preprocessor gives it (the file's compile command
from BUILD_DIR/compile_commands.json with -E: every header it reads, with line markers,
and the macros its flags set). The source tree's path is taken out of the text, so a clone
in another folder (CI's) finds the results of this one. Prints the key; exits 1, printing
nothing, where the key cannot be made (the run then goes ahead uncached).
"""
import hashlib
import json
import os
import shlex
import subprocess
import sys


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    build, path, tidy = argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    want = os.path.normpath(os.path.join(root, path))
    entry = None
    for e in json.load(open(os.path.join(build, "compile_commands.json"))):
        if os.path.normpath(os.path.join(e["directory"], e["file"])) == want:
            entry = e
            break
    if entry is None:
        return 1
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    pre, skip = [], False
    for a in args:  # the same command, preprocessing only, to stdout
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        pre.append(a)
    if pre and os.path.basename(pre[0]) == "ccache":
        pre = pre[1:]
    pre.append("-E")
    try:
        text = subprocess.run(pre, cwd=entry["directory"], capture_output=True, check=True).stdout
        version = subprocess.run([tidy, "--version"], capture_output=True, check=True).stdout
        config = open(os.path.join(root, ".clang-tidy"), "rb").read()
    except (OSError, subprocess.CalledProcessError):
        return 1
    h = hashlib.sha256()
    for part in (version, config, path.encode(), text.replace(root.encode(), b"@ROOT@")):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    print(h.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
