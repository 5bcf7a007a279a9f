#!/usr/bin/env bash
# Engine integration scenarios with real processes: engine_it.sh XFERBENCH SCENARIO
set -u
xb=$1; scenario=$2
mpiexec=$("$(dirname "$0")/../../scripts/mpi-launcher.sh" "$xb")  # the launcher of its MPI
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
port=$((21000 + RANDOM % 30000))
fail() { echo "FAIL [$scenario]: $*"; for f in "$tmp"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }
serve() {  # serve ARGS...: a server in the background, token in $tmp/tok
  "$xb" engine serve --listen 127.0.0.1:$port --token-file "$tmp/tok" "$@" 2>"$tmp/server.log" &
  server=$!
  for _ in $(seq 300); do [ -s "$tmp/tok" ] && grep -q listening "$tmp/server.log" && return; sleep 0.1; done
  fail "server did not start"
}
client() {  # client NAME ARGS...: runs a client, JSON to $tmp/NAME.json
  local name=$1; shift
  timeout 120 "$xb" engine client --connect 127.0.0.1:$port --token-file "$tmp/tok" --format json \
    -o "$tmp/$name.json" -q "$@" 2>"$tmp/$name.log"
}
verified() {  # all records of NAME ok and verified
  /usr/bin/python3 -c "
import json,sys; d=json.load(open('$tmp/$1.json')); r=d['results']
sys.exit(0 if r and all(x['status']=='ok' and x['verified'] for x in r) else 1)" || fail "$1 not verified"
}
expect_usage() {  # expect_usage PATTERN CMD...: exit 2 and one line matching
  local pat=$1; shift
  timeout 60 "$@" >"$tmp/out.log" 2>"$tmp/err.log"; local rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, expected 2 for: $*"
  [ "$(wc -l <"$tmp/err.log")" -eq 1 ] || fail "expected one line on stderr"
  grep -Eq -- "$pat" "$tmp/err.log" || fail "stderr does not match /$pat/"
}

three_servers() {  # three servers on $port..$port+2 (64 MiB each), pids in $srv0..$srv2
  for i in 0 1 2; do
    "$xb" engine serve --listen 127.0.0.1:$((port + i)) --size 64M 2>"$tmp/s$i.log" &
    eval "srv$i=$!"
  done
  for i in 0 1 2; do
    for _ in $(seq 100); do grep -q listening "$tmp/s$i.log" && break; sleep 0.1; done
  done
}
lanes() {  # lanes NAME: the lanes of NAME's records, sorted and unique
  /usr/bin/python3 -c "
import json; print(' '.join(sorted({r.get('lane', '-') for r in json.load(open('$tmp/$1.json'))['results']})))"
}

case $scenario in
modes)
  # HIXL's four transfer modes on the host backend (its device: a NUMA node), each verified.
  for m in h2h h2d d2h d2d; do
    timeout 120 "$xb" engine selftest --mode $m -t 4M --block-steps 2 --loops 1 --format json \
      -o "$tmp/$m.json" -q 2>"$tmp/$m.log" || fail "selftest --mode $m"
    verified $m
    [ "$(lanes $m)" = ucx ] || fail "mode $m: lane $(lanes $m), expected ucx"
  done
  # The staged lane: 64 KiB requests in 24 KiB chunks (two whole, one partial), both bounce buffers.
  timeout 120 "$xb" engine selftest --mode d2d --lane staged --stage-chunk 24K -t 1M -k 64K \
    --block-steps 2 --loops 2 --format json -o "$tmp/staged.json" -q 2>"$tmp/staged.log" || fail "staged"
  verified staged
  [ "$(lanes staged)" = staged ] || fail "staged lane: $(lanes staged)"
  ;;
server_modes)
  # A server of device memory serves d2d and d2h clients, refuses an h2h one with the
  # reason, and keeps serving.
  serve --size 32M --clients 2 --mem device
  client dd --mode d2d -t 4M --op read,write --loops 2 || fail "d2d client"
  verified dd
  timeout 30 "$xb" engine client --connect 127.0.0.1:$port --token-file "$tmp/tok" --mode h2h \
    -t 1M >/dev/null 2>"$tmp/hh.log"
  [ $? -eq 2 ] || fail "h2h client against a device server: expected exit 2"
  grep -q "region is device memory of host device 0 .*needs host memory" "$tmp/hh.log" ||
    fail "h2h refusal: $(cat "$tmp/hh.log")"
  [ "$(wc -l <"$tmp/hh.log")" -eq 1 ] || fail "h2h refusal is not one line"
  client hd --mode h2d -t 4M -k 256K --op read,write --loops 2 || fail "h2d client after a refused one"
  verified hd
  wait $server || fail "server exit code"
  grep -q "2 served, 0 failed, 1 rejected" "$tmp/server.log" || fail "server summary"
  ;;
