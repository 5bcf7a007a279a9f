#!/usr/bin/env bash
# --host-mem huge on the host backend (copy, remote, kv, engine): where this machine
# offers huge pages (hugetlb reserved, or THP always/madvise), every record is
# ok and verified, and the summary's host_pages says how many bytes the
# kernel really put on huge pages (not 0); where it offers none, every record
# is waived with the reason. A bad value is one line and exit 2.
#   host_pages.sh XFERBENCH MPIEXEC
set -euo pipefail
xb=$1 mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
free=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo)
offered=0
{ [ "$thp" = always ] || [ "$thp" = madvise ] || [ "${free:-0}" -gt 8 ]; } && offered=1
echo "thp: ${thp:-unknown}, free hugetlb pages: ${free:-0} -> offered=$offered"

check() {  # FILE: every record ok+verified and host_pages > 0 bytes, or all waived with the reason
  /usr/bin/python3 - "$1" "$offered" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1])); offered = sys.argv[2] == "1"
res = d["results"]; assert res, "no records"
if offered:
    bad = [r for r in res if r["status"] != "ok" or r.get("verified") is False]
    assert not bad, bad
    note = dict(d["summary"]).get("host_pages", "")
    m = re.search(r"(thp|hugetlb): ([\d.]+ \w+) of ([\d.]+ \w+) on huge pages", note)
    assert m, f"summary host_pages is {note!r}"
    assert not m.group(2).startswith("0 "), f"nothing landed on huge pages: {note}"
    assert d["params"]["host_mem"] == "huge", d["params"]
    print("ok:", len(res), "records;", note)
else:
    assert all(r["status"] == "waived" and "huge" in r["reason"] for r in res), res
    print("waived:", res[0]["reason"])
PY
}

"$xb" copy --backend host -t d2d,h2d,d2h -s 4M -n 3 --host-mem huge --format json -o "$tmp/copy.json" -q
check "$tmp/copy.json"
"$mpiexec" -n 2 "$xb" remote --backend host -s 1M -n 5 --host-mem huge --format json -o "$tmp/remote.json" -q
check "$tmp/remote.json"
"$mpiexec" -n 2 "$xb" kv --block-bytes 1M --blocks 4 -n 2 --host-mem huge --format json -o "$tmp/kv.json" -q
check "$tmp/kv.json"
"$xb" engine selftest -t 4M -k 1M --block-steps 1 -n 2 --host-mem huge --format json -o "$tmp/self.json" -q
check "$tmp/self.json"
# A server's region on huge pages, and a client whose memory is too.
export XFERBENCH_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$((20000 + RANDOM % 20000))
"$xb" engine serve --listen 127.0.0.1:$port --size 4M --host-mem huge --accept-wait 30 2>"$tmp/serve.log" &
server=$!
"$xb" engine client --connect 127.0.0.1:$port -t 4M -k 1M --block-steps 1 -n 2 --host-mem huge \
  --connect-timeout 20 --format json -o "$tmp/client.json" -q
wait $server
check "$tmp/client.json"
[ "$offered" = 0 ] || grep -q "huge pages" "$tmp/serve.log" || { echo "serve: no huge pages in its log:"; cat "$tmp/serve.log"; exit 1; }

# Bad input: one line, exit 2.
set +e
out=$("$xb" copy --host-mem gigantic 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "--host-mem gigantic: exit $rc, want 2: $out"; exit 1; }
echo "$out" | grep -q "host-mem" || { echo "--host-mem gigantic: message does not name it: $out"; exit 1; }
echo "host_pages: all checks passed"
