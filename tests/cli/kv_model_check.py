#!/usr/bin/python3
"""`xferbench kv --model` under mpiexec (kv_model_check.py MPIEXEC XFERBENCH CASE):
  shapes   -n 2, llama-3.1-70b TP8, 16-token pages, 8192 tokens: the block layout
           moves 4096 descriptors (8 shards x 512 pages) of exactly 640 KiB (80
           layers x 8 KiB), the request's bytes (80 x 2 x 8 heads x 128 x 2 B per
           token); the layer layout (at 2048 tokens) 8 KiB descriptors, 80x as many
           per page; both verified
  bursts   -n 2, bursts 1 and 4, pull and push, plain and --fragment: every row
           verified; the per-request and per-burst figures are there and ordered;
           --fragment raises descriptors per request, bytes unchanged; --prefill-tps
           gives the share
  hetero   -n 2, TP8 -> TP4 (pull) and TP4 -> TP8 (push): every head slice where
           the decode shard holds it (the pattern names the head), 4 descriptors
           per (page, layer, decode shard)
  mla3     -n 3 (1 prefill, 2 decode), deepseek-v3 fp8, PP8, 256-token pages:
           kvbench's 1,179,648-byte descriptor, TP2 -> TP4 verified
  corrupt  -n 2, XFERBENCH_TEST_KV_CORRUPT=1: one byte counted, the row failed, exit 1"""
import json, os, subprocess, sys, tempfile

mpiexec, xb, case = sys.argv[1], sys.argv[2], sys.argv[3]


def run(n, args, env=None, rc=0):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "kv.json")
        cmd = [mpiexec, "-n", str(n), xb, "kv", "--backend", "host"] + args
        p = subprocess.run(cmd + ["--format", "json", "-o", out, "-q"], capture_output=True,
                           text=True, timeout=280, env=dict(os.environ, **(env or {})))
        assert p.returncode == rc, (cmd, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        return json.load(open(out))["results"]


def verified(r):
    assert r["status"] == "ok" and r["verified"] is True and r["wrong_bytes"] == 0, r


seventy = ["--model", "llama-3.1-70b", "--page-tokens", "16"]
if case == "shapes":
    (block,) = run(2, seventy + ["--tp", "8", "--layout", "block", "--isl", "8192", "-n", "1", "-w", "0"])
    # the layer layout at a quarter of the prompt (327,680 descriptors at 8192 take long under ASan)
    (layer,) = run(2, seventy + ["--tp", "8", "--layout", "layer", "--isl", "2048", "-n", "1", "-w", "0"])
    for r, isl in ((block, 8192), (layer, 2048)):
        verified(r)
        assert r["request_bytes"] == 80 * 2 * 8 * 128 * 2 * isl == r["bytes"], r
    assert block["desc_bytes"] == 640 * 1024 and block["descs"] == 8 * 512, block
    assert layer["desc_bytes"] == 8 * 1024 and layer["descs"] == 80 * block["descs"] // 4, layer
    print("ok: 640 KiB x 4096 and 8 KiB x 327680, 2.68 GB verified")
elif case == "bursts":
    rows = run(2, seventy + ["--tp", "2", "--isl", "256", "--burst", "1,4", "--op", "both", "-n", "3",
                             "--prefill-tps", "5000"])
    frag = run(2, seventy + ["--tp", "2", "--isl", "256", "--burst", "4", "--op", "both", "-n", "3",
                             "--fragment"])
    assert len(rows) == 4 and len(frag) == 2, (len(rows), len(frag))
    for r in rows + frag:
        verified(r)
        assert 0 < r["handoff_p50_us"] <= r["handoff_p99_us"] <= r["handoff_max_us"], r
        assert r["handoff_max_us"] <= r["time_us"]["max"] * 1.0001, r  # a burst ends with its last request
        assert r["bytes"] == r["request_bytes"] * r["burst"], r
        assert r["rank_gbps"] > 0 and r["ceiling_ratio"] > 0, r
    assert {(r["case"], r["burst"]) for r in rows} == {("pull", 1), ("push", 1), ("pull", 4), ("push", 4)}
    for r in rows:
        assert abs(r["prefill_share"] - r["handoff_p50_us"] / (256 / 5000 * 1e6)) < 1e-9, r
    plain = [r for r in rows if r["burst"] == 4]
    for a, b in zip(plain, frag):
        assert b["descs"] > 20 * a["descs"] and b["request_bytes"] == a["request_bytes"], (a, b)
    print("ok: bursts, pull and push, fragmented pools verified")
elif case == "hetero":
    (down,) = run(2, seventy + ["--tp", "8", "--decode-tp", "4", "--isl", "128", "-n", "2"])
    (up,) = run(2, seventy + ["--tp", "4", "--decode-tp", "8", "--isl", "128", "-n", "2", "--op", "push"])
    for r in (down, up):
        verified(r)
        assert r["request_bytes"] == 80 * 2 * 8 * 128 * 2 * 128, r
    assert down["descs"] == 4 * 8 * 80 * 4, down  # 4 shards x 8 pages x 80 layers x (2 sources x K, V)
    assert up["descs"] == 8 * 8 * 80 * 2, up      # 8 shards x 8 pages x 80 layers x (K, V)
    print("ok: TP8 -> TP4 and TP4 -> TP8 head slices verified")
elif case == "mla3":
    rows = run(3, ["--model", "deepseek-v3", "--kv-dtype", "fp8", "--pp", "8", "--page-tokens", "256",
                   "--isl", "4096", "--tp", "2", "--decode-tp", "4", "-n", "2", "--op", "both"])
    for r in rows:
        verified(r)
        assert r["desc_bytes"] == 1179648, r
        assert r["request_bytes"] == 4 * 16 * 61 * 576 * 256, r
    print("ok: DeepSeek MLA at kvbench's descriptor, TP2 -> TP4 on 1 + 2 ranks")
elif case == "corrupt":
    for op in ("pull", "push"):
        (r,) = run(2, seventy + ["--tp", "2", "--isl", "64", "-n", "1", "--op", op],
                   env={"XFERBENCH_TEST_KV_CORRUPT": "1"}, rc=1)
        assert r["status"] == "failed" and r["wrong_bytes"] == 1 and r["verified"] is False, r
    print("ok: one flipped byte counted, pull and push")
elif case == "every":
    base = seventy + ["--tp", "2", "--isl", "64", "-n", "4", "--check", "every"]
    for op in ("pull", "push"):
        (r,) = run(2, base + ["--op", op])
        assert r["status"] == "ok" and r["checked_iters"] == 4 and r["wrong_iters"] == 0, r
        (r,) = run(2, base + ["--op", op], env={"XFERBENCH_TEST_KV_CORRUPT": "1"}, rc=1)
        assert r["checked_iters"] == 4 and r["wrong_iters"] == 4 and r["wrong_bytes"] == 1, r
        assert r["first_bad"].startswith("iteration 0, rank 1 (") and "xor 0x01" in r["first_bad"], r
    print("ok: every timed round checked, pull and push; the seam's byte in each")
else:
    sys.exit("unknown case " + case)