gpu_two_processes)
  # The ipc lane across processes (label gpu): a server of GPU memory, its region opened
  # with cudaIpcOpenMemHandle by a client process, both directions, at two client slots;
  # with two GPUs, the client on the other one (peer access through the lazy IPC flag).
  . "$(dirname "$0")/../gpu/need_gpu.sh"
  need_gpu "$xb"
  gpus=$("$xb" list --backend cuda --format json | /usr/bin/python3 -c '
import json, sys
print(len(json.load(sys.stdin)["env"]["devices"]))')
  other=0; [ "$gpus" -ge 2 ] && other=1
  serve --backend cuda --mem device --device 0 --size 64M --clients 2
  client a --backend cuda --mode d2d --lane ipc -t 16M -k 4M --op read,write --loops 2 || fail "ipc client"
  client b --backend cuda --mode d2d --lane ipc --device $other -t 16M -k 1M --op read,write --loops 2 ||
    fail "ipc client on GPU $other"
  verified a; verified b
  [ "$(lanes a)" = ipc ] && [ "$(lanes b)" = ipc ] || fail "lanes: $(lanes a) / $(lanes b), expected ipc"
  wait $server || fail "server exit code"
  grep -q "2 served, 0 failed" "$tmp/server.log" || fail "server summary"
  ;;
selftest)
  timeout 120 "$xb" engine selftest >"$tmp/self.log" 2>&1 || fail "selftest failed"
  grep -q "20 results: 20 ok" "$tmp/self.log" || fail "selftest results"
  ;;
selftest_tcp)
  UCX_TLS=tcp timeout 120 "$xb" engine selftest -t 4M --block-steps 3 >"$tmp/self.log" 2>&1 || fail "tcp selftest"
  grep -q "transports: tcp" "$tmp/self.log" || fail "not on tcp"
  grep -q "12 results: 12 ok" "$tmp/self.log" || fail "tcp selftest results"
  ;;
nic_counters)
  # A lane's NIC counters (core/nic_counters): over TCP on loopback lo carried the bytes (no
  # --nic: the NIC that moved them), as --nic lo says too; over shared memory no NIC did, and
  # a sysfs root without counters (XFERBENCH_SYSFS_ROOT) has none: no fields, never a guess.
  serve --size 64M --clients 4
  UCX_TLS=tcp client tcp --op read,write -t 8M -k 1M --loops 3 || fail "tcp client"
  UCX_TLS=tcp client lo --nic lo -t 8M -k 1M --loops 3 || fail "tcp client --nic lo"
  client shm -t 8M -k 1M --loops 3 || fail "shm client"
  mkdir "$tmp/nosys"
  UCX_TLS=tcp XFERBENCH_SYSFS_ROOT="$tmp/nosys" client bare --nic lo -t 8M -k 1M --loops 3 ||
    fail "client without counters"
  /usr/bin/python3 - "$tmp" <<'PY' || fail "NIC fields"
import json, os, sys
load = lambda n: json.load(open(os.path.join(sys.argv[1], n + '.json')))['results']
lane = 3 * (8 << 20)
for r in load('tcp') + load('lo'):
    assert r['status'] == 'ok' and r['nic'] == 'lo', r
    moved = r['nic_rx_bytes'] if r['case'] == 'read' else r['nic_tx_bytes']
    assert moved >= lane and r['wire_gbps'] > 0 and 'nic_warning' not in r, r  # host-wide: >=
for r in load('shm') + load('bare'):
    assert r['status'] == 'ok' and not {'nic_tx_bytes', 'wire_gbps', 'nic_errors'} & set(r), r
PY
  grep -q WARN "$tmp"/tcp.log "$tmp"/lo.log && fail "a WARN"
  verified tcp; verified shm
  ;;
