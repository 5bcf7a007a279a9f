#!/usr/bin/python3
"""`xferbench ep` under mpiexec (ep_check.py MPIEXEC XFERBENCH CASE):
  default4  -n 4, the default decode ladder: 30 records (10 steps x dispatch,
            combine, roundtrip), every one ok, verified, #wrong 0; fresh MAX >=
            MIN, chained figures, payload and logical GB/s; local + node +
            remote = payload; DeepEP's logical bytes = ranks x tokens x 8 x
            7408 (fp8) or x 14336 (combine); recv_counts and expert_rows per
            rank add up to the plan; one trace hash on every record of a step
  zipf      -n 4, --routing zipf:1.2 vs uniform at 256 tokens: the combine's
            imbalance (expert rows) is larger under zipf and names a slowest
            rank; the table prints the rank
  put       -n 2, --method all, bf16 dispatch: alltoallv and put rows, both exact
  corrupt   -n 2, XFERBENCH_TEST_EP_CORRUPT=dispatch, then combine (a test
            knob flips one received element on the last rank): that phase's
            rows and the round trip are failed with #wrong 1, the other phase
            ok; exit 1; with both methods
  every     -n 2, --check every -n 100: 100 checked round trips per step, 0
            wrong without a knob; with XFERBENCH_HOST_CORRUPT=5%:rank1 (a bit
            of what rank 1 receives from MPI_Alltoallv) wrong iterations
            whose interval holds 5 %-ish, the first one on rank 1, exit 1"""
import json, os, subprocess, sys, tempfile

mpiexec, xb, case = sys.argv[1], sys.argv[2], sys.argv[3]


def run(n, args, env=None, rc=0):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "ep.json")
        cmd = [mpiexec, "-n", str(n), xb, "ep", "--backend", "host"] + args
        p = subprocess.run(cmd + ["--format", "json", "-o", out, "-q"], capture_output=True,
                           text=True, timeout=300, env=dict(os.environ, **(env or {})))
        assert p.returncode == rc, (cmd, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        doc = json.load(open(out))
        # compare matches every record with itself on ep's keys, judging payload GB/s
        table = subprocess.run([xb, "compare", out, out], capture_output=True, text=True)
        assert table.returncode == 0, table.stderr
        # ok records, and those failed on wrong data (their times compared, their data shown)
        n = sum(r["status"] == "ok" or r.get("verified") is False for r in doc["results"])
        assert "%d matched, 0 regressions" % n in table.stdout, (n, table.stdout[-800:])
        assert "payload_gbps" in table.stdout, table.stdout[-800:]
        return doc


def exact(r):
    assert r["status"] == "ok", r
    assert r["wrong"] == 0 and r["verified"] is True, r


if case == "default4":
    doc = run(4, ["-n", "3", "-w", "1"])  # the ladder and exactness, not the iteration count
    recs = doc["results"]
    assert len(recs) == 30, len(recs)
    ladder = sorted({r["tokens"] for r in recs})
    assert ladder == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], ladder
    hashes = {}
    for r in recs:
        exact(r)
        t = r["tokens"]
        assert r["fresh_us"] >= r["fresh_min_us"] > 0, r
        assert r["chained_us"] >= r["chained_min_us"] > 0, r
        assert r["payload_gbps"] > 0 and r["logical_gbps"] > 0, r
        assert r["local_bytes"] + r["node_bytes"] + r["remote_bytes"] == r["payload_bytes"], r
        assert r["remote_bytes"] == 0, r  # one host
        assert len(r["recv_counts"]) == 4 and len(r["expert_rows"]) == 4, r
        assert sum(r["expert_rows"]) == 4 * t * 8, r  # every selection returns a row
        assert 4 * t <= sum(r["recv_counts"]) <= 4 * t * 4, r  # each token to 1..4 ranks
        per = {"dispatch": 7408, "combine": 14336, "roundtrip": 7408 + 14336}[r["phase"]]
        assert r["logical_bytes"] == 4 * t * 8 * per, (r["logical_bytes"], t, r["phase"])
        hashes.setdefault(t, set()).add(r["trace_hash"])
        assert r["imbalance"] >= 1, r
    assert all(len(h) == 1 for h in hashes.values()), hashes
    d = [r for r in recs if r["phase"] == "dispatch" and r["tokens"] == 512][0]
    assert d["payload_bytes"] == sum(d["recv_counts"]) * 7408, d
    print("ok: 30 records exact, figures and byte split consistent")
