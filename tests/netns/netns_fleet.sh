#!/usr/bin/env bash
# `xferbench fleet` on five "hosts", one of them or one link made slow with tc:
#   netns_fleet.sh [XFERBENCH [MPIEXEC]] SCENARIO
#
# Five network namespaces (10.78.0.1-5/24, interface xb0 in each) on a bridge in
# a sixth, as in netns_faults.sh but with their own prefix (xbl<pid>) and subnet,
# so the two can run side by side. MPICH's hydra starts one rank per namespace,
# rank i in namespace i (the hosts file's order): mpiexec runs in namespace 0
# (-localhost 10.78.0.1) and reaches the others through a fake ssh. UCX_TLS=tcp
# and UCX_NET_DEVICES=xb0 keep the traffic on the veths, where tc shapes it. The
# namespaces share the host name, so fleet names member i "$(hostname)#i" (H#i).
#
# Scenarios (a CTest test each):
#   nofault  no shaping: exit 0, slow_hosts and slow_links empty
#   host     everything namespace 3 sends through a tbf at the slow rate: exit 1,
#            slow_hosts "H#3", slow_links empty
#   link     1 -> 2 and 2 -> 1 slow (in 1 and in 2 an htb root whose default class
#            runs at 100gbit, a class at the slow rate with a tbf leaf, a u32
#            filter on the peer's address into it): exit 1, slow_links
#            "H#1<->H#2", slow_hosts empty
#   asym     the same, 1 -> 2 only: exit 1, slow_links names H#1<->H#2, no host
#   dead     1 <-> 2 drops everything, silently, from the moment the run has written
#            its file (each end gets a permanent neighbour entry for the other's
#            address with a MAC nobody owns: the frames leave and nobody takes them;
#            this kernel has no netem). Cut once MPI is up: MPICH over UCX's TCP
#            connects every pair inside MPI_Init, so a path dead before the start
#            stops MPI's own start-up. Exit 1, slow_links "H#1<->H#2" with its failed
#            passes, no host, no failed record of another pair, --deadline 20
#   crawl    1 <-> 2 as in link at 1/40 of the unshaped figure, 32 MiB transfers:
#            the pair's time box ends its iterations (records with "boxed"), exit 1,
#            slow_links "H#1<->H#2", no host
#   crawlhost  namespace 3 as in host at 1/40, 32 MiB transfers: exit 1,
#            slow_hosts "H#3", no link
#   killed   no shaping, --passes 5, hydra's clean-up off; rank 4 SIGKILLed once
#            the -o file holds a send record: a non-zero exit (not the deadline),
#            the file parses, keeps its send records, and its summary says
#            interrupted, stopped_by "lost rank"
#   rails    every host also has xb1 (10.78.1.1-5/24) on a second bridge: rail 0 is xb0,
#            rail 1 xb1; what namespace 3 sends on xb1 goes through a tbf at the slow rate.
#            fleet --rails --nic xb0,xb1: exit 1, slow_hosts "H#3 rail 1 (xb1)" alone, no
#            link; each namespace's xb1 sent at least the bytes of its rail-1 send records
#            (the rail's traffic took its NIC), and namespace 3's tbf carried them
#   check    what needs no fleet command: the namespaces, the launcher (5 ranks,
#            rank i in namespace i), coll allreduce over the 5, a rank killed in
#            namespace 4 (coll, the file marked by rank 0), the calibration, each
#            shaping measured (its direction >= 10x slower than an unaffected
#            pair), the qdiscs removed again; it reports what a shaped egress does
#            to what the namespace receives: nothing while it only receives (its
#            ACKs are few), much while it also sends (they queue in the tbf
#            behind its data: fleet's "both at once" of a slow host's pairs)
#
# The slow rate is 1/20 of the unshaped figure (check: 1/50, so that its 10x holds
# against the swings of an unaffected pair), at least NETNS_FLEET_FLOOR_MBIT
# (20) mbit; NETNS_FLEET_RATE_MBIT sets it instead. The unshaped figure is the
# lower of an MPI send between namespaces 0 and 1 (coll broadcast, 2 ranks, 4 MiB,
# the better way) and, for the fleet scenarios, the reference_gbps of an unshaped
# `fleet --passes 1`: five busy-polling ranks on a small machine see a fraction of
# what two do, and the slow pairs must stay well under the FAIL threshold (0.25)
# of what fleet sees. (`remote --transport rma` is no calibration: UCX's emulated
# get over TCP reaches ~0.2 GB/s, a tenth of a send.) After shaping, the shaped
# direction is measured the same way; it must run at no more than 1.25x the slow
# rate, or the run stops as a FAIL of the harness, not of fleet.
#
# Knobs: NETNS_FLEET_REPS (default 1): the fleet run that many times in a row on
# the same namespaces and shaping, every one must pass (the acceptance asks for 3:
# `NETNS_FLEET_REPS=3 tests/netns/netns_fleet.sh build/default/xferbench host`;
# allow ~1 more minute a repetition); NETNS_FLEET_LIMIT (s, each fleet run's
# deadline, default 120); NETNS_FLEET_OPTS (more fleet options); NETNS_PEER_TIMEOUT
# (the ranks' XFERBENCH_PEER_TIMEOUT, default 10); NETNS_MPIEXEC_OPTS;
# NETNS_KEEP_LOGS=1 (keep the scratch folder).
#
# Exit codes: 0 pass, 1 a FAIL, 2 bad usage, 77 skipped (not root; no ip, tc,
# python3 or hydra; a qdisc this kernel lacks; an xferbench without the fleet
# command), with the reason on the "SKIP:" line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
case $# in
1) scenario=$1; xb=$root/build/default/xferbench; mpiexec=$("$(dirname "$0")/../../scripts/mpi-launcher.sh" "$xb") ;;
2) xb=$1; scenario=$2; mpiexec=$("$(dirname "$0")/../../scripts/mpi-launcher.sh" "$xb") ;;
3) xb=$1; mpiexec=$2; scenario=$3 ;;
*) echo "usage: $0 [XFERBENCH [MPIEXEC]] nofault|host|link|asym|dead|crawl|crawlhost|killed|rails|check" >&2; exit 2 ;;
esac
case $scenario in
nofault | host | link | asym | dead | crawl | crawlhost | killed | rails | check) ;;
*) echo "netns_fleet.sh: unknown scenario '$scenario' (nofault host link asym dead crawl crawlhost killed rails check)" >&2; exit 2 ;;
esac
reps=${NETNS_FLEET_REPS:-1}
limit=${NETNS_FLEET_LIMIT:-120}
peer_timeout=${NETNS_PEER_TIMEOUT:-10}
floor_mbit=${NETNS_FLEET_FLOOR_MBIT:-20}
t_start=$(date +%s.%N)

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null || skip "iproute2's ip is not installed"
command -v timeout >/dev/null || skip "coreutils' timeout is not installed"
command -v python3 >/dev/null || skip "python3 is not installed (it reads the JSON)"
shapes=0
case $scenario in host | link | asym | crawl | crawlhost | rails | check) shapes=1 ;; esac
[ $shapes = 0 ] || command -v tc >/dev/null || skip "iproute2's tc is not installed"
[ -n "$mpiexec" ] && [ -x "$mpiexec" ] || skip "mpiexec not found"
"$mpiexec" -info 2>&1 | grep -qi hydra || skip "$mpiexec is not MPICH's hydra (needs -launcher-exec)"
[ -x "$xb" ] || skip "no xferbench binary at $xb (build it first)"
xb=$(readlink -f "$xb")
if [ "$scenario" != check ]; then
  "$xb" fleet --help >/dev/null 2>&1 || skip "this xferbench has no fleet command"
