#!/usr/bin/env bash
# Runs stopped mid-sweep keep every finished record:
#   interrupt.sh XFERBENCH MPIEXEC SCENARIO
# Each scenario starts a long run with -o, waits until the file holds a
# record, stops it, and checks: the exit code (130 SIGINT, 143 SIGTERM, 1 a
# lost rank), that the file parses (`compare FILE FILE` reads it), holds as
# many records as the stop line says were done (and stderr, a file, has no
# blank line before it), is marked interrupted (json
# and jsonl: the summary), and that `report` reads it where matplotlib is.
set -u
xb=$1 mpiexec=$2 scenario=$3
tmp=$(mktemp -d)
trap 'kill -KILL $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL [$scenario]: $*"
  for f in "$tmp"/out "$tmp"/err; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  exit 1
}

records() {  # records FILE FORMAT: how many records the file holds now
  case $2 in
    json | jsonl) grep -c '"case":' "$1" || true ;;
    csv) echo $(($(wc -l <"$1") - 1)) ;;
  esac
}

rank_pid() {  # rank_pid PATTERN RANK: the pid of this test's process of that rank
  local p
  for p in $(pgrep -f "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -Eqx "(PMI_RANK|OMPI_COMM_WORLD_RANK)=$2" && { echo "$p"; return; }
  done
}

start() {  # start FORMAT CMD...: the run in the background, -o $tmp/run.FORMAT
  fmt=$1; shift
  file=$tmp/run.$fmt
  "$@" --format "$fmt" -o "$file" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 300); do
    [ -s "$file" ] && [ "$(records "$file" "$fmt")" -ge 1 ] && return
    kill -0 $pid 2>/dev/null || fail "the run ended before its first record"
    sleep 0.1
  done
  fail "no record in $file within 30 s"
}

finish() {  # finish WANT_RC [STOPPED_BY]: waits, then checks the file
  local want=$1 by=${2:-}
  wait $pid
  local rc=$?
  [[ "$rc" =~ ^($want)$ ]] || fail "exit $rc, expected $want"
  "$xb" compare "$file" "$file" >"$tmp/cmp" 2>&1 || fail "compare cannot read $file: $(cat "$tmp/cmp")"
  local n
  n=$(records "$file" "$fmt")
  [ "$n" -ge 1 ] || fail "no record in $file"
  if [ -n "$by" ]; then
    grep -Eq "stopped by $by after $n records?" "$tmp/err" ||
      fail "the stop line does not say $n records: $(grep stopped "$tmp/err")"
    # stderr is a file here: the notice starts a line of its own only on a terminal (a
    # launcher's own banner, Open MPI's on an aborted job, may hold blank lines of its own)
    awk 'NR > 1 && prev == "" && /^xferbench: stopping/ { bad = 1 } { prev = $0 } END { exit !bad }' \
      "$tmp/err" && fail "a blank line before the stop notice on stderr (not a terminal)"
  fi
  if [ "$fmt" != csv ]; then
    grep -Eq '"interrupted": ?true' "$file" || fail "$file is not marked interrupted"
  fi
  if "$xb" report "$file" -o "$tmp/r.html" >"$tmp/rep" 2>&1; then
    [ -s "$tmp/r.html" ] || fail "report wrote nothing"
  elif ! grep -Eq "needs matplotlib|no python3 found" "$tmp/rep"; then
    fail "report cannot read $file: $(cat "$tmp/rep")"
  fi
  echo "ok [$scenario]: exit $rc, $n records kept in $file"
}

copy=("$xb" copy --backend host -b 2 -e 64M -n 200)
coll=("$mpiexec" -n 2 "$xb" coll allreduce --backend host -b 8 -e 256M -n 50)