two_processes)
  serve --size 64M --clients 2
  client r --op read -t 16M -k 64K --block-steps 3 --loops 2 || fail "read client"
  client w --op write -t 16M -k 1M --loops 2 --async --batch 4 || fail "write client"
  verified r; verified w
  wait $server || fail "server exit code"
  grep -q "2 served, 0 failed" "$tmp/server.log" || fail "server summary"
  ;;
wrong_token)
  serve --size 16M --clients 1
  timeout 30 "$xb" engine client --connect 127.0.0.1:$port -t 1M 2>"$tmp/bad.log" >/dev/null \
    <<<"" && fail "no-token client succeeded"
  XFERBENCH_TOKEN=not-the-token timeout 30 "$xb" engine client --connect 127.0.0.1:$port -t 1M >/dev/null 2>"$tmp/bad.log"
  [ $? -eq 2 ] || fail "wrong token: expected exit 2"
  grep -q "refused this client: wrong token" "$tmp/bad.log" || fail "client message"
  grep -q "rejected .*wrong token" "$tmp/server.log" || fail "server did not log the rejection"
  client good -t 4M --loops 2 || fail "good client after a rejected one"
  verified good
  wait $server || fail "server exit code"
  ;;
malformed)
  serve --size 16M --clients 1
  exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET / HTTP/1.0\r\n\r\n' >&3; exec 3>&-
  exec 3<>/dev/tcp/127.0.0.1/$port; printf 'XBEN\x02\x00\x01\x00\xff\xff\xff\x7f' >&3; exec 3>&-
  sleep 0.5
  client good -t 4M --loops 2 || fail "client after malformed messages"
  verified good
  wait $server || fail "server exit code"
  grep -q "not an xferbench engine frame" "$tmp/server.log" || fail "no log of the bad frame"
  grep -q "oversized message" "$tmp/server.log" || fail "no log of the oversized frame"
  ;;
killed_client)
  serve --size 512M --clients 2
  "$xb" engine client --connect 127.0.0.1:$port --token-file "$tmp/tok" --op write \
    -t 200M -k 64K --loops 500 >/dev/null 2>"$tmp/victim.log" &
  victim=$!
  sleep 1.5; kill -9 $victim
  client survivor --op read -t 64M -k 1M --loops 2 || fail "survivor client"
  verified survivor
  wait $server; rc=$?
  [ $rc -eq 1 ] || fail "server exit $rc, expected 1 (one client failed)"
  grep -q "1 served, 1 failed" "$tmp/server.log" || fail "server summary"
  ;;
four_clients)
  serve --size 256M --clients 4
  for i in 1 2 3 4; do client c$i --op write,read -t 32M -k 256K --loops 2 & done
  for job in $(jobs -p); do [ "$job" = "$server" ] || wait "$job" || fail "a client failed"; done
  for i in 1 2 3 4; do verified c$i; done
  wait $server || fail "server exit code"
  grep -q "4 served, 0 failed" "$tmp/server.log" || fail "server summary"
  ;;
peer_failure)
  serve --size 512M --clients 1
  UCX_TLS=tcp "$xb" engine client --connect 127.0.0.1:$port --token-file "$tmp/tok" --err-mode peer \
    --op read -t 256M -k 64K --loops 100 --timeout 5 >/dev/null 2>"$tmp/client.log" &
  c=$!
  sleep 1.5; kill -9 $server
  wait $c; rc=$?
  [ $rc -eq 1 ] || fail "client exit $rc after the server died, expected 1 (124 = hang)"
  grep -Eq "peer failed|timed out|failed" "$tmp/client.log" || fail "no error message"
  ;;
