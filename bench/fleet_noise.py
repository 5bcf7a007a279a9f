#!/usr/bin/env python3
"""The noise of `xferbench fleet` runs without a fault, for bench/fleet_sim:

    bench/fleet_noise.py FLEET.json [FLEET.json ...]

Per file, over the send records of the pair rounds (ok, not confirmations):
each record's figure over the file's median figure; prints the coefficient of
variation (from the spread of the logs), the share of records below 0.5 of
the median (a dip under fleet's FAIL line: fleet_sim's --outliers), the same
for the confirmations, and the JSON bytes of a pair record and of a verdict
row (fleet_sim's --pair-bytes, --row-bytes). Runs with a shaped part give a
wrong noise: give runs without one.
"""
import json
import math
import statistics
import sys


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in paths:
        try:
            doc = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"fleet_noise: {path}: {e}", file=sys.stderr)
            return 2
        res = doc.get("results", [])

        def figure(r):
            g = r.get("gbps")
            return g.get("median") if isinstance(g, dict) else g

        sends = [r for r in res if r.get("case") == "send" and r.get("status") == "ok"]
        rounds = [figure(r) for r in sends if not r.get("confirm") and figure(r)]
        again = [figure(r) for r in sends if r.get("confirm") and figure(r)]
        if len(rounds) < 4:
            print(f"{path}: {len(rounds)} send records: too few")
            continue
        med = statistics.median(rounds)
        logs = [math.log(x / med) for x in rounds]
        sigma = statistics.pstdev(logs)
        cv = math.sqrt(math.exp(sigma * sigma) - 1)
        dips = sum(1 for x in rounds if x < 0.5 * med) / len(rounds)
        dips_again = sum(1 for x in again if x < 0.5 * med) / len(again) if again else float("nan")
        pair = [len(json.dumps(r)) for r in res if r.get("case") in ("send", "bidir", "pingpong")]
        rows = [len(json.dumps(r)) for r in res if "verdict" in r]
        hosts = doc.get("params", {}).get("hosts", "")
        print(f"{path}: {len(rounds)} sends, {len(hosts.split(',')) if hosts else '?'} hosts, "
              f"median {med:.3g} GB/s, cv {cv:.3f}, below 0.5x: {dips:.4f} "
              f"(confirmations: {dips_again:.4f} of {len(again)}), "
              f"bytes: pair record {statistics.mean(pair):.0f}, verdict row "
              f"{statistics.mean(rows) if rows else 0:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
