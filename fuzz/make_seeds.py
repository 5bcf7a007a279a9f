#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (valid and invalid
inputs; the JSON ones from tests/golden/). Run from anywhere; rewrites only
the seed_* files it owns, so inputs added by hand stay."""
import pathlib
import re
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
GOLDEN = ROOT / "tests" / "golden"

# The frame version this tree speaks (engine/wire.hpp), so the seeds follow a bump.
VERSION = int(re.search(r"kProtocolVersion = (\d+);",
                        (ROOT / "src" / "engine" / "wire.hpp").read_text()).group(1))
TYPES = {"hello": 1, "accept": 2, "reject": 3, "verify": 4, "verified": 5, "bye": 6}


def u64(v):
    return struct.pack("<Q", v)


def s(b):
    return u64(len(b)) + b


def frame(t, payload, version=VERSION, magic=b"XBEN", length=None):
    n = len(payload) if length is None else length
    return magic + struct.pack("<HHI", version, TYPES.get(t, t) if isinstance(t, str) else t, n) + payload


def descriptor(addr=b"ucx-worker-addr", rkey=b"rkey", base=0x7F0000000000, length=1 << 20, off=0,
               ipc=b"", ipc_size=0, ipc_offset=0, node=b"boot-id"):
    return (s(addr) + s(rkey) + u64(base) + u64(length) + u64(off) + s(ipc) + u64(ipc_size) +
            u64(ipc_offset) + s(node))


def seeds():
    d = descriptor()
    yield "wire_descriptor", {
        "valid": d,
        "valid_offset": descriptor(b"\x00\x01\x02", b"\xff" * 40, 4096, 4096, 1 << 20),
        "empty": b"",
        "truncated": d[:-3],
        "trailing": d + b"x",
        "no_address": descriptor(addr=b""),
        "overflow": descriptor(base=(1 << 64) - 16, length=32),
        "ipc_only": descriptor(rkey=b"", ipc=b"\x01" * 64, ipc_size=4 << 20, ipc_offset=1 << 20),
        "ipc_outside": descriptor(rkey=b"", ipc=b"\x01" * 64, ipc_size=1 << 20, ipc_offset=4096),
        "no_key_no_ipc": descriptor(rkey=b""),
        "huge_string": u64(1 << 40) + b"abc",
    }
    yield "wire_frame", {
        "hello": frame("hello", s(b"token") + s(b"digest") + s(b"host")),
        "accept": frame("accept", d),
        "reject": frame("reject", b"wrong token"),
        "verify": frame("verify", u64(0) + u64(4096) + u64(0xC11E47)),
        "verified": frame("verified", u64((1 << 64) - 1)),
        "bye": frame("bye", b""),
        "bad_magic": frame("bye", b"", magic=b"XBEM"),
        "bad_version": frame("bye", b"", version=VERSION + 1),
        "bad_type": frame(7, b""),
        "oversized": frame("reject", b"", length=(1 << 20) + 1),
        "short_payload": frame("reject", b"abc", length=10),
        "short_header": b"XBEN\x01\x00",
    }
    yield "wire_reader", {
        # byte 0: number of operations; then operations (o % 3: u64, str, done); then the message
        "str_str_done": bytes([3, 1 + 3 * 3, 1 + 3 * 3, 2]) + s(b"tok") + s(b"dig"),
        "hello": bytes([4, 1 + 3 * 3, 1 + 3 * 3, 1 + 3 * 3, 2]) + s(b"tok") + s(b"dig") + s(b"host"),
        "u64x3_done": bytes([4, 0, 0, 0, 2]) + u64(1) + u64(2) + u64(3),
        "descriptor": bytes([6, 1 + 3 * 4, 1 + 3 * 4, 0, 0, 0, 2]) + d,
        "str_too_long": bytes([1, 1 + 3 * 1]) + s(b"abcd"),
        "truncated": bytes([2, 0, 0]) + b"\x01\x02\x03",
        "empty": b"",
    }
    # the hello: token, digest, region kind (protocol 2)
    hello = frame("hello", s(b"0123456789abcdef0123456789abcdef") + s(b"client digest") + s(b"host"))
    yield "handshake", {
        "session": hello + frame("verify", u64(0) + u64(4096) + u64(0xC11E47)) + frame("bye", b""),
        "hello_only": hello,
        "verify_first": frame("verify", u64(0) + u64(1) + u64(2)),
        "verify_outside": hello + frame("verify", u64(1 << 20) + u64(1) + u64(0)),
        "verify_wrap": hello + frame("verify", u64(4096) + u64((1 << 64) - 4096) + u64(0)),
        "hello_trailing": frame("hello", s(b"t") + s(b"d") + s(b"device") + b"x"),
        "hello_v1": frame("hello", s(b"t") + s(b"d")),
        "hello_need": frame("hello", s(b"t") + s(b"d") + s(b"host") + u64(1 << 30)),
        "hello_long_kind": frame("hello", s(b"t") + s(b"d") + s(b"k" * 65)),
        "client_view": frame("accept", d) + frame("verified", u64(5)) + frame("reject", b"full"),
        "cut_short": hello[:20],
        "garbage": b"GET / HTTP/1.1\r\n\r\n",
    }
    yield "endpoint_token", {
        "ipv4": b"127.0.0.1:20000\x000123456789abcdef\n",
        "ipv6": b"[::1]:0\x00token \r\n",
        "name": b"node1:65535",
        "port_high": b"node1:65536",
        "no_host": b":80",
        "no_port": b"node1:\x00\n",
        "negative": b"node1:-1",
        "empty_file": b"h:1\x00",
        "binary_token": b"h:1\x00ab\x00\xff\n",
        "blank_token": b"h:1\x00 \r\n",
    }
    yield "size", {
        "bytes": b"4096", "k": b"4K", "kib": b"4KiB", "kb": b"4kb", "m": b"1M", "gb": b"2GB",
        "tib": b"16TiB", "max": b"18446744073709551615", "over": b"18446744073709551616",
        "over_unit": b"17179869184G", "zero": b"0", "neg": b"-1", "unit_only": b"K",
        "bad_unit": b"4X", "space": b"4 KiB", "empty": b"",
    }
    yield "sweep", {
        "default": b"", "factor": b"4K 256M 2", "step": b"1 100  1", "fixed_point": b"4K 4K",
        "frac": b"1 1000 1.5", "both": b"1 10 2 1", "min_gt_max": b"1M 1K", "slow": b"1 1T 1.0001",
        "big": b"8E 16E 2", "many": b"1 1M  1",
    }
    yield "dtype", {
        "float": b"\x00float", "all": b"\x00all", "list": b"\x00int8,half,bf16,double",
        "dup": b"\x00float,float,all", "empty_items": b"\x00,,", "unknown": b"\x00fp8",
        "ops": b"\x01sum,max", "ops_all": b"\x01all", "op_bad": b"\x01xor", "none": b"\x01",
    }
    yield "option_list", {
        "ops": b"\x00get,put", "dup": b"\x00get,put,get", "empty": b"\x00", "hole": b"\x00a,,b",
        "trailing": b"\x00a,", "counts": b"\x011,2,4", "count_dup": b"\x014,4,8", "count_zero": b"\x010",
        "count_big": b"\x01100001", "index": b"\x020,1", "index_neg": b"\x02-1",
        "duration": b"\x0330s", "duration_ms": b"\x03500ms", "duration_nan": b"\x03nan",
        "duration_inf": b"\x031e999h",
    }
    golden = {p.stem: p.read_bytes() for p in [GOLDEN / "coll.json", GOLDEN / "v1" / "remote.json",
                                                GOLDEN / "v1" / "gemm-ar.json", GOLDEN / "v1" / "copy.json"]}
    yield "result", {
        "coll": golden["coll"], "remote_v1": golden["remote"], "gemm_ar_v1": golden["gemm-ar"],
        "copy_v1": golden["copy"], "not_json": b"{\"schema\": ", "array": b"[]",
        "other_schema": b'{"schema": "xferbench/2", "results": [1]}',
        "no_results": b'{"schema": "xferbench/1", "results": []}',
        "minimal": b'{"schema": "xferbench/1", "command": "copy", "results": [{}]}',
        "csv": b"command,case,method,src,dst,bytes,iters,status,reason,verified,time_us_min,"
               b"time_us_median,time_us_mean,time_us_max,time_us_p99,time_us_cv,gbps_median,gbps_max,threads\n"
               b"copy,d2d,dma,0,0,4096,5,ok,\"a, \"\"quoted\"\" reason\",true,1,2,2,3,3,0.1,2.05,4.1,2\n",
        "jsonl_cut": b'{"schema":"xferbench/1","command":"copy","format":"jsonl","params":{}}\n'
                     b'{"case":"d2d","method":"dma","bytes":4096,"status":"ok","gbps":{"median":2}}\n'
                     b'{"case":"d2d","meth',
    }
    yield "compare", {
        "coll_self": b"5%\x00" + golden["coll"] + b"\x00" + golden["coll"],
        "copy_self": b"0.05\x00" + golden["copy"] + b"\x00" + golden["copy"],
        "gemm_ar": b"10%\x00" + golden["gemm-ar"] + b"\x00" + golden["gemm-ar"],
        "mixed": b"5%\x00" + golden["coll"] + b"\x00" + golden["remote"],
        "minimal": b"1%\x00" + b'{"schema":"xferbench/1","command":"copy","results":[{"status":"ok","gbps":{"median":2}}]}'
                   + b"\x00" + b'{"schema":"xferbench/1","command":"copy","results":[{"status":"ok","gbps":{"median":1}}]}',
        "bad_threshold": b"150%\x00{}\x00{}",
    }


def main():
    for target, files in seeds():
        d = HERE / "corpus" / target
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("seed_*"):
            old.unlink()
        for name, data in files.items():
            (d / f"seed_{name}").write_bytes(data)
        print(f"{target}: {len(files)} seeds")


if __name__ == "__main__":
    main()
