#!/bin/sh
# fleet_counters.sh XFERBENCH MPIEXEC: NIC counters in fleet's records and rows.
# Three ranks on one rail, lo; XFERBENCH_SYSFS_ROOT points at a tree of its own
# whose lo moves 4 MiB and counts one more rx_errors every millisecond while
# fleet runs (a writer replaces the files whole). Each send record must carry
# lo's nic_tx_bytes/nic_rx_bytes (0 in a part of a step shorter than the
# writer's period), some the bytes and rx_errors that grew, and each host row the
# errors of its pairs; without the writer, 0 bytes and no errors (the control).
# Then eth9 moves instead of lo: the records warn that the rail's bytes went
# through eth9, and a "rail" WARN row names the hosts.
set -u
xb=$1 mpiexec=$2
tmp=$(mktemp -d /tmp/fleet_counters.XXXXXX)
writer=
trap '[ -n "$writer" ] && kill $writer 2>/dev/null; rm -rf "$tmp"' EXIT
stats=$tmp/root/sys/class/net/lo/statistics
other=$tmp/root/sys/class/net/eth9/statistics
mkdir -p "$stats" "$other"
for f in tx_bytes rx_bytes tx_errors rx_errors tx_dropped rx_dropped; do echo 0 >"$stats/$f"; echo 0 >"$other/$f"; done
run() {  # run NAME: fleet on lo, the JSON in $tmp/NAME.json; exit 0 or 1 (a FAIL: noise on 2 cores)
  XFERBENCH_SYSFS_ROOT=$tmp/root "$mpiexec" -n 3 "$xb" fleet --backend host --rails --nic lo \
    -s 8M -n 3 --pings 10 --no-census --format json -o "$tmp/$1.json" >"$tmp/$1.out" 2>&1
  [ $? -le 1 ] && [ -s "$tmp/$1.json" ]
}
run control || { echo "control run failed:"; cat "$tmp/control.out"; exit 1; }
grow() {  # grow DIR: in the background, DIR's counters move (4 MiB each way, one rx_errors a ms)
  /usr/bin/python3 - "$1" <<'PY' &
import os, sys, time
stats, n = sys.argv[1], 0
def put(name, value):
    tmp = os.path.join(stats, "." + name)
    with open(tmp, "w") as f:
        f.write("%d\n" % value)
    os.replace(tmp, os.path.join(stats, name))
while True:
    n += 1
    put("tx_bytes", n * 4194304); put("rx_bytes", n * 4194304); put("rx_errors", n)
    time.sleep(0.001)
PY
  writer=$!
}
grow "$stats"
run grown || { echo "run with growing counters failed:"; cat "$tmp/grown.out"; exit 1; }
kill $writer; writer=
# The rail's bytes elsewhere: lo still, another interface (eth9) moving.
grow "$other"
run astray || { echo "run with eth9 moving failed:"; cat "$tmp/astray.out"; exit 1; }
kill $writer; writer=
/usr/bin/python3 - "$tmp/control.json" "$tmp/grown.json" "$tmp/astray.json" <<'PY'
import json, sys
bad = []
d = json.load(open(sys.argv[3]))
warned = [r for r in d["results"] if r["case"] == "send" and "went through eth9" in (r.get("nic_warning") or "")]
rows = [r for r in d["results"] if r["case"] == "rail" and r.get("verdict") == "WARN" and "eth9" in r.get("why", "")]
print("astray: %d send records warned of eth9, %d rail WARN rows" % (len(warned), len(rows)))
if not warned or not rows: bad.append("the rail's bytes on eth9 gave no warning or no rail WARN row")
for path in sys.argv[1:3]:
    if any("nic_warning" in r or r["case"] == "rail" for r in json.load(open(path))["results"]):
        bad.append(path + ": a rail warning where no bytes went elsewhere")
for path, grown in ((sys.argv[1], False), (sys.argv[2], True)):
    d = json.load(open(path))
    sends = [r for r in d["results"] if r["case"] == "send"]
    hosts = [r for r in d["results"] if r["case"] == "host"]
    with_errors = [r for r in sends if "rx_errors +" in (r.get("nic_errors") or "")]
    rows = [r for r in hosts if "error counters that grew during its pairs" in r.get("why", "")]
    fields = [r for r in sends if "nic_tx_bytes" in r and "nic_rx_bytes" in r and r.get("nic") == "lo"]
    counted = [r for r in fields if r["nic_tx_bytes"] > 0 and r["nic_rx_bytes"] > 0]
    print("%s: %d send records, %d with lo's counters, %d of them moved, %d with rx_errors, %d of %d host rows with evidence"
          % ("grown" if grown else "control", len(sends), len(fields), len(counted), len(with_errors), len(rows), len(hosts)))
    if not sends or not hosts: bad.append(path + ": no send or host records")
    # Every record says what lo counted, 0 included (a part shorter than the writer's period).
    if len(fields) != len(sends): bad.append(path + ": a send record without lo's counters")
    if grown:
        if not counted or not with_errors: bad.append("no send record with the bytes and rx_errors that grew")
        if len(rows) != len(hosts): bad.append("a host row without the errors of its pairs")
    elif with_errors or rows or counted:
        bad.append("the control run shows counters that did not move")
print("; ".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
PY
