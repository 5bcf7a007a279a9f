#!/usr/bin/python3
"""coll's newer collectives under mpiexec (coll_check.py MPIEXEC XFERBENCH CASE):
  alltoallv  -n 3, --skew zipf:1.2 and hot:1:0.5, 4K..4M: every out-of-place
             record ok with #wrong 0, the skew and a 3x3 pair_counts whose rows
             sum to the size's elements; in place waived with the reason
  gather     -n 2, gather,scatter -r 1: every record ok and verified
  slowest    -n 2, allreduce --samples with rank 1 slowed by the test knob
             XFERBENCH_TEST_SLOW_RANK: JSON names rank 1 and its host on every
             record, with every iteration of both ranks; the table says
             "slowest: rank 1 (host ...)"; without the knob nobody is named
  ranks5     -n 5, allgather,reducescatter,alltoall,gather,scatter -b 8 -e 1M:
             every size rounded down to a multiple of 5 elements (the bytes
             moved), #wrong 0; the sizes below 5 floats waived saying so
  ranks3     -n 3, all collectives, 4K..1M: the same at 3 ranks"""
import json, os, socket, subprocess, sys, tempfile

mpiexec, xb, case = sys.argv[1], sys.argv[2], sys.argv[3]


def run(n, args, env=None, want_json=True):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        cmd = [mpiexec, "-n", str(n), xb, "coll", "--backend", "host"] + args
        if want_json:
            cmd += ["--format", "json", "-o", out, "-q"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=200,
                           env=dict(os.environ, **(env or {})))
        assert p.returncode == 0, (cmd, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        return json.load(open(out)) if want_json else p.stdout


def ok(r):
    assert r["status"] == "ok", r
    assert r["wrong"] == 0 and r["verified"] is True, r


if case == "alltoallv":
    for skew in ("zipf:1.2", "hot:1:0.5"):
        doc = run(3, ["alltoallv", "--skew", skew, "-b", "4K", "-e", "4M", "-n", "3", "-w", "1"])
        recs = doc["results"]
        assert recs, doc
        outs = [r for r in recs if not r["inplace"]]
        assert len(outs) == 6, [r["bytes"] for r in outs]  # 4K, 16K, ... 4M
        for r in outs:
            ok(r)
            assert r["skew"] == skew, r
            pc = r["pair_counts"]
            assert len(pc) == 9, pc
            for s in range(3):
                assert sum(pc[3 * s:3 * s + 3]) == r["bytes"] // 4, (pc, r["bytes"])
            cols = [sum(pc[3 * s + d] for s in range(3)) for d in range(3)]
            assert max(cols) > min(cols), ("skew visible", skew, cols)
        for r in recs:
            if r["inplace"]:
                assert r["status"] == "waived" and "no in-place form" in r["reason"], r
    print("ok: alltoallv zipf:1.2 and hot:1:0.5 exact, pair counts in JSON")
elif case in ("ranks5", "ranks3"):
    n = int(case[-1])
    split = {"allgather", "reducescatter", "alltoall", "gather", "scatter"}
    if n == 5:
        doc = run(5, [",".join(sorted(split)), "-b", "8", "-e", "1M", "-f", "4", "-n", "1", "-w", "0"])
    else:
        doc = run(3, ["all", "-b", "4K", "-e", "1M", "-f", "4", "-n", "2", "-w", "1"])
    assert doc["env"]["ranks"] == n, doc["env"]
    asked = [int(b) for b in doc["params"]["sizes"].split(",")]
    for r in doc["results"]:
        if r["status"] == "waived":
            if "no in-place form" in r["reason"]:
                continue
            assert "holds no whole element" in r["reason"], r
            assert r["bytes"] < 4 * n, r
            continue
        ok(r)
        unit = 4 * n if r["case"] in split else 4
        assert r["bytes"] % unit == 0, (r["case"], r["bytes"], unit)
        assert any(0 <= a - r["bytes"] < unit for a in asked), (r["bytes"], asked)
    moved = {r["case"] for r in doc["results"] if r["status"] == "ok"}
    assert split <= moved, moved
    print(f"ok: {len(doc['results'])} records at {n} ranks, sizes rounded to what moved, #wrong 0")
elif case == "gather":
    doc = run(2, ["gather,scatter", "-r", "1", "-b", "4K", "-e", "1M", "-f", "16", "-n", "3"])
    cases = {r["case"] for r in doc["results"]}
    assert cases == {"gather", "scatter"}, cases
    for r in doc["results"]:
        ok(r)
        assert r["src"] == 1, r
    print("ok: gather and scatter exact on MPI")
elif case == "slowest":
    knob = {"XFERBENCH_TEST_SLOW_RANK": "1:3000"}
    args = ["allreduce", "-b", "4K", "-e", "64K", "-f", "16", "-n", "8", "-w", "1"]
    doc = run(2, args + ["--samples"], knob)
    host = socket.gethostname()
    named = 0
    for r in doc["results"]:
        ok(r)
        assert r["slowest_rank"] == 1 and r["slowest_host"] == host, r
        named += r["rank_spread"] >= 1.25 and r["slowest_share"] >= 0.5
        assert len(r["samples_us"]) == 2 * 8 and len(r["in_call_us"]) == 2 * 8, r
        assert len(r["rank_median_us"]) == 2, r
    assert named >= len(doc["results"]) / 2, doc["results"]
    table = run(2, args, knob, want_json=False)
    assert "# slowest: rank 1 (host " + host in table, table
    calm = run(2, args, want_json=False)
    assert "# slowest:" not in calm, calm
    print("ok: the slowed rank is named in JSON and in the table, nobody without the knob")
else:
    sys.exit("unknown case " + case)