fi

id=xbl$$  # unique per run; interface names stay under 15 characters
ns=("${id}n0" "${id}n1" "${id}n2" "${id}n3" "${id}n4")
sw="${id}s"
addr=(10.78.0.1 10.78.0.2 10.78.0.3 10.78.0.4 10.78.0.5)
addr1=(10.78.1.1 10.78.1.2 10.78.1.3 10.78.1.4 10.78.1.5)  # rails: xb1, on bridge br1
host=$(hostname)
tmp=$(mktemp -d "/tmp/netns_fleet.$$.XXXXXX")
[ "${NETNS_KEEP_LOGS:-0}" = 1 ] && touch "$tmp/kept"
created=()

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
ns_procs() { local s; for s in "${ns[@]}" "$sw"; do ip netns pids "$s" 2>/dev/null; done; }
kill_ns_procs() {  # kill_ns_procs [GRACE_S]: after GRACE_S, SIGKILL what is left in the namespaces
  local p
  for _ in $(seq $((${1:-0} * 10))); do [ -z "$(ns_procs)" ] && break; sleep 0.1; done
  for p in $(ns_procs); do kill -9 "$p" 2>/dev/null; done
}
cleanup() {
  local j; for j in $(jobs -p); do kill "$j" 2>/dev/null; done
  kill_ns_procs
  sleep 0.2
  local s
  for s in "${created[@]}"; do ip netns del "$s" 2>/dev/null; done
  if [ "${NETNS_KEEP_LOGS:-0}" = 1 ]; then echo "logs kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Namespaces left by an earlier run that was killed outright (SIGKILL skips the trap).
for old in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^xbl[0-9]+(n[0-4]|s)$'); do
  p=${old#xbl}; p=${p%s}; p=${p%n[0-4]}
  kill -0 "$p" 2>/dev/null && continue
  for q in $(ip netns pids "$old" 2>/dev/null); do kill -9 "$q" 2>/dev/null; done
  ip netns del "$old" 2>/dev/null
done
for old in /tmp/netns_fleet.[0-9]*.*; do  # and their scratch folders (not those kept on purpose)
  [ -d "$old" ] && [ ! -e "$old/kept" ] || continue
  p=${old#/tmp/netns_fleet.}; p=${p%%.*}
  [ "$p" != $$ ] && ! kill -0 "$p" 2>/dev/null && rm -rf "$old"
done

# --- the namespaces ---------------------------------------------------------
t0=$(now)
probe() {  # probe WHAT CMD...: runs CMD, skips with its stderr when it fails
  local what=$1; shift
  "$@" 2>"$tmp/probe.err" >/dev/null ||
    skip "$what failed: '$*': $(tr '\n' ' ' <"$tmp/probe.err")"
}
probe "ip netns add" ip netns add "$sw"
created+=("$sw")
probe "ip netns exec" ip netns exec "$sw" true
probe "a bridge" ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
ip -n "$sw" link set lo up
for i in 0 1 2 3 4; do
  probe "ip netns add" ip netns add "${ns[$i]}"
  created+=("${ns[$i]}")
  ip -n "${ns[$i]}" link set lo up
  probe "a veth pair" ip link add "${id}h$i" type veth peer name "${id}p$i"
  probe "moving a veth into a namespace" ip link set "${id}h$i" netns "${ns[$i]}"
  ip link set "${id}p$i" netns "$sw"
  ip -n "${ns[$i]}" link set "${id}h$i" name xb0
  ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev xb0
  ip -n "${ns[$i]}" link set xb0 up
  ip -n "$sw" link set "${id}p$i" master br0
  ip -n "$sw" link set "${id}p$i" up
done
if [ "$scenario" = rails ]; then  # a second NIC per host, on a bridge of its own
  probe "a second bridge" ip -n "$sw" link add br1 type bridge
  ip -n "$sw" link set br1 up
  for i in 0 1 2 3 4; do
    probe "a veth pair" ip link add "${id}i$i" type veth peer name "${id}q$i"
    ip link set "${id}i$i" netns "${ns[$i]}"
    ip link set "${id}q$i" netns "$sw"
    ip -n "${ns[$i]}" link set "${id}i$i" name xb1
    ip -n "${ns[$i]}" addr add "${addr1[$i]}/24" dev xb1
    ip -n "${ns[$i]}" link set xb1 up
    ip -n "$sw" link set "${id}q$i" master br1
    ip -n "$sw" link set "${id}q$i" up
  done
fi

# The fake ssh: hydra calls it as `ssh -x HOST CMD`; it runs CMD in HOST's namespace.
{
  echo '#!/bin/bash'
  echo 'while [ $# -gt 0 ]; do case $1 in -x|-q|-T) shift ;; -o|-p|-l) shift 2 ;; *) break ;; esac; done'
  echo 'host=$1; shift'
  echo 'case $host in'
  for i in 0 1 2 3 4; do echo "${addr[$i]}) n=${ns[$i]} ;;"; done
  echo '*) echo "fake ssh: unknown host $host" >&2; exit 255 ;;'
  echo 'esac'
  echo 'exec ip netns exec $n sh -c "$*"'
} >"$tmp/ssh"
chmod +x "$tmp/ssh"
printf '%s\n' "${addr[@]}" >"$tmp/hosts5"

# --- tc -----------------------------------------------------------------------
tcn() { local n=$1; shift; ip netns exec "${ns[$n]}" tc "$@"; }
unshape() { local i; for i in 0 1 2 3 4; do tcn $i qdisc del dev xb0 root 2>/dev/null; done; }
nic_bytes() {  # "NS NIC TX_BYTES" of xb0 and xb1 in every namespace
  local i n
  for i in 0 1 2 3 4; do for n in xb0 xb1; do
    echo "$i $n $(ip netns exec "${ns[$i]}" cat /sys/class/net/$n/statistics/tx_bytes 2>/dev/null || echo 0)"
  done; done
}
shape_host() {  # shape_host NS RATE: everything NS sends
  tcn "$1" qdisc add dev xb0 root tbf rate "$2" burst 256kb latency 100ms
}
shape_link() {  # shape_link FROM TO RATE: what FROM sends to TO
  local f=$1 t=$2 r=$3
  if ! tcn "$f" qdisc show dev xb0 | grep -q 'qdisc htb 1:'; then
    tcn "$f" qdisc add dev xb0 root handle 1: htb default 10 &&
      tcn "$f" class add dev xb0 parent 1: classid 1:10 htb rate 100gbit quantum 60000 || return 1
  fi
  tcn "$f" class add dev xb0 parent 1: classid 1:2$t htb rate "$r" ceil "$r" quantum 60000 &&
    tcn "$f" qdisc add dev xb0 parent 1:2$t handle 2$t: tbf rate "$r" burst 256kb latency 100ms &&
    tcn "$f" filter add dev xb0 parent 1: protocol ip prio 1 u32 match ip dst "${addr[$t]}/32" flowid 1:2$t
}
# cut_link A B: A and B drop everything between them, silently: each holds a permanent
# neighbour entry for the other's address with a MAC no interface has, so its frames leave
# through the bridge and nobody takes them (no error comes back: a dead path, not a refusal).
cut_link() {
  ip -n "${ns[$1]}" neigh replace "${addr[$2]}" lladdr 02:de:ad:00:00:0"$2" dev xb0 nud permanent &&
    ip -n "${ns[$2]}" neigh replace "${addr[$1]}" lladdr 02:de:ad:00:00:0"$1" dev xb0 nud permanent
}
# tcp_probe FROM TO: "open", "refused" (the host answers: nothing listens on the port) or
# "silent" (no answer within 2 s), from namespace FROM to TO's address
tcp_probe() {
  ip netns exec "${ns[$1]}" python3 -c '
import socket, sys
s = socket.socket(); s.settimeout(2)
try:
    s.connect((sys.argv[1], 9)); print("open")
except ConnectionRefusedError: print("refused")
except (socket.timeout, OSError): print("silent")' "${addr[$2]}"
}
uncut_link() { ip -n "${ns[$1]}" neigh del "${addr[$2]}" dev xb0; ip -n "${ns[$2]}" neigh del "${addr[$1]}" dev xb0; }
cut_measured() {  # the cut took: 1 -> 2 and 2 -> 1 silent, 1 -> 0 and 2 -> 0 answer
  local a b c d
  a=$(tcp_probe 1 2) b=$(tcp_probe 2 1) c=$(tcp_probe 1 0) d=$(tcp_probe 2 0)
  verdict cut_dead "$([ "$a$b" = silentsilent ] && [ "$c" = refused ] && [ "$d" = refused ] && echo 1 || echo 0)" \
    "1->2 $a, 2->1 $b; 1->0 $c, 2->0 $d (a TCP connect to port 9)"
}
if [ $shapes = 1 ]; then  # the qdiscs this kernel has: probed on namespace 0's xb0
  probe "tc's tbf qdisc" shape_host 0 100mbit
  unshape
  probe "tc's htb qdisc with a tbf leaf and a u32 filter" shape_link 0 1 100mbit
  unshape
fi
echo "xferbench: $xb"
echo "namespaces: ${ns[*]} (bridge in $sw), hosts ${addr[*]}, members $host#0..$host#4"
echo "setup: $(secs "$t0" "$(now)") s"

# --- running ------------------------------------------------------------------
hung() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }
rank_pids() {  # rank_pids NS_INDEX: the xferbench processes in that namespace
  local p
  for p in $(ip netns pids "${ns[$1]}" 2>/dev/null); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$xb" ] && echo "$p"
  done
}
all_rank_pids() { local i; for i in 0 1 2 3 4; do rank_pids $i; done; }
# launch LIMIT HOSTS_FILE OUT_BASE [MPIEXEC_OPTS...] -- CMD...: mpiexec in the namespace of
# the file's first host, in the background; sets pid
launch() {
  local lim=$1 hosts=$2 out=$3 first n i; shift 3
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  first=$(head -1 "$hosts")
  n=$(wc -l <"$hosts")
  for i in 0 1 2 3 4; do [ "${addr[$i]}" = "$first" ] && break; done
  # shellcheck disable=SC2086
  timeout -k 3 "$lim" ip netns exec "${ns[$i]}" "$mpiexec" -localhost "$first" \
    -launcher ssh -launcher-exec "$tmp/ssh" -f "$hosts" -n "$n" -ppn 1 \
    -genv UCX_TLS tcp -genv UCX_NET_DEVICES xb0 -genv XFERBENCH_PEER_TIMEOUT "$peer_timeout" \
    ${NETNS_MPIEXEC_OPTS:-} "${opts[@]}" "$@" >"$out.out" 2>"$out.err" &
  pid=$!
}
run() {  # run LIMIT HOSTS_FILE OUT_BASE [OPTS...] -- CMD...: launch and wait; sets rc, took
  local t; t=$(now)
  launch "$@"
  wait $pid; rc=$?
  took=$(secs "$t" "$(now)")
  [ "${KEEP_OTHERS:-0}" = 1 ] || kill_ns_procs 2  # KEEP_OTHERS=1: another run is still going
}
show() {  # show FILE...: the lines that say why a run ended (else its last lines)
  local lines
  lines=$(cat "$@" 2>/dev/null | grep -E 'xferbench: |BAD TERMINATION|EXIT CODE|Abort\(|Fatal|UCX +ERROR|Assertion' |
    grep -v mpool.c)
  [ -n "$lines" ] || lines=$(cat "$@" 2>/dev/null | grep -v mpool.c | tail -3)
  echo "${lines:-(nothing on stdout or stderr)}" | head -10 | cut -c1-220 | sed 's/^/    | /'
}
fails=0
summary=()
verdict() {  # verdict NAME GOOD(0|1) DETAIL
  local v=PASS
  [ "$2" = 1 ] || { v=FAIL; fails=$((fails + 1)); }
  echo "$v $1: $3"
  summary+=("$(printf '%-4s %-22s %s' "$v" "$1" "$3")")
}

# oneway SRC DST: GB/s of an MPI send SRC -> DST (coll broadcast, 2 ranks, root SRC), "" on failure;
# ONEWAY_SIZE (4M), ONEWAY_ITERS (5)
oneway() {
  local s=$1 d=$2 f="$tmp/bw.$1.$2"
  printf '%s\n' "${addr[$s]}" "${addr[$d]}" >"$f.hosts"
  run 30 "$f.hosts" "$f" -- "$xb" coll broadcast --backend host -s "${ONEWAY_SIZE:-4M}" \
    -n "${ONEWAY_ITERS:-5}" -w 1 -r 0 --outofplace --format json -o "$f.json"
  [ $rc -eq 0 ] || { echo "  (broadcast $s -> $d: exit $rc)" >&2; show "$f.err" "$f.out" >&2; return; }
  python3 -c 'import json, sys; print("%.4f" % json.load(open(sys.argv[1]))["results"][0]["gbps"]["median"])' "$f.json"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "inf" }'; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b + 0) }'; }

# The launcher: rank r must run in namespace r.
t0=$(now)
timeout -k 3 60 ip netns exec "${ns[0]}" "$mpiexec" -localhost "${addr[0]}" -launcher ssh -launcher-exec "$tmp/ssh" \
  -f "$tmp/hosts5" -n 5 -ppn 1 sh -c 'echo "$PMI_RANK $(ip -4 -o addr show xb0 | awk "{print \$4}")"' \
  >"$tmp/placed" 2>&1
placed=$(sort "$tmp/placed" | tr '\n' ' ')
want=""; for i in 0 1 2 3 4; do want+="$i ${addr[$i]}/24 "; done
verdict launcher "$([ "$placed" = "$want" ] && echo 1 || echo 0)" "ranks and addresses: $placed($(secs "$t0" "$(now)") s)"
[ "$placed" = "$want" ] || { echo "the launcher does not place ranks in namespaces; stopping"; exit 1; }

# --- calibration and shaping -----------------------------------------------------
fleet_args=(fleet --backend host -s 4M -n 3 --concurrency 1 --threshold 0.25 --no-census --format json)
case $scenario in
# Transfers long enough at the crawl rate that a pair's 12 of them overrun the 5 s box.
crawl | crawlhost) fleet_args=(fleet --backend host -s 32M -n 3 --concurrency 1 --threshold 0.25 --no-census --format json) ;;
rails) fleet_args+=(--rails --nic "xb0,xb1") ;;
# The first steps have no healthy pair yet to size the box on: --deadline bounds them.
dead) fleet_args+=(--deadline 20) ;;
esac
best() { printf '%s\n' "$@" | awk 'NF && $1 + 0 > m { m = $1 + 0 } END { if (m > 0) print m }'; }
lower() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 < b + 0) ? a : b }'; }
json_get() {  # json_get FILE EXPR: a python expression over d (the document), "" when it fails
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); v = eval(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null
}
rate=""; rate_gbps=""
# check: 1/50, so that an unaffected pair's figure, which swings 2-5x on a busy 2-core machine,
# still stands >= 10x above the shaped one
divisor=20
case $scenario in check) divisor=50 ;; crawl | crawlhost) divisor=40 ;; esac
if [ $shapes = 1 ]; then
  t0=$(now)
  b01=$(oneway 0 1)
  b10=$(oneway 1 0)
  base=$(best "$b01" "$b10")
  echo "unshaped: 0->1 ${b01:-?} GB/s, 1->0 ${b10:-?} GB/s (an MPI send of 4 MiB: coll broadcast, 2 ranks) [$(secs "$t0" "$(now)") s]"
  [ -n "$base" ] || { verdict calibration 0 "no unshaped figure (coll broadcast between 0 and 1 failed)"; exit 1; }
  if [ "$scenario" != check ]; then
    # What fleet itself sees of the healthy pairs, 5 ranks on these cores: the slow rate must be
    # well below it, so the lower of the two figures is the calibration.
    t0=$(now)
    f=$tmp/calibration
    # shellcheck disable=SC2086
    run "$limit" "$tmp/hosts5" "$f" -- "$xb" "${fleet_args[@]}" --passes 1 ${NETNS_FLEET_OPTS:-} -o "$f.json"
    ref=$(json_get "$f.json" 'float(d["summary"]["reference_gbps"])')
    if ! at_least "$ref" 0.000001; then
      verdict calibration 0 "the unshaped fleet run (--passes 1, exit $rc in $took s) gave no reference_gbps"
      show "$f.err" "$f.out"; exit 1
    fi
    echo "unshaped fleet --passes 1: reference_gbps $ref (exit $rc) [$took s]"
    base=$(lower "$base" "$ref")
  fi
  if [ -n "${NETNS_FLEET_RATE_MBIT:-}" ]; then
    rate=${NETNS_FLEET_RATE_MBIT}mbit
  else
    rate=$(awk -v g="$base" -v d="$divisor" -v f="$floor_mbit" 'BEGIN { m = int(g * 8000 / d); if (m < f) m = f; print m "mbit" }')
  fi
  rate_gbps=$(awk -v r="${rate%mbit}" 'BEGIN { printf "%.4f", r / 8000 }')
  echo "calibration: $base GB/s unshaped; the slow rate $rate ($rate_gbps GB/s, at most 1/$divisor of it, at least ${floor_mbit}mbit)"