bad_input)
  expect_usage "cannot reach the engine server at 127.0.0.1:1 within --connect-timeout 1" \
    env XFERBENCH_TOKEN=x "$xb" engine client --connect 127.0.0.1:1 --connect-timeout 1
  expect_usage "-k 8 MiB is larger than -t 1 MiB" "$xb" engine client -t 1M -k 8M
  expect_usage "-t 3 MiB is not a multiple of the block size 2 MiB" "$xb" engine client -t 3M -k 2M
  expect_usage "--connect 'nowhere' must be HOST:PORT" env XFERBENCH_TOKEN=x "$xb" engine client --connect nowhere
  # A token file that exists must hold a token: never overwritten, never taken whole.
  : >"$tmp/empty.tok"
  expect_usage "token file .*empty.tok is empty" "$xb" engine serve --size 1M --token-file "$tmp/empty.tok"
  [ ! -s "$tmp/empty.tok" ] || fail "the empty token file was overwritten"
  head -c 100000 /dev/urandom >"$tmp/binary.tok"
  expect_usage "token file .*binary.tok does not hold a token" \
    "$xb" engine serve --size 1M --token-file "$tmp/binary.tok"
  # A region larger than memory is refused before UCX fills /dev/shm with it.
  before=$(ls /dev/shm | grep -c ucx_shm_posix)
  expect_usage "the region needs 100.00 TiB of host memory, only .* is available" \
    env XFERBENCH_TOKEN=x "$xb" engine serve --size 100T --accept-wait 1
  [ "$(ls /dev/shm | grep -c ucx_shm_posix)" = "$before" ] || fail "a /dev/shm file was left"
  # The hello's answer within --connect-timeout, not a fixed 10 s: a listener that accepts
  # and says nothing.
  /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4); c, _ = s.accept(); time.sleep(20)' $((port + 1)) &
  sleep 0.5
  start=$(date +%s)
  XFERBENCH_TOKEN=x timeout 30 "$xb" engine client --connect 127.0.0.1:$((port + 1)) --connect-timeout 2 \
    -t 1M >/dev/null 2>"$tmp/silent.log"
  [ $? -eq 2 ] || fail "a silent listener: not exit 2 (not an engine server: a wrong address)"
  [ $(( $(date +%s) - start )) -le 5 ] || fail "a silent listener took $(( $(date +%s) - start )) s, not ~2"
  # A client whose -t its slot cannot hold is refused by the server (the reason on both
  # sides), does not count toward --clients, and the next client is served.
  serve --size 8M --clients 1
  expect_usage "the engine server refused this client: the client needs 16 MiB of its slot, a slot is 8 MiB" \
    env XFERBENCH_TOKEN="$(cat "$tmp/tok")" "$xb" engine client --connect 127.0.0.1:$port -t 16M
  client fits -t 8M --loops 1 || fail "a client that fits, after a refused one"
  verified fits
  wait $server || fail "server exit code"
  grep -q "1 served, 0 failed, 1 rejected" "$tmp/server.log" || fail "server summary: $(tail -1 "$tmp/server.log")"
  ;;
window)
  # --window N: N requests in flight (async batches of N), every record verified, with window
  # echoed, msg_rate = requests of a loop / median loop time; a client without it has neither.
  windowed() {  # windowed NAME W: NAME's records are windowed runs of depth W
    /usr/bin/python3 -c "
import json, sys
d = json.load(open('$tmp/$1.json')); w = $2; r = d['results']
assert d['params']['window'] == w and d['params']['async'] is True, d['params']
assert r, 'no records'
for x in r:
    med = x['time_us']['median']
    want = x['requests'] * 1e6 / med
    assert x['status'] == 'ok' and x['verified'], x
    assert x['method'] == 'async' and x['batch'] == w and x['window'] == w, x
    assert x['requests'] == x['bytes'] // x['block'], x
    assert x['msg_rate'] > 0 and abs(x['msg_rate'] - want) <= 1e-9 * want, (x['msg_rate'], want)
" || fail "$1: not a verified window of $2"
  }
  serve --size 16M --clients 2
  client w --op read,write -t 4M -k 4K --block-steps 2 --loops 3 --window 32 || fail "window client"
  windowed w 32
  client plain --op read -t 1M -k 64K --loops 2 || fail "client without --window"
  verified plain
  /usr/bin/python3 -c "
