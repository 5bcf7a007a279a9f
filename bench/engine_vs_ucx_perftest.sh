#!/usr/bin/env bash
# Side by side, in one invocation: `xferbench engine client` against an
# engine server, and ucx_perftest (Debian ucx-utils) on the same sizes,
# iterations and transports: sync requests of one block (-t = -k, one buffer
# reused, as ucx_perftest does; each xferbench write is flushed, ucp_put_bw
# flushes late). Transports (UCX_TLS as given, default: UCX's choice;
# run it again with UCX_TLS=tcp for the TCP transports). Prints GB/s and the
# ratio of the median rounds (each round: xferbench's median transfer,
# ucx_perftest's average); the target is >= 0.95 for read and for write at
# 4 MiB, and the exit status is 1 when it is missed. The last line,
# "headline: R" (the lower of the two), is what bench/repeat.sh collects.
#
#   [UCX_TLS=tcp] bench/engine_vs_ucx_perftest.sh [XFERBENCH] [ITERS] [ROUNDS]
# ROUNDS interleaved rounds (default 5).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
iters=${2:-200}
rounds=${3:-5}
sizes=(1048576 2097152 4194304 8388608 16777216)
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing (apt-get install ucx-utils)"; exit 2; }
[ -x "$xb" ] || { echo "build first (make build)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null || true' EXIT
port=$((20000 + RANDOM % 20000))

export XFERBENCH_TOKEN=$("$xb" engine serve --help >/dev/null && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
for r in $(seq 1 "$rounds"); do
for op in read write; do
  for s in "${sizes[@]}"; do
    "$xb" engine serve --listen 127.0.0.1:$port --size $s --accept-wait 60 2>>"$tmp/server.log" &
    "$xb" engine client --connect 127.0.0.1:$port --op $op -t $s -k $s \
      --loops "$iters" -w 10 --format json -o "$tmp/xb_${op}_${s}_$r.json" -q
    wait $!
    pt=$((port + 1))
    test=ucp_get; [ $op = write ] && test=ucp_put_bw
    ucx_perftest -p $pt >/dev/null 2>&1 &
    sleep 0.3
    ucx_perftest -p $pt 127.0.0.1 -t $test -s $s -n "$iters" 2>/dev/null | grep '^Final' > "$tmp/pt_${op}_${s}_$r.txt" || true
    wait $! 2>/dev/null || true
  done
done
done
wait
/usr/bin/python3 - "$tmp" "${UCX_TLS:-default}" "$rounds" "${sizes[@]}" <<'PY'
import json, statistics, sys
tmp, tls, rounds, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(s) for s in sys.argv[4:]]
print(f"UCX_TLS={tls}: one-sided transfers of one block, same iterations, median of {rounds} rounds (GB/s, 1e9 B/s)")
print(f"{'op':>6} {'size':>10} {'xferbench':>10} {'perftest':>9} {'ratio':>6} {'spread':>13}  transports")
judged = {}
for op, test in (("read", "ucp_get"), ("write", "ucp_put_bw")):
    for s in sizes:
        xb, pt = [], []
        for k in range(1, rounds + 1):
            d = json.load(open(f"{tmp}/xb_{op}_{s}_{k}.json"))
            r = d["results"][0]
            assert r["status"] == "ok" and r["verified"], r
            xb.append(r["gbps"]["median"])
            line = open(f"{tmp}/pt_{op}_{s}_{k}.txt").read().split()
            if len(line) > 5:
                pt.append(float(line[5]) * 1048576 / 1e9)  # perftest's MB/s are MiB/s
        a = statistics.median(xb)
        b = statistics.median(pt) if pt else float("nan")
        ratios = [x / p for x, p in zip(xb, pt)] if pt else [float("nan")]
        spread = f"{min(ratios):.2f}..{max(ratios):.2f}"
        if s == 4 << 20: judged[op] = a / b
        print(f"{op:>6} {s:>10} {a:>10.2f} {b:>9.2f} {a / b:>6.2f} {spread:>13}  {d['summary']['transports']}")
worst = min(judged.values())
print("ratio at 4 MiB, median rounds: " + ", ".join(f"{k} {v:.3f}" for k, v in judged.items()) +
      f"  target >= 0.95: {'PASS' if worst >= 0.95 else 'MISS'}")
print(f"headline: {worst:.3f}")
sys.exit(0 if worst >= 0.95 else 1)
PY