case $scenario in
  copy_sigint_json | copy_sigint_csv | copy_sigint_jsonl)
    start "${scenario##*_}" "${copy[@]}"
    kill -INT $pid
    finish 130 SIGINT
    ;;
  copy_sigterm)
    start jsonl "${copy[@]}"
    kill -TERM $pid
    finish 143 SIGTERM
    ;;
  copy_twice)  # a second signal stops at once: the file still parses
    start json "$xb" copy --backend host -t d2d --method dma -b 1M -e 1G -f 2 -n 3000
    kill -INT $pid
    sleep 0.2
    kill -INT $pid
    wait $pid
    rc=$?
    [ "$rc" -eq 130 ] || fail "exit $rc, expected 130 (killed by SIGINT)"
    "$xb" compare "$file" "$file" >/dev/null 2>&1 || fail "compare cannot read $file"
    echo "ok [$scenario]: exit $rc, $(records "$file" json) records kept"
    ;;
  coll_sigint_launcher)  # hydra forwards it to the ranks, which stop with 130; what
    # mpiexec itself then exits with is hydra's choice: 130, or 0 when its proxy reaps a rank
    # after its own clean-up began (README: read stopped_by in the file, or the stop line)
    start json "${coll[@]}"
    kill -INT $pid
    finish "130|0" SIGINT
    ;;
  coll_sigint_ranks)  # --ranks 2 starts the launcher itself: a stop is 130, whatever hydra says
    start json "$xb" coll allreduce --ranks 2 --backend host -b 8 -e 256M -n 50
    kill -INT $pid
    finish 130 SIGINT
    ;;
  kv_model_sigint_ranks)  # kv --model journals each (isl, burst, op) as it ends
    start json "$xb" kv --ranks 2 --backend host --model llama-3.1-8b --tp 2 --page-tokens 16 \
      --isl 64,128,256,512,1024,2048 --burst 1,2,4 --op both -n 50
    kill -INT $pid
    finish 130 SIGINT
    ;;
  ep_sigint_ranks)  # ep journals each ladder step's records as the step ends
    start json "$xb" ep --ranks 2 --backend host --tokens all --method all -n 200
    kill -INT $pid
    finish 130 SIGINT
    ;;
  coll_sigterm_one_rank)  # one rank's signal stops every rank at the same point
    start jsonl "${coll[@]}"
    rank=$(pgrep -f "^$xb coll allreduce .*-o $file" | tail -1)  # this test's, not another's
    [ -n "$rank" ] || fail "no rank process found"
    kill -TERM "$rank"
    finish 143 SIGTERM
    ;;
  engine_client_sigint | engine_client_sigterm)
    port=$((21000 + RANDOM % 30000))
    "$xb" engine serve --listen 127.0.0.1:$port --token-file "$tmp/tok" 2>"$tmp/server" &
    server=$!
    for _ in $(seq 100); do [ -s "$tmp/tok" ] && grep -q listening "$tmp/server" && break; sleep 0.1; done
    start csv "$xb" engine client --connect 127.0.0.1:$port --token-file "$tmp/tok" -t 64M \
      -k 4K --block-steps 11 --loops 20
    if [ "$scenario" = engine_client_sigint ]; then
      kill -INT $pid
      finish 130 SIGINT
    else
      kill -TERM $pid
      finish 143 SIGTERM
    fi
    kill $server 2>/dev/null || true
    ;;
  fanin_sigterm_one_rank)  # engine fanin journals each step's records as the step ends
    start json "$mpiexec" -n 2 "$xb" engine fanin -t 16M -k 1M --block-steps 5 -n 800
    rank=$(rank_pid "^$xb engine fanin .*-o $file" 1)
    [ -n "$rank" ] || fail "no process of rank 1 found"
    kill -TERM "$rank"
    finish 143 SIGTERM
    ;;
  kv_rank_killed | fleet_rank_killed | kv_rank_stopped | fleet_rank_stopped)
    # A rank lost mid-sweep. Killed: hydra SIGKILLs the other ranks within
    # milliseconds of a rank's death by a signal, even with -disable-auto-cleanup,
    # so what must hold is that the file keeps the records done (rank 0 marks it
    # "lost rank" only when it outruns the launcher). Stopped (SIGSTOP, a hung
    # host): the watch ends the run after XFERBENCH_PEER_TIMEOUT, rank 0 marks the
    # file, and only then is the stopped rank killed.
    case $scenario in
      kv_*) cmd=(kv --blocks 16,17,18,19,20,21,22,23,24,25 -n 40) kept='"case": "get"' ;;
      *) cmd=(fleet --backend host -s 4M --passes 50 --no-census --concurrency 1 --pings 20) kept='"case": "send"' ;;
    esac
    export XFERBENCH_PEER_TIMEOUT=2
    # Keep the other ranks when one dies: hydra's -disable-auto-cleanup. Open MPI's mpirun has
    # none that keeps its exit code (--enable-recovery exits 0 whatever the ranks did): it ends
    # the job at the first rank that fails, as hydra does without the flag.
    keep=(-disable-auto-cleanup)
    "$mpiexec" --version 2>&1 | grep -Eq 'Open MPI|OpenRTE' && keep=()
    start json "$mpiexec" "${keep[@]}" -n 3 "$xb" "${cmd[@]}"
    rank=$(rank_pid "^$xb ${cmd[0]} .*-o $file" 2)  # not rank 0: it is the one that marks the file
    [ -n "$rank" ] || fail "no process of rank 2 found"
    if [ "${scenario##*_}" = stopped ]; then
      kill -STOP "$rank"
      for _ in $(seq 200); do grep -q '"stopped_by": "lost rank"' "$file" && break; sleep 0.1; done
      kill -KILL "$rank"
    else
      kill -KILL "$rank"
    fi
    wait $pid
    rc=$?
    [ "$rc" -ne 0 ] || fail "exit 0 after a rank was lost"
    "$xb" compare "$file" "$file" >/dev/null 2>&1 || fail "compare cannot read $file"
    grep -q "$kept" "$file" || fail "$file kept no record of the run"
    if [ "${scenario##*_}" = killed ] && ! grep -q '"stopped_by": "lost rank"' "$file"; then
      echo "ok [$scenario]: exit $rc, $(records "$file" json) records kept (the launcher killed rank 0 before it marked the file)"
      exit 0
    fi
    grep -q '"stopped_by": "lost rank"' "$file" || fail "$file does not name the lost rank"
    grep -Eq '"lost": "rank 0 lost rank 2' "$file" || fail "$file does not say which rank"
    echo "ok [$scenario]: exit $rc, $(records "$file" json) records kept, marked lost"
    ;;
  *) fail "unknown scenario" ;;
esac