import json; d = json.load(open('$tmp/plain.json'))
assert 'window' not in d['params'] and all('msg_rate' not in x and 'window' not in x for x in d['results'])
" || fail "a run without --window has window fields"
  wait $server || fail "server exit code"
  grep -q "2 served, 0 failed" "$tmp/server.log" || fail "server summary"
  timeout 120 "$xb" engine selftest --window 8 -t 1M -k 4K --block-steps 2 --loops 2 --format json \
    -o "$tmp/self.json" -q 2>"$tmp/self.log" || fail "selftest --window"
  windowed self 8
  timeout 120 "$xb" engine selftest --window 8 -t 256K -k 4K --loops 1 >"$tmp/table.log" 2>&1 ||
    fail "selftest --window table"
  grep -q "async · mode h2h · lane ucx · 256 KiB per loop · window 8 (batch)" "$tmp/table.log" &&
    grep -q "Mmsg/s" "$tmp/table.log" || fail "table: $(cat "$tmp/table.log")"
  expect_usage "--window '0': '0' is not a positive count" "$xb" engine client --window 0
  expect_usage "--window '-4': '-4' is not a positive count" "$xb" engine selftest --window -4
  expect_usage "--window 'many': 'many' is not a positive count" "$xb" engine selftest --window many
  expect_usage "--window 8 is the async batch depth; --batch 4 says otherwise" \
    "$xb" engine selftest --window 8 --batch 4
  ;;
lanes)
  # --lanes 2 over shared memory (selftest) and over TCP (a server and a client process):
  # a record per lane and their sum, each verified, the sum's bytes the lanes' bytes added.
  timeout 120 "$xb" engine selftest --lanes 2 -t 8M -k 1M --block-steps 2 --loops 2 --format json \
    -o "$tmp/shm.json" -q 2>"$tmp/shm.log" || fail "selftest --lanes 2"
  serve --size 64M
  UCX_TLS=tcp client tcp --lanes 2 --op read,write -t 8M -k 1M --async --loops 2 || fail "tcp --lanes 2"
  wait $server || fail "server exit code"
  for run in shm tcp; do
    /usr/bin/python3 - "$tmp/$run.json" <<'PY' || fail "$run: lanes records"
import json, sys
from collections import defaultdict
rs = json.load(open(sys.argv[1]))['results']
assert rs and all(r['status'] == 'ok' and r['verified'] for r in rs), rs
steps = defaultdict(dict)
for r in rs:
    steps[(r['case'], r['method'], r['block'])][r['lane_id']] = r
for key, lanes in steps.items():
    assert sorted(lanes) == [-1, 0, 1], (key, sorted(lanes))
    assert lanes[-1]['bytes'] == lanes[0]['bytes'] + lanes[1]['bytes'] == 8 << 20, key
    assert lanes[0]['bytes'] == 4 << 20
    # the sum spans both lanes' loops: never faster than the lanes' figures added up
    assert lanes[-1]['gbps']['median'] <= lanes[0]['gbps']['max'] + lanes[1]['gbps']['max'] + 1e-9, key
PY
  done
  grep -q "tcp" "$tmp/tcp.json" || fail "tcp run did not use tcp"
  # A --device list: a lane per device (two host devices), device memory both sides.
  XFERBENCH_HOST_DEVICES=2 timeout 120 "$xb" engine selftest --mode d2d --device 0,1 -t 4M -k 1M \
    --block-steps 1 --loops 2 --op read,write --format json -o "$tmp/dev.json" -q 2>"$tmp/dev.log" ||
    fail "selftest --device 0,1"
  /usr/bin/python3 -c "
import json, sys; rs = json.load(open('$tmp/dev.json'))['results']
sys.exit(0 if sorted({r['lane_id'] for r in rs}) == [-1, 0, 1] and
         all(r['status'] == 'ok' and r['verified'] for r in rs) else 1)" || fail "device lanes"
  expect_usage "--device '0,x': 'x' is not a device index" "$xb" engine selftest --device 0,x
  ;;
lanes_bad_input)
  expect_usage "--lanes '0': '0' is not a positive count" "$xb" engine selftest --lanes 0
  expect_usage "--lanes 65: more than the 64 allowed" "$xb" engine selftest --lanes 65
  expect_usage "--nic nosuchnic0: no such network or RDMA device" "$xb" engine selftest --nic lo,nosuchnic0
  expect_usage "--nic lists 2 for --lanes 3" "$xb" engine selftest --nic lo,lo --lanes 3 -t 3M -k 1M --block-steps 1
  expect_usage "--connect: 127.0.0.1:1 is given twice" "$xb" engine client --connect 127.0.0.1:1,127.0.0.1:1
  expect_usage "4 lanes x 1 server = 4 parts, but -t 2 MiB holds only 2 blocks of 1 MiB" \
    "$xb" engine selftest --lanes 4 -t 2M -k 1M --block-steps 1
  expect_usage "-t 3 MiB does not split into 2 equal parts" "$xb" engine selftest --lanes 2 -t 3M -k 1M --block-steps 1
  expect_usage "engine fanin: one lane per client" "$xb" engine fanin --lanes 2
  ;;
