#!/usr/bin/env python3
"""Wrong data as a result (--check every) under XFERBENCH_HOST_CORRUPT.

    corrupt_check.py XFERBENCH MPIEXEC SCENARIO

  copy     2 host devices, 1 % of device 1's copies get a flipped bit:
           copy -t d2d --check every -n 2000 names device 1, its rate's
           interval holds 1 %, device 0 has 0 wrong with its interval;
           without the knob, 0 wrong and exit 0.
  coll     2 ranks, 2 % of rank 1's receives: allreduce --check every
           counts wrong iterations and names rank 1 alone; without the
           knob, 0 of n and exit 0.
  doctor   2 host devices, 1 % of device 1's copies: doctor's data check
           FAILs device 1 (checked again), passes device 0, exit 1.
  remote   2 ranks, get and put --check every -n 30: every timed transfer
           checked, 0 wrong, by both methods.
  engine   selftest --check every --loops 5: every loop of every block size,
           read and write, sync and async, checked: 0 of 5 wrong.
"""
import json
import os
import subprocess
import sys
import tempfile

xb, mpiexec, scenario = sys.argv[1:4]


def run(cmd, knob=None, devices=None, want_rc=None):
    env = dict(os.environ)
    env.pop("XFERBENCH_HOST_CORRUPT", None)
    if knob:
        env["XFERBENCH_HOST_CORRUPT"] = knob
    if devices:
        env["XFERBENCH_HOST_DEVICES"] = str(devices)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        p = subprocess.run(cmd + ["--format", "json", "-o", out, "-q"], env=env,
                           capture_output=True, text=True, timeout=300)
        if want_rc is not None and p.returncode != want_rc:
            sys.exit(f"FAIL: {' '.join(cmd)} (knob {knob}): exit {p.returncode}, expected "
                     f"{want_rc}\n{p.stdout}{p.stderr}")
        return json.load(open(out))


def holds(r, rate):
    return r["wrong_rate_lo"] <= rate <= r["wrong_rate_hi"]


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)
    print("ok:", what)


if scenario == "copy":
    cmd = [xb, "copy", "--backend", "host", "-t", "d2d", "-s", "64K", "--method", "dma",
           "--check", "every", "-n", "2000"]
    doc = run(cmd, knob="1%:1", devices=2, want_rc=1)
    by_dev = {r["src"]: r for r in doc["results"]}
    d0, d1 = by_dev[0], by_dev[1]
    check(d1["status"] == "failed" and d1["checked_iters"] == 2000 and d1["wrong_iters"] > 0,
          f"device 1: {d1['wrong_iters']} of {d1['checked_iters']} wrong, failed")
    check(holds(d1, 0.01), f"device 1's interval {d1['wrong_rate_lo']:.4f}-"
          f"{d1['wrong_rate_hi']:.4f} holds 1 %")
    check(d1["first_bad"].startswith("iteration ") and "device 1, byte " in d1["first_bad"]
          and "(xor 0x" in d1["first_bad"], "device 1's first bad: " + d1["first_bad"])
    check("device 1" in d1["reason"] and "95 % interval" in d1["reason"], "its reason says so")
    check(d1["gbps"]["median"] > 0 and d1["time_us"]["median"] > 0, "its times are kept")
    check(d0["status"] == "ok" and d0["wrong_iters"] == 0 and d0["wrong_rate_lo"] == 0
          and 0.0018 < d0["wrong_rate_hi"] < 0.0020, "device 0: 0 of 2000, below 0.19 %")
    clean = run(cmd, devices=2, want_rc=0)
    check(all(r["wrong_iters"] == 0 and r["checked_iters"] == 2000 and r["verified"]
              for r in clean["results"]), "no knob: 0 wrong with its interval")
    # A group's sum (all_to_host: every device at once) is checked in its own batch.
    group = run([xb, "copy", "--backend", "host", "-t", "all_to_host", "-s", "64K", "--method",
                 "dma", "--check", "every", "-n", "300"], knob="2%:1", devices=2, want_rc=1)
    legs = {r["src"]: r for r in group["results"] if r["case"] == "all_to_host"}
    (total,) = [r for r in group["results"] if r["case"] == "all_to_host_total"]
    check(legs[0]["wrong_iters"] == 0 and legs[1]["wrong_iters"] > 0, "all_to_host: device 1's leg")
    check(total["checked_iters"] == 300 and total["wrong_iters"] > 0
          and "device 1 -> host" in total["first_bad"], "the sum's own batch: "
          f"{total['wrong_iters']} of 300, first on device 1")
    last = run(cmd[:-4] + ["-n", "20"], devices=2, want_rc=0)
    check(all("checked_iters" not in r for r in last["results"]),
          "--check last (the default) adds no fields")
