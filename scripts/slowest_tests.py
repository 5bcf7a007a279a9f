#!/usr/bin/env python3
"""The slowest tests of one or more CTest passes, from their JUnit files.

    slowest_tests.py N build/junit-PASS.xml...

Each file is what `ctest --output-junit` wrote for one pass (make test names them
build/junit-<pass>.xml); the pass is the part of the name after "junit-". Prints the N
slowest tests over all passes with their seconds and results, and each pass's count and
summed time.
"""
import os
import sys
import xml.etree.ElementTree as ET


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    n = int(argv[1])
    rows, passes = [], []
    for path in argv[2:]:
        name = os.path.basename(path)
        name = name[len("junit-"):] if name.startswith("junit-") else name
        name = name[:-len(".xml")] if name.endswith(".xml") else name
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"slowest_tests: {path}: {e}", file=sys.stderr)
            continue
        count, total = 0, 0.0
        for case in root.iter("testcase"):
            t = float(case.get("time") or 0)
            status = case.get("status") or "run"
            if case.find("failure") is not None:
                status = "failed"
            elif case.find("skipped") is not None:
                status = "skipped"
            rows.append((t, name, case.get("name", "?"), status))
            count += 1
            total += t
        passes.append((name, count, total))
    for name, count, total in passes:
        print(f"pass {name}: {count} tests, {total:.0f} s of test time (summed; -j2 runs two at once)")
    rows.sort(key=lambda r: -r[0])
    print(f"The {min(n, len(rows))} slowest tests:")
    print(f"{'seconds':>8}  {'pass':<12} {'result':<8} test")
    for t, p, case, status in rows[:n]:
        print(f"{t:8.1f}  {p:<12} {status:<8} {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