fi

# measured NAME SLOW_SRC SLOW_DST FAST_SRC FAST_DST [OTHER_SRC OTHER_DST]: the shaping took when
# the shaped direction runs at no more than 1.25x the slow rate; in `check` the unaffected pair
# (the better of two runs) must also be >= 10x faster. OTHER is reported (the way back, where
# only the ACKs are shaped).
measured() {
  local name=$1 t0 slow fast other="" good=0 detail
  t0=$(now)
  slow=$(ONEWAY_ITERS=3 oneway "$2" "$3")
  fast=$(best "$(oneway "$4" "$5")" "$(oneway "$4" "$5")")
  [ $# -ge 7 ] && other=$(oneway "$6" "$7")
  last_other=$other
  if [ -n "$slow" ] && [ -n "$fast" ] && at_least "$(awk -v r="$rate_gbps" 'BEGIN { print r * 1.25 }')" "$slow"; then
    good=1
    [ "$scenario" = check ] && ! at_least "$fast" "$(awk -v s="$slow" 'BEGIN { print s * 10 }')" && good=0
  fi
  detail="$2->$3 ${slow:-?} GB/s shaped (rate $rate_gbps), $4->$5 ${fast:-?} GB/s unaffected ($(ratio "$fast" "$slow")x)"
  [ -n "$other" ] && detail+=", $6->$7 ${other:-?} GB/s ($(ratio "$fast" "$other")x below the unaffected)"
  detail+=" [$(secs "$t0" "$(now)") s]"
  verdict "$name" $good "$detail"
}

apply() {  # apply SCENARIO: its shaping, and the measurement that it took
  local t0; t0=$(now)
  case $1 in
  host | crawlhost) shape_host 3 "$rate" || return 1 ;;
  rails) tcn 3 qdisc add dev xb1 root tbf rate "$rate" burst 256kb latency 100ms || return 1 ;;
  link | crawl) { shape_link 1 2 "$rate" && shape_link 2 1 "$rate"; } || return 1 ;;
  asym) shape_link 1 2 "$rate" || return 1 ;;
  dead) cut_link 1 2 || return 1 ;;
  esac
  echo "shaping $1 (${rate:-no rate}): took $(secs "$t0" "$(now)") s"
  case $1 in
  host | crawlhost) measured shaping_host 3 0 1 2 0 3 ;;  # 0 -> 3: into the shaped host (its ACKs go out shaped)
  link | crawl) measured shaping_link 1 2 1 0 2 1 ;;  # 1 -> 0: the same interface, another peer
  asym) measured shaping_asym 1 2 1 0 2 1 ;;  # 2 -> 1: the way back (only its ACKs are shaped)
  dead) cut_measured ;;
  rails) ;;  # rail 1 has no MPI path to measure it by: the tbf's own counters speak after the run
  esac
}

