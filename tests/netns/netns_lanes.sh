#!/usr/bin/env bash
# The engine's lanes across two hosts joined by two links, one of them shaped
# (tc tbf): netns_lanes.sh XFERBENCH
#
# Host a (a network namespace) and host b, each with two veths: xb0
# (10.78.0.0/24) and xb1 (10.78.1.0/24); xb1 is shaped to NETNS_LANES_RATE
# (default 200mbit) on both ends. UCX_TLS=tcp keeps the engine on the links
# (the namespaces share /dev/shm). On host a, one engine server per link,
# each listening on that link's address with UCX_NET_DEVICES set to it.
#  1. engine client on b: --connect both servers --nic xb0,xb1 (a lane per
#     NIC): the xb1 lane's figure is the shaped rate, the xb0 lane's is not,
#     the total's bytes are both lanes', every record verified; each lane's
#     NIC counters (nic_rx_bytes) hold the bytes of its timed loops, within
#     10 % (TCP/IP headers), and no lane is warned about.
#  2. doctor on b: --checks engine --engine-server both --nic xb0,xb1: exit 1,
#     the xb1 lane FAIL, named, the xb0 lane not FAIL; each row says what its
#     NIC counted over the lane's loops (the lane's bytes).
#  3. a lane given --nic xb0 to the server on xb1's address: the kernel routes
#     it through xb1 whatever the NIC (UCX's TCP transport does not bind its
#     socket to the device), so its record carries nic_warning naming xb1,
#     stderr has the WARN, and its xb0 counters moved almost nothing.
# (One server on both links with --lanes 2 --nic xb0,xb1 to one address does
# not separate the links over TCP: UCX's TCP transport picks the source and
# destination addresses itself, and both lanes ended on one link in a trial,
# with and without source policy routing. Over TCP, give each link its own
# server address; RDMA ports carry a lane's traffic on its own port.)
# Skips (77) without root, namespaces, veths or tbf.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
xb=${1:-$root/build/default/xferbench}
rate=${NETNS_LANES_RATE:-200mbit}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null || skip "iproute2's ip is not installed"
command -v tc >/dev/null || skip "iproute2's tc is not installed"
[ -x "$xb" ] || skip "no xferbench binary at $xb (build it first)"
xb=$(readlink -f "$xb")