elif scenario == "coll":
    cmd = [mpiexec, "-n", "2", xb, "coll", "allreduce", "--backend", "host", "-s", "256K",
           "--check", "every", "-n", "400"]
    doc = run(cmd, knob="2%:rank1", want_rc=1)
    for r in doc["results"]:
        check(r["status"] == "failed" and r["wrong_iters"] > 0 and r["checked_iters"] == 400,
              f"{'in place' if r['inplace'] else 'out of place'}: {r['wrong_iters']} of 400 wrong")
        check(holds(r, 0.02), f"interval {r['wrong_rate_lo']:.4f}-{r['wrong_rate_hi']:.4f} "
              "holds 2 %")
        check(r["wrong_ranks"].startswith("rank 1 (") and "rank 0" not in r["wrong_ranks"],
              "names rank 1 alone: " + r["wrong_ranks"])
        check(", rank 1 (" in r["first_bad"] and "element " in r["first_bad"],
              "first bad: " + r["first_bad"])
    clean = run(cmd, want_rc=0)
    check(all(r["wrong_iters"] == 0 and r["checked_iters"] == 400 and r["wrong"] == 0
              for r in clean["results"]), "no knob: 0 of 400")
    check("barrier" in clean["params"]["timed_by"], "timed_by says how: "
          + clean["params"]["timed_by"])
elif scenario == "doctor":
    cmd = [xb, "doctor", "--quick", "--backend", "host", "--checks", "data"]
    doc = run(cmd, knob="1%:1", devices=2, want_rc=1)
    rows = {r["method"]: r for r in doc["results"] if r["case"] == "data"}  # method: where
    check(rows["device 1"]["verdict"] == "FAIL", "device 1 FAIL: " + rows["device 1"]["why"])
    check("checked again" in rows["device 1"]["why"] and "first: iteration" in
          rows["device 1"]["why"], "with the evidence and its re-check")
    check(rows["device 0"]["verdict"] == "PASS", "device 0 PASS: " + rows["device 0"]["why"])
elif scenario == "remote":
    cmd = [mpiexec, "-n", "2", xb, "remote", "--backend", "host", "--op", "get,put", "-s", "64K",
           "--check", "every", "-n", "30"]
    doc = run(cmd, want_rc=0)
    check(len(doc["results"]) == 4 and all(
        r["status"] == "ok" and r["checked_iters"] == 30 and r["wrong_iters"] == 0
        and r["iters"] == 30 for r in doc["results"]), "get and put, dma and core: 0 of 30 wrong")
elif scenario == "engine":
    doc = run([xb, "engine", "selftest", "--backend", "host", "-t", "1M", "--block-steps", "2",
               "--loops", "5", "--check", "every"], want_rc=0)
    check(len(doc["results"]) == 8 and all(
        r["status"] == "ok" and r["checked_iters"] == 5 and r["wrong_iters"] == 0
        and r["verified"] for r in doc["results"]), "read and write, sync and async: 0 of 5 wrong")
else:
    sys.exit("unknown scenario " + scenario)