# --- check: everything but fleet ----------------------------------------------------
if [ "$scenario" = check ]; then
  f=$tmp/allreduce
  run 90 "$tmp/hosts5" "$f" -- "$xb" coll allreduce --backend host -s 1M -n 5 -w 1 --format json -o "$f.json"
  n=$(json_get "$f.json" 'len(d["results"])')
  verdict allreduce_5ranks "$([ $rc -eq 0 ] && [ "${n:-0}" -ge 1 ] && echo 1 || echo 0)" "exit $rc in $took s, ${n:-no} records"
  [ $rc -eq 0 ] || show "$f.err" "$f.out"

  # The killed scenario's plumbing with a command that exists: rank 4 found in its namespace
  # and SIGKILLed once the file holds a record; rank 0 marks the file.
  f=$tmp/allreduce_killed
  t0=$(now)
  launch 60 "$tmp/hosts5" "$f" -disable-auto-cleanup -- "$xb" coll allreduce --backend host -s 1M -n 5 -w 1 \
    --cycles 0 --format json -o "$f.json"
  killed=""
  for _ in $(seq 600); do
    kill -0 $pid 2>/dev/null || break
    if grep -q '"case":' "$f.json" 2>/dev/null; then
      victims=$(rank_pids 4)
      [ -n "$victims" ] && { kill -9 $victims; killed=$(now); break; }
    fi
    sleep 0.05
  done
  wait $pid; rc=$?
  kill_ns_procs 2
  n=$(json_get "$f.json" 'len(d["results"])')
  marked=$(json_get "$f.json" 'd["summary"].get("interrupted") is True and d["summary"].get("stopped_by") == "lost rank"')
  good=0
  [ -n "$killed" ] && [ $rc -ne 0 ] && ! hung $rc && [ "${n:-0}" -ge 1 ] && [ "$marked" = True ] && good=1
  verdict allreduce_rank4_killed $good "exit $rc, $([ -n "$killed" ] && echo "$(secs "$killed" "$(now)") s after rank 4 was killed" || echo "rank 4 never killed"), ${n:-no} records kept, marked lost: ${marked:-no} [$(secs "$t0" "$(now)") s]"
  [ $good = 1 ] || show "$f.err"

  far=$(oneway 3 4)
  echo "unshaped: 3->4 ${far:-?} GB/s"
  for s in host link asym; do
    apply $s || verdict "shaping_$s" 0 "tc refused it"
    [ $s = host ] || tcn 1 -s class show dev xb0 2>/dev/null | grep -A1 'class htb 1:22' | sed 's/^/    | /'
    if [ $s = host ]; then
      # Into the shaped host while it sends (as in fleet's "both at once"): its ACKs now wait
      # in the tbf behind its own data. Reported, not judged.
      f=$tmp/bw.bg
      printf '%s\n' "${addr[3]}" "${addr[0]}" >"$f.hosts"
      launch 30 "$f.hosts" "$f" -- "$xb" coll broadcast --backend host -s 4M -n 60 -w 1 -r 0 --outofplace \
        --format json -o "$f.json"
      bg=$pid
      sleep 1.5
      busy=$(KEEP_OTHERS=1 ONEWAY_ITERS=10 oneway 1 3)
      alone_bg=$(kill -0 $bg 2>/dev/null && echo "was still running" || echo "had ended: not concurrent")
      wait $bg
      kill_ns_procs 2
      echo "into the shaped host while it sends: 1->3 ${busy:-?} GB/s during a shaped 3->0 (which $alone_bg), $(ratio "$last_other" "$busy")x below 0->3 alone"
    fi
    unshape
  done
  after=$(oneway 3 0)
  verdict unshaped_again "$(at_least "$after" "$(awk -v b="$base" 'BEGIN { print b / 4 }')" && echo 1 || echo 0)" \
    "3->0 ${after:-?} GB/s once the qdiscs are gone"
