#!/usr/bin/env bash
# Every field a record carries is declared: fields_declared.sh XFERBENCH MPIEXEC
# Runs each command small on the host backend with --format json (the
# multi-rank ones under mpiexec -n 2), then checks each record's keys against
# what `list --format json` declares: the fields every record has, the run's
# (cycle, t_unix) and the family's schema, each with its type. A field a
# family writes but did not declare is invisible to `compare` and `--fields`.
# Runs that ask for optional fields (--threads lists, --window, --samples,
# alltoallv, --cycles, lanes, fanin) are here so those fields are checked
# too; the fields no run here writes (device-only ones) are listed.
set -u
xb=$1 mpiexec=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; tail -30 "$tmp/log" 2>/dev/null; exit 1; }
run() {  # run NAME CMD...: the JSON of CMD in $tmp/NAME.json
  local name=$1
  shift
  "$@" --backend host --format json -q -o "$tmp/$name.json" >"$tmp/log" 2>&1 ||
    fail "$name exited $?: $*"
}
mpi2() { "$mpiexec" -n 2 "$@"; }
export XFERBENCH_HOST_DEVICES=2

"$xb" list --backend host --format json -o "$tmp/list.json" -q >"$tmp/log" 2>&1 || fail "list"
run copy "$xb" copy -t h2d,d2d,p2p,all_to_host,one_to_all --bidir --p2p-op read,write \
  --threads 1,2 -s 64K -n 2 -w 0
run copy_cycles "$xb" copy -t d2d -s 4K -n 2 -w 0 --cycles 2
run remote mpi2 "$xb" remote --op get,put --threads 1,2 -s 64K -n 3 -w 0
run remote_window mpi2 "$xb" remote -s 4K --window 4 -n 3 -w 0
run latency mpi2 "$xb" latency --chain 1M --loads 64 -n 5 -w 1 -b 8 -e 64 -f 8
run coll mpi2 "$xb" coll allreduce,alltoallv,gather --skew zipf:1.2 --samples -s 64K -n 2 -w 0
run engine "$xb" engine selftest -t 1M --block-steps 1 --loops 1
run engine_lanes "$xb" engine selftest --lanes 2 -t 1M -k 256K --block-steps 1 --loops 1
run engine_window "$xb" engine selftest --window 4 -t 1M -k 256K --block-steps 1 --loops 1
run engine_fanin mpi2 "$xb" engine fanin -t 1M -k 256K --block-steps 1 --loops 1
run kv mpi2 "$xb" kv --block-bytes 64K --blocks 2,4 -n 2 -w 0
run kv_model mpi2 "$xb" kv --model llama-3.1-8b --tp 2 --decode-tp 4 --isl 64 --burst 1,2 --op both \
  --prefill-tps 1000 -n 2 -w 0
run ep mpi2 "$xb" ep --tokens 1,4 --method all --routing zipf:1.2 -n 2 -w 0
run fleet mpi2 "$xb" fleet -s 256K -n 2 --pings 10 --no-census
run gemm_ar mpi2 "$xb" gemm-ar -M 128 -K 256 -N 128 --base-m 64 --base-n 64 -n 1 -w 0
run doctor "$xb" doctor --quick

/usr/bin/python3 - "$tmp" <<'PY' || fail "undeclared fields (above)"
import glob, json, os, sys

tmp = sys.argv[1]
listing = json.load(open(os.path.join(tmp, "list.json")))
common = set(listing["common_fields"])
run_fields = {f["name"]: f["type"] for f in listing["run_fields"]}
schemas = {f["name"]: {x["name"]: x["type"] for x in f["fields"]} for f in listing["families"]}

def fits(value, kind):  # a JSON value as the writer writes a field of `kind`
    if kind == "int64":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":  # a whole double may print as 1.0 or 1; NaN as null
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if kind == "text":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, list)

# Fields a family writes without declaring them, each waiting for its fix in
# the family (remove the entry with it: the check fails while both hold).
KNOWN_GAPS = set()  # (family, field) pairs a schema still lacks; none today

bad, seen = [], {}
for path in sorted(glob.glob(os.path.join(tmp, "*.json"))):
    if path.endswith("list.json"):
        continue
    doc = json.load(open(path))
    cmd = doc["command"]
    if cmd not in schemas:
        bad.append(f"{os.path.basename(path)}: command {cmd} is not in list's families")
        continue
    declared = {**run_fields, **schemas[cmd]}
    if not doc["results"]:
        bad.append(f"{os.path.basename(path)}: no records")
    for r in doc["results"]:
        for k in common - set(r):
            bad.append(f"{cmd}: a record without the common field {k}")
        for k, v in r.items():
            if k in common:
                continue
            seen.setdefault(cmd, set()).add(k)
            if k not in declared:
                if (cmd, k) not in KNOWN_GAPS:
                    bad.append(f"{cmd}: field {k} is not in its schema (case {r['case']})")
            elif not fits(v, declared[k]):
                bad.append(f"{cmd}: field {k} = {v!r} is not a {declared[k]}")
for cmd, k in sorted(KNOWN_GAPS):
    if k in schemas.get(cmd, {}):
        bad.append(f"{cmd} declares {k} now: drop it from KNOWN_GAPS")
    else:
        print(f"known gap: {cmd} writes {k} undeclared")
for line in sorted(set(bad)):
    print(line)
for cmd in sorted(seen):
    print(f"{cmd}: {len(seen[cmd])} fields checked: {', '.join(sorted(seen[cmd]))}")
    unseen = set(schemas[cmd]) - seen[cmd]
    if unseen:
        print(f"  declared, not written by these runs: {', '.join(sorted(unseen))}")
missing = set(schemas) - set(seen)
if missing:
    print("no record with a family field from:", ", ".join(sorted(missing)))
sys.exit(1 if bad or missing else 0)
PY
echo "ok: every record's fields are declared"
