#!/usr/bin/python3
"""kv under mpiexec -n 3: every record verified, and the summary rows agree
with the per-rank rows (get_avg = mean of the ranks' medians, get_max = max)."""
import json, subprocess, sys, tempfile, os

mpiexec, xb = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "kv.json")
    subprocess.run([mpiexec, "-n", "3", xb, "kv", "--block-bytes", "256K", "--blocks", "4,8", "-n", "3",
                    "--format", "json", "-o", out, "-q"], check=True, timeout=200)
    doc = json.load(open(out))
assert doc["command"] == "kv" and doc["env"]["ranks"] == 3, doc["env"]
res = doc["results"]
for b in (4, 8):
    rows = [r for r in res if r["blocks"] == b]
    gets = [r for r in rows if r["case"] == "get"]
    puts = [r for r in rows if r["case"] == "put"]
    avg = [r for r in rows if r["case"] == "get_avg"]
    mx = [r for r in rows if r["case"] == "get_max"]
    assert sorted(r["src"] for r in gets) == [0, 1, 2], gets
    assert len(puts) == 1 and len(avg) == 1 and len(mx) == 1, rows
    assert all(r["status"] == "ok" and r["verified"] for r in rows), rows
    assert all(r["bytes"] == b * 256 * 1024 for r in gets), gets
    assert puts[0]["bytes"] == 2 * b * 256 * 1024, puts
    meds = [r["time_us"]["median"] for r in gets]
    assert abs(avg[0]["time_us"]["median"] - sum(meds) / 3) < 1e-6 * max(meds), (avg, meds)
    assert abs(mx[0]["time_us"]["median"] - max(meds)) < 1e-9, (mx, meds)
print("ok: kv summary agrees with the per-rank rows")