else
  # --- fleet -----------------------------------------------------------------------
  if [ $shapes = 1 ]; then apply "$scenario" || { verdict "shaping_$scenario" 0 "tc refused it"; exit 1; }; fi
  # A shaping that did not take is the harness's failure, not fleet's.
  [ $fails -eq 0 ] || { echo "the shaping did not take; stopping"; exit 1; }
  judge() {  # judge FILE SCENARIO RC: prints what the file says; exit 0 when it is what the scenario wants
    python3 - "$@" "$host" <<'EOF'
import json, sys
path, scenario, rc, host = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
H = lambda i: "%s#%d" % (host, i)
try:
    d = json.load(open(path))
except Exception as e:
    print("    | %s does not parse: %s" % (path, e)); sys.exit(1)
s = d.get("summary", {}) or {}
res = d.get("results", []) or []
def names(v):
    return [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else list(v or [])
hosts, links = names(s.get("slow_hosts")), names(s.get("slow_links"))
def r_bytes(recs):
    return max(r.get("bytes", 0) for r in recs) if recs else 0
def fig(r):
    g = r.get("gbps")
    return g.get("median") if isinstance(g, dict) else g
sends = [r for r in res if r.get("case") == "send"]
# The pair matrix as measured: the median of the records src -> dst.
m = {}
for r in sends:
    if isinstance(fig(r), (int, float)): m.setdefault((r.get("src"), r.get("dst")), []).append(fig(r))
med = lambda v: sorted(v)[len(v) // 2]
if m:
    ranks = sorted({k[0] for k in m} | {k[1] for k in m})
    print("    | send GB/s " + "".join("%8s" % ("->%s" % j) for j in ranks))
    for i in ranks:
        print("    | %9s " % i + "".join("%8s" % ("%.3f" % med(m[(i, j)]) if (i, j) in m else "-") for j in ranks))
both = {}
for r in res:
    if r.get("case") == "bidir" and isinstance(fig(r), (int, float)):
        both.setdefault(tuple(sorted((r.get("src"), r.get("dst")))), []).append(fig(r))
if both:
    print("    | bidir GB/s " + " ".join("%s-%s %.3f" % (a, b, med(v)) for (a, b), v in sorted(both.items())))
for r in res:
    if r.get("case") in ("host", "link", "latency", "fleet", "census") and r.get("verdict") != "PASS":
        print("    | %s %s %s: %s" % (r.get("verdict"), r.get("case"), r.get("method"), r.get("why", "")))
print("    | summary: slow_hosts=%r slow_links=%r reference_gbps=%s%s" % (
    s.get("slow_hosts"), s.get("slow_links"), s.get("reference_gbps"),
    "".join(" %s=%r" % (k, s[k]) for k in ("interrupted", "stopped_by", "lost") if k in s)))
bad = []
if scenario == "killed":
    if rc == 0: bad.append("exit 0")
    if not sends: bad.append("no send record kept")
    if s.get("interrupted") is not True: bad.append("not marked interrupted")
    if s.get("stopped_by") != "lost rank": bad.append("stopped_by %r, not 'lost rank'" % s.get("stopped_by"))
else:
    want_rc = 0 if scenario == "nofault" else 1
    # After a dead link MPICH's MPI_Finalize waits on the dead connection; xferbench's watchdog
    # ends every rank with exit 1, which hydra reports as 1, or as 255 when it has killed the
    # last ranks first (BAD TERMINATION). The file and its verdicts are judged either way.
    if scenario == "dead" and rc == 255: rc = 1
    if rc != want_rc: bad.append("exit %d, not %d" % (rc, want_rc))
    if not sends: bad.append("no send record")
    if s.get("interrupted"): bad.append("marked interrupted (%r)" % s.get("stopped_by"))
    want_hosts = [H(3)] if scenario in ("host", "crawlhost") else [H(3) + " rail 1 (xb1)"] if scenario == "rails" else []
    if hosts != want_hosts: bad.append("slow_hosts %r, not %r" % (s.get("slow_hosts"), ",".join(want_hosts)))
    link = "%s<->%s" % (H(1), H(2))
    if scenario in ("link", "dead", "crawl") and links != [link]: bad.append("slow_links %r, not %r" % (s.get("slow_links"), link))
    if scenario == "asym" and link not in links: bad.append("slow_links %r does not name %s" % (s.get("slow_links"), link))
    if scenario in ("nofault", "host", "crawlhost", "rails") and links: bad.append("slow_links %r, not empty" % s.get("slow_links"))
    # A verdict never contradicts its records: failed pairs are named, and only the faulty ones fail.
    failed = [r for r in res if r.get("case") in ("send", "bidir", "pingpong") and r.get("status") == "failed"]
    fails = [r for r in res if r.get("verdict") == "FAIL"]
    if failed and not fails: bad.append("%d failed pair records and no FAIL" % len(failed))
    if scenario == "dead":
        ends = {(r.get("src"), r.get("dst")) for r in failed}
        if not failed: bad.append("no failed pair record")
        if ends - {(1, 2), (2, 1)}: bad.append("failed records of other pairs: %r" % sorted(ends - {(1, 2), (2, 1)}))
        why = [r.get("why", "") for r in res if r.get("case") == "link" and r.get("verdict") == "FAIL"]
        if not any("failed in" in w for w in why): bad.append("the link's why gives no count of failed passes: %r" % why)
    if scenario in ("crawl", "crawlhost"):
        boxed = [r for r in res if r.get("boxed")]
        print("    | %d records time-boxed, e.g. %r; %d failed" % (len(boxed), boxed[0].get("boxed") if boxed else None, len(failed)))
        # The box must end the crawl's iterations whenever all of them would overrun it: 12
        # transfers a pair (3 phases of 1 warm-up and 3 timed) at the crawl's figure.
        slow = (lambda r: r.get("src") == 3) if scenario == "crawlhost" else (lambda r: {r.get("src"), r.get("dst")} == {1, 2})
        crawl = [r for r in sends if slow(r) and not r.get("confirm")]
        figs = sorted(fig(r) for r in crawl if r.get("status") == "ok" and fig(r))
        boxes = [r.get("box_s") for r in crawl if r.get("box_s")]
        if figs and boxes:
            need = 12 * r_bytes(crawl) / (figs[len(figs) // 2] * 1e9)
            print("    | the crawl's pair would take %.1f s unboxed; its boxes: %.1f-%.1f s" % (need, min(boxes), max(boxes)))
            if need > 1.2 * max(boxes) and not boxed and not failed:
                bad.append("no record was time-boxed or failed, yet the crawl overruns its box")
    print("    | failed pair records: %d; boxes (s): %s" % (len(failed), sorted({round(r.get("box_s", 0), 1) for r in res if "box_s" in r})))
print("    | " + ("; ".join(bad) if bad else "as expected"))
sys.exit(1 if bad else 0)
EOF
  }
  passes=3
  [ "$scenario" = killed ] && passes=5
  for r in $(seq "$reps"); do
    f=$tmp/fleet.$r
    t0=$(now)
    if [ "$scenario" = killed ]; then
      # hydra's own clean-up would race rank 0 to marking the file (it kills every rank once one dies)
      # shellcheck disable=SC2086
      launch "$limit" "$tmp/hosts5" "$f" -disable-auto-cleanup -- "$xb" "${fleet_args[@]}" --passes $passes \
        ${NETNS_FLEET_OPTS:-} -o "$f.json"
      killed=""
      for _ in $(seq 1200); do  # up to 60 s for the first send record
        kill -0 $pid 2>/dev/null || break
        if grep -q '"case": *"send"' "$f.json" 2>/dev/null; then
          victims=$(rank_pids 4)
          [ -n "$victims" ] && { kill -9 $victims; killed=$(now); break; }
        fi
        sleep 0.05
      done
      wait $pid; rc=$?
      left=$(all_rank_pids | wc -l)  # ranks still there once mpiexec has ended
      kill_ns_procs 2
      took=$(secs "$t0" "$(now)")
      if [ -z "$killed" ]; then
        verdict "killed_$r" 0 "rank 4 was never killed (exit $rc in $took s: the run ended, or wrote no send record, first)"
        show "$f.err"; continue
      fi
      detail="exit $rc, $(secs "$killed" "$(now)") s after rank 4 was killed ($took s in all, $left ranks left behind)"
    elif [ "$scenario" = dead ]; then
      # shellcheck disable=SC2086
      launch "$limit" "$tmp/hosts5" "$f" -- "$xb" "${fleet_args[@]}" --passes $passes ${NETNS_FLEET_OPTS:-} -o "$f.json"
      cut=""
      for _ in $(seq 1200); do  # MPI is up once the file is there
        kill -0 $pid 2>/dev/null || break
        [ -s "$f.json" ] && { apply dead && cut=$(now); break; }
        sleep 0.05
      done
      wait $pid; rc=$?
      took=$(secs "$t0" "$(now)")
      kill_ns_procs 2
      [ -n "$cut" ] && uncut_link 1 2
      detail="exit $rc in $took s, $([ -n "$cut" ] && echo "cut $(secs "$t0" "$cut") s in" || echo "never cut")"
    else
      [ "$scenario" = rails ] && nic_bytes >"$f.before"
      # shellcheck disable=SC2086
      run "$limit" "$tmp/hosts5" "$f" -- "$xb" "${fleet_args[@]}" --passes $passes ${NETNS_FLEET_OPTS:-} -o "$f.json"
      detail="exit $rc in $took s"
      [ "$scenario" = rails ] && nic_bytes >"$f.after"
    fi
    grep -q 'MPI_Finalize did not return' "$f.err" 2>/dev/null && detail+=" (MPI_Finalize's 10 s watchdog fired)"
    if hung $rc; then verdict "${scenario}_$r" 0 "$detail: the run hit its $limit s deadline"; show "$f.err"; continue; fi
    judge "$f.json" "$scenario" "$rc" >"$f.judged"
    good=$?
    verdict "${scenario}_$r" $((1 - good)) "$detail"
    cat "$f.judged"
    [ $good = 0 ] || show "$f.err" "$f.out"
    if [ "$scenario" = rails ]; then  # each rail's bytes left through its own NIC
      python3 - "$f.json" "$f.before" "$f.after" >"$f.bytes" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def counts(path):
    out = {}
    for line in open(path):
        ns, nic, n = line.split()
        out[(int(ns), nic)] = int(n)
    return out
before, after = counts(sys.argv[2]), counts(sys.argv[3])
bad = []
for rail, nic in ((0, "xb0"), (1, "xb1")):
    for i in range(5):
        sent = sum(r["bytes"] * r["iters"] for r in d["results"]
                   if r.get("case") == "send" and r.get("rail") == rail and r.get("src") == i and r.get("status") == "ok")
        tx = after[(i, nic)] - before[(i, nic)]
        print("    | rail %d: namespace %d sent %d bytes in its records, %s counted %d" % (rail, i, sent, nic, tx))
        if sent == 0 or tx < sent: bad.append("rail %d namespace %d: %s counted %d < %d sent" % (rail, i, nic, tx, sent))
# Each send record's own counters: the sender's NIC sent, the receiver's got, the bytes of its
# transfers (the timed ones and at most one warm-up), TCP/IP headers on top (within 15 %).
n, worst = 0, []
for r in d["results"]:
    if r.get("case") != "send" or r.get("status") != "ok" or "rail" not in r: continue
    lo, hi = r["bytes"] * r["iters"], r["bytes"] * (r["iters"] + 1) * 1.15 + 2e6
    for k in ("nic_tx_bytes", "nic_rx_bytes"):
        v = r.get(k)
        n += 1
        if v is None or not lo <= v <= hi:
            bad.append("rail %s %s->%s %s %r not in [%d, %d]" % (r["rail"], r["src"], r["dst"], k, v, lo, hi))
        else:
            worst.append(v / lo)
print("    | %d send records' NIC counters within their transfers' bytes + 15 %%: %d outside; counted/sent %.3f..%.3f" % (
    n, len([b for b in bad if " not in " in b]), min(worst or [0]), max(worst or [0])))
print("    | " + ("; ".join(bad[:5]) if bad else "every rail's bytes went out through its NIC, each record's counters match its bytes"))
sys.exit(1 if bad else 0)
EOF
      good=$?
      tbf=$(tcn 3 -s qdisc show dev xb1 | awk '/Sent/ { print $2; exit }')
      verdict "rails_bytes_$r" $((1 - good)) "each namespace's xb0/xb1 counted at least its rail's sent bytes, each send record's nic_tx_bytes/nic_rx_bytes its own; namespace 3's xb1 tbf carried ${tbf:-?} bytes"
      cat "$f.bytes"
    fi
  done
fi

echo
echo "summary ($scenario, $(secs "$t_start" "$(now)") s): $fails failed"
printf '%s\n' "${summary[@]}"
[ $fails -eq 0 ]