id=xbl$$
a="${id}a"; b="${id}b"
tmp=$(mktemp -d /tmp/netns_lanes.XXXXXX)
created=()
cleanup() {
  kill $(jobs -p) 2>/dev/null
  local s p
  for s in "${created[@]}"; do
    for p in $(ip netns pids "$s" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  done
  sleep 0.2
  for s in "${created[@]}"; do ip netns del "$s" 2>/dev/null; done
  if [ "${NETNS_KEEP_LOGS:-0}" = 1 ]; then echo "logs kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }
probe() {  # probe WHAT CMD...: runs CMD, skips with its stderr when it fails
  local what=$1; shift
  "$@" 2>"$tmp/probe.err" >/dev/null || skip "$what failed: '$*': $(tr '\n' ' ' <"$tmp/probe.err")"
}

for old in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^xbl[0-9]+[ab]$'); do
  p=${old#xbl}; p=${p%?}
  kill -0 "$p" 2>/dev/null && continue
  ip netns del "$old" 2>/dev/null
done

for s in "$a" "$b"; do
  probe "ip netns add" ip netns add "$s"
  created+=("$s")
  ip -n "$s" link set lo up
done
for i in 0 1; do
  probe "a veth pair" ip link add "${id}a$i" type veth peer name "${id}b$i"
  probe "moving a veth into a namespace" ip link set "${id}a$i" netns "$a"
  ip link set "${id}b$i" netns "$b"
  ip -n "$a" link set "${id}a$i" name "xb$i"
  ip -n "$b" link set "${id}b$i" name "xb$i"
  ip -n "$a" addr add "10.78.$i.1/24" dev "xb$i"
  ip -n "$b" addr add "10.78.$i.2/24" dev "xb$i"
  ip -n "$a" link set "xb$i" up
  ip -n "$b" link set "xb$i" up
done
for s in "$a" "$b"; do
  probe "tc tbf (sch_tbf)" ip netns exec "$s" tc qdisc add dev xb1 root tbf rate "$rate" burst 64kb latency 50ms
done

export XFERBENCH_TOKEN=0123456789abcdef0123456789abcdef UCX_TLS=tcp
port=$((22000 + RANDOM % 20000))
# serve I CLIENTS: a server on link I of host a
serve() {
  UCX_NET_DEVICES=xb$1 timeout 120 ip netns exec "$a" "$xb" engine serve --listen "10.78.$1.1:$port" \
    --size 64M --clients "$2" 2>>"$tmp/server$1.log" &
}
wait_listening() {
  local i
  for i in "$@"; do
    for _ in $(seq 100); do grep -q listening "$tmp/server$i.log" 2>/dev/null && break; sleep 0.1; done
    grep -q listening "$tmp/server$i.log" || fail "server $i did not start"
  done
}
servers="10.78.0.1:$port,10.78.1.1:$port"

# 1 and 2: a server per link, a lane per NIC.
serve 0 2; serve 1 2
wait_listening 0 1
timeout 120 ip netns exec "$b" "$xb" engine client --connect "$servers" --nic xb0,xb1 \
  -t 8M -k 1M -n 5 --format json -o "$tmp/client.json" -q 2>"$tmp/client.log" ||
  fail "engine client over both links"
/usr/bin/python3 - "$tmp/client.json" "$port" <<'PY' || fail "client records"
import json, sys
rs = json.load(open(sys.argv[1]))['results']
port = sys.argv[2]
by = {r['server']: r for r in rs}
fast, slow, total = by[f'10.78.0.1:{port}'], by[f'10.78.1.1:{port}'], by['all']
assert all(r['status'] == 'ok' and r['verified'] for r in rs), rs
assert fast['nic'] == 'xb0' and slow['nic'] == 'xb1', (fast, slow)
assert total['bytes'] == fast['bytes'] + slow['bytes'] == 8 << 20
print(f"xb0 {fast['gbps']['median']:.3f} GB/s, xb1 {slow['gbps']['median']:.3f} GB/s, "
      f"total {total['gbps']['median']:.3f} GB/s")
assert slow['gbps']['median'] < 0.5 * fast['gbps']['median'], 'the shaped lane is not the slow one'
assert slow['gbps']['median'] < 0.05, 'the shaped lane is faster than its shaping'
lane = 5 * (4 << 20)  # the timed loops' bytes of each lane: 5 loops of -t / 2
for r, nic in ((fast, 'xb0'), (slow, 'xb1')):
    assert r['nic'] == nic and 'nic_warning' not in r and r['nic_errors'] == '', r
    assert lane <= r['nic_rx_bytes'] <= 1.1 * lane, (nic, r['nic_rx_bytes'], lane)
    assert r['nic_tx_bytes'] < 0.1 * lane, r
    # wire GB/s: the counted bytes over the 5 loops' time (mean x 5)
    wire = r['nic_rx_bytes'] / (5 * r['time_us']['mean'] * 1e3)
    assert abs(r['wire_gbps'] - wire) < 0.01 * wire, (r['wire_gbps'], wire)
print(f"counted: xb0 rx {fast['nic_rx_bytes']} B, xb1 rx {slow['nic_rx_bytes']} B of {lane} B each")
PY
ip netns exec "$b" "$xb" doctor --checks engine --engine-server "$servers" --nic xb0,xb1 \
  --format json -o "$tmp/doctor.json" -q 2>"$tmp/doctor.log"
rc=$?
[ $rc -eq 1 ] || fail "doctor with a shaped NIC: exit $rc, expected 1"
/usr/bin/python3 - "$tmp/doctor.json" <<'PY' || fail "doctor rows"
import json, sys
rs = [r for r in json.load(open(sys.argv[1]))['results'] if r['case'] == 'engine']
slow = [r for r in rs if 'nic xb1' in r['method']]
fast = [r for r in rs if 'nic xb0' in r['method']]
assert len(slow) == 1 and len(fast) == 1, rs
assert slow[0]['verdict'] == 'FAIL' and 'nic xb1' in slow[0]['why'], slow
assert fast[0]['verdict'] != 'FAIL', fast
# Each row carries what its NIC counted over the lane's loops: the lane's bytes (within 10 %).
import re
for r in slow + fast:
    m = re.search(r'nic (xb[01]) counted ([0-9.]+) MB over the lane.s ([0-9.]+) MB', r['why'])
    assert m and m.group(1) in r['method'], r['why']
    assert float(m.group(3)) <= float(m.group(2)) <= 1.1 * float(m.group(3)) + 0.2, r['why']
print('doctor:', slow[0]['why'])
PY
wait

# 3: --nic xb0, but the server's address is on xb1's link.
port=$((port + 1))
rm -f "$tmp/server1.log"
serve 1 1
wait_listening 1
timeout 120 ip netns exec "$b" "$xb" engine client --connect "10.78.1.1:$port" --nic xb0 \
  --op read,write -t 8M -k 1M -n 5 --format json -o "$tmp/astray.json" -q 2>"$tmp/astray.log" ||
  fail "engine client with --nic xb0 to xb1's address"
grep -q "engine: WARN: the lane (nic xb0), read of 1 MiB blocks: nic xb0 moved .* went through xb1" \
  "$tmp/astray.log" || fail "no WARN on stderr for the lane routed through xb1"
/usr/bin/python3 - "$tmp/astray.json" <<'PY' || fail "astray records"
import json, sys
rs = json.load(open(sys.argv[1]))['results']
lane = 5 * (8 << 20)
assert len(rs) == 2, rs
for r in rs:
    assert r['status'] == 'ok' and r['nic'] == 'xb0', r
    assert max(r['nic_tx_bytes'], r['nic_rx_bytes']) < 0.1 * lane, r
    assert 'went through xb1' in r['nic_warning'], r
print('astray:', rs[0]['nic_warning'])
PY
wait

echo "ok: netns lanes"