fanout)
  # One client, three servers at once (TCP); the third is killed mid-run: its records
  # fail with the reason, the other two finish verified, exit 1, no hang.
  export XFERBENCH_TOKEN=0123456789abcdef0123456789abcdef
  UCX_TLS=tcp three_servers
  ( for _ in $(seq 300); do grep -q accepted "$tmp/s2.log" && break; sleep 0.05; done
    sleep 0.5; kill -9 $srv2 ) &
  UCX_TLS=tcp timeout 150 "$xb" engine client \
    --connect 127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2)) \
    --op read,write -t 12M -k 1M --block-steps 2 -n 100 --timeout 5 --format json \
    -o "$tmp/fan.json" -q 2>"$tmp/fan.log"
  rc=$?
  [ $rc -eq 1 ] || fail "fan-out with a killed server: exit $rc, expected 1"
  grep -q "failed" "$tmp/fan.log" || fail "no line names the lost server"
  /usr/bin/python3 - "$tmp/fan.json" $port <<'PY' || fail "fan-out records"
import json, sys
rs = json.load(open(sys.argv[1]))['results']
port = int(sys.argv[2])
a, b, c = (f'127.0.0.1:{port + i}' for i in range(3))
by = lambda s: [r for r in rs if r['server'] == s]
for s in (a, b):
    assert len(by(s)) == 4 and all(r['status'] == 'ok' and r['verified'] for r in by(s)), by(s)
failed = [r for r in by(c) if r['status'] == 'failed']
assert len(by(c)) == 4 and failed and all(c in r['reason'] for r in failed), by(c)
first = by(c).index(failed[0])
assert all(r['status'] == 'failed' for r in by(c)[first:]), 'a lost server came back'
assert all(r['bytes'] == 12 << 20 for r in by('all'))
assert any(r['status'] == 'failed' and 'no sum' in r['reason'] for r in by('all'))
PY
  wait $srv0 || fail "server 0 exit code"
  wait $srv1 || fail "server 1 exit code"
  ;;
fanout_shm)
  # The same with the default transports on one host: UCX reads the servers' regions
  # through shared memory, which stays readable after a server is killed. The killed
  # server's part must still fail, with the reason, within a few seconds of the kill
  # (its control connection closed), the others finish verified, exit 1.
  export XFERBENCH_TOKEN=0123456789abcdef0123456789abcdef
  three_servers
  timeout 150 "$xb" engine client \
    --connect 127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2)) \
    -t 48M -k 1M --loops 4000 --format json -o "$tmp/fan.json" -q 2>"$tmp/fan.log" &
  c=$!
  for _ in $(seq 300); do grep -q accepted "$tmp/s2.log" && break; sleep 0.05; done
  sleep 1; kill -9 $srv2; killed=$(date +%s%N)
  for _ in $(seq 100); do grep -q "failed" "$tmp/fan.log" && break; sleep 0.05; done
  noticed=$(date +%s%N)
  grep -q "127.0.0.1:$((port + 2)) failed: the server is gone" "$tmp/fan.log" ||
    fail "the killed server was not named within 5 s: $(cat "$tmp/fan.log")"
  took=$(( (noticed - killed) / 1000000 ))
  [ $took -lt 3000 ] || fail "the killed server was named $took ms after the kill"
  wait $c; rc=$?
  [ $rc -eq 1 ] || fail "fan-out with a killed server: exit $rc, expected 1"
  /usr/bin/python3 - "$tmp/fan.json" $port <<'PY' || fail "fan-out records"
import json, sys
rs = json.load(open(sys.argv[1]))['results']
port = int(sys.argv[2])
a, b, c = (f'127.0.0.1:{port + i}' for i in range(3))
by = lambda s: [r for r in rs if r['server'] == s]
for s in (a, b):
    assert len(by(s)) == 1 and all(r['status'] == 'ok' and r['verified'] for r in by(s)), by(s)