elif case == "zipf":
    flat = run(4, ["--tokens", "256", "-n", "5"])["results"]
    zipf = run(4, ["--tokens", "256", "-n", "5", "--routing", "zipf:1.2"])["results"]
    comb = lambda recs: [r for r in recs if r["phase"] == "combine"][0]
    for r in flat + zipf:
        exact(r)
        assert 0 <= r["slowest_rank"] < 4 and r["slowest_host"], r
    assert comb(zipf)["routing"] == "zipf:1.2", comb(zipf)
    assert comb(zipf)["imbalance"] > comb(flat)["imbalance"] + 0.05, (comb(zipf), comb(flat))
    rows = comb(zipf)["expert_rows"]
    assert max(rows) > 1.1 * min(rows), rows
    print("ok: zipf imbalance", comb(zipf)["imbalance"], "vs", comb(flat)["imbalance"], rows)
elif case == "put":
    recs = run(2, ["--method", "all", "--tokens", "1,64", "--dispatch-dtype", "bf16",
                   "--hidden", "1000", "-n", "4"])["results"]
    assert [r["method"] for r in recs].count("put") == 6, recs
    assert [r["method"] for r in recs].count("alltoallv") == 6, recs
    for r in recs:
        exact(r)
        assert r["dispatch_dtype"] == "bf16" and r["hidden"] == 1000, r
    print("ok: alltoallv and put exact")
elif case == "corrupt":
    for phase in ("dispatch", "combine"):
        recs = run(2, ["--method", "all", "--tokens", "4,16", "-n", "2"],
                   env={"XFERBENCH_TEST_EP_CORRUPT": phase}, rc=1)["results"]
        assert len(recs) == 12, len(recs)
        for r in recs:
            if r["phase"] in (phase, "roundtrip"):
                assert r["status"] == "failed" and r["wrong"] == 1, r
                assert r["verified"] is False and "#wrong = 1" in r["reason"], r
            else:
                exact(r)
    print("ok: one corrupted element counted in dispatch and in combine")
elif case == "every":
    args = ["--tokens", "16", "--check", "every", "-n", "100"]
    for r in run(2, args)["results"]:
        exact(r)
        assert r["checked_iters"] == 100 and r["wrong_iters"] == 0, r
        assert 0 < r["wrong_rate_hi"] < 0.04, r
    recs = run(2, args, env={"XFERBENCH_HOST_CORRUPT": "5%:rank1"}, rc=1)["results"]
    by = {r["phase"]: r for r in recs}
    for p in ("dispatch", "combine", "roundtrip"):
        r = by[p]
        assert r["status"] == "failed" and r["wrong_iters"] > 0 and r["checked_iters"] == 100, r
        assert r["first_bad"].startswith("iteration ") and ", rank 1 (" in r["first_bad"], r
    # a round trip is wrong when either phase is
    assert by["roundtrip"]["wrong_iters"] >= max(by["dispatch"]["wrong_iters"],
                                                 by["combine"]["wrong_iters"]), by
    # every alltoallv on rank 1 draws (dispatch, combine): about 5 % of each phase's calls
    assert by["dispatch"]["wrong_rate_lo"] <= 0.05 <= by["dispatch"]["wrong_rate_hi"] * 1.5, by
    print("ok: 100 checked round trips; the knob's wrong ones counted on rank 1")
else:
    sys.exit("unknown case " + case)
