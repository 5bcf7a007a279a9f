#!/usr/bin/python3
"""remote --window under mpiexec -n 2 (window_check.py MPIEXEC XFERBENCH TRANSPORT):
every record verified, with window echoed, bytes = window x a swept size,
msg_rate = window / median time and GB/s = bytes / median time; the table
shows the Mmsg/s columns; a run without --window has neither field."""
import json, os, subprocess, sys, tempfile

mpiexec, xb, transport = sys.argv[1], sys.argv[2], sys.argv[3]
W = 64
SIZES = {8, 64, 512, 4096}


def run(args, out=None):
    cmd = [mpiexec, "-n", "2", xb, "remote", "--backend", "host", "--transport", transport] + args
    if out:
        cmd += ["--format", "json", "-o", out, "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=200)
    assert p.returncode == 0, (cmd, p.returncode, p.stderr)
    return json.load(open(out)) if out else p.stdout


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


with tempfile.TemporaryDirectory() as d:
    win = run(["--window", str(W), "--op", "get,put", "-b", "8", "-e", "4K", "-f", "8", "-n", "50"],
              os.path.join(d, "w.json"))
    plain = run(["--op", "get", "-b", "8", "-e", "4K", "-f", "8", "-n", "20"], os.path.join(d, "p.json"))
    table = run(["--window", "16", "-s", "64", "-n", "20"])

res = win["results"]
assert len(res) == 2 * 2 * len(SIZES), len(res)  # ops x methods x sizes
assert ("window", W) in [tuple(p) for p in win["params"].items()], win["params"]
for r in res:
    what = f"{r['case']} {r['method']} {r['bytes']}"
    assert r["status"] == "ok" and r["verified"] is True, (what, r.get("reason"))
    assert r["transport"] == transport, (what, r["transport"])
    assert r["window"] == W, (what, r.get("window"))
    assert r["bytes"] % W == 0 and r["bytes"] // W in SIZES, what
    med = r["time_us"]["median"]
    assert med > 0 and r["msg_rate"] > 0, (what, med, r["msg_rate"])
    assert close(r["msg_rate"], W * 1e6 / med), (what, r["msg_rate"], W * 1e6 / med)
    assert close(r["gbps"]["median"], r["bytes"] / (med * 1e3)), (what, r["gbps"], med)
    assert r["iters"] == 50, what
assert sorted({r["bytes"] // W for r in res}) == sorted(SIZES)

for r in plain["results"]:
    assert "msg_rate" not in r and "window" not in r, r
    assert r["bytes"] in SIZES, r["bytes"]
assert "window" not in plain["params"], plain["params"]

assert "window 16" in table and "core Mmsg/s" in table and "dma Mmsg/s" in table, table
assert "Mmsg/s = N / median time" in table, table
print(f"ok: remote --window {W} over {transport}: {len(res)} records, msg_rate = window / median")