assert len(by(c)) == 1 and by(c)[0]['status'] == 'failed', by(c)
assert 'the server is gone' in by(c)[0]['reason'], by(c)
assert by('all')[0]['status'] == 'failed', by('all')
PY
  wait $srv0 || fail "server 0 exit code"
  wait $srv1 || fail "server 1 exit code"
  echo "PASS fanout_shm: the killed server named $took ms after the kill"
  ;;
fanout_hostile)
  # Fan-out where one "server" answers the hello with garbage, and one where it accepts
  # and never answers: one line naming it, no hang, the real server not left waiting.
  serve --size 16M --clients 2
  /usr/bin/python3 - $((port + 1)) $((port + 2)) <<'PY' &
import socket, sys, threading, time
def garbage(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(4)
    c, _ = s.accept(); c.recv(4096); c.sendall(b"XBEN\x02\x00\x09\x00\x05\x00\x00\x00hello"); time.sleep(5)
def silent(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(4)
    c, _ = s.accept(); time.sleep(30)
for f, p in ((garbage, int(sys.argv[1])), (silent, int(sys.argv[2]))):
    threading.Thread(target=f, args=(p,), daemon=True).start()
time.sleep(30)
PY
  sleep 0.5
  for bad in $((port + 1)) $((port + 2)); do
    start=$(date +%s)
    timeout 60 "$xb" engine client --connect 127.0.0.1:$port,127.0.0.1:$bad --token-file "$tmp/tok" \
      -t 4M -k 1M --connect-timeout 3 >"$tmp/out.log" 2>"$tmp/err.log"
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "fan-out with a hostile server at $bad: exit $rc"
    [ $(( $(date +%s) - start )) -lt 40 ] || fail "fan-out with a hostile server took too long"
    [ "$(wc -l <"$tmp/err.log")" -eq 1 ] || fail "expected one line on stderr: $(cat "$tmp/err.log")"
    grep -q "127.0.0.1:$bad" "$tmp/err.log" || fail "the line does not name $bad: $(cat "$tmp/err.log")"
  done
  wait $server
  grep -q "0 served, 2 failed" "$tmp/server.log" || fail "the real server: $(tail -1 "$tmp/server.log")"
  ;;
fanin)
  # Four clients on one server (mpiexec -n 4): each client's record with its share, the
  # server's total with Jain's fairness, all verified.
  timeout 200 "$mpiexec" -n 4 "$xb" engine fanin --op read,write -t 4M -k 1M --block-steps 2 -n 3 \
    --format json -o "$tmp/fanin.json" -q 2>"$tmp/fanin.log" || fail "fanin"
  /usr/bin/python3 - "$tmp/fanin.json" <<'PY' || fail "fan-in records"
import json, sys
d = json.load(open(sys.argv[1]))
rs = d['results']
assert d['summary']['clients'] == 4
steps = {}
for r in rs:
    steps.setdefault((r['case'], r['block']), []).append(r)
assert len(steps) == 4, steps.keys()
for key, recs in steps.items():
    clients = sorted(r['client'] for r in recs)
    assert clients == [-1, 0, 1, 2, 3], (key, clients)
    assert all(r['status'] == 'ok' and r['verified'] for r in recs), recs
    total = next(r for r in recs if r['client'] == -1)
    each = [r for r in recs if r['client'] >= 0]
    assert total['bytes'] == 4 * (4 << 20)
    assert abs(sum(r['share'] for r in each) - 1) < 1e-9
    x = [r['gbps']['median'] for r in each]
    jain = sum(x) ** 2 / (len(x) * sum(v * v for v in x))
    assert abs(total['fairness'] - jain) < 1e-9 and 0.25 <= total['fairness'] <= 1
    # the server's loop ends with its slowest client
    assert total['time_us']['median'] >= max(r['time_us']['min'] for r in each) - 1e-6
    assert all(r['client_host'] for r in each)
PY
  timeout 200 "$mpiexec" -n 4 "$xb" engine fanin -t 4M -k 1M -n 2 >"$tmp/table.log" 2>&1 || fail "fanin table"
  grep -q "total · Jain" "$tmp/table.log" && grep -q "client 3 · " "$tmp/table.log" ||
    fail "table: $(cat "$tmp/table.log")"
  ;;
*) fail "unknown scenario" ;;
esac
echo "ok: $scenario"
