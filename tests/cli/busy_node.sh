#!/usr/bin/env bash
# A job-like mixed load on this machine, for doctor's tests under load:
# three MPI ranks cycling collectives, a compile loop, and bursts of a
# single-threaded 128 MiB copy. Runs until killed (or BUSY_SECONDS, default
# 600, as a bound), each part in its own process group; `busy_node.sh stop
# PIDFILE` ends them all.
#   busy_node.sh start XFERBENCH PIDFILE   start the load in the background
#   busy_node.sh stop PIDFILE              stop it
set -u
case "${1:-}" in
start)
  XB=$2 PIDFILE=$3
  MPIEXEC=$("$(dirname "$0")/../../scripts/mpi-launcher.sh" "$XB")
  LIMIT=${BUSY_SECONDS:-600}
  work=$(mktemp -d /tmp/xferbench-busy-XXXXXX)
  : >"$PIDFILE"
  echo "work $work" >>"$PIDFILE"
  # Collectives: three ranks on this host, cycling through every collective.
  setsid bash -c "end=\$((SECONDS + $LIMIT)); while [ \$SECONDS -lt \$end ]; do
      timeout 120 '$MPIEXEC' -n 3 '$XB' coll all --backend host -b 64K -e 4M -n 20 -w 2 -q \
        --format json -o '$work/coll.json' >/dev/null 2>&1 || sleep 0.2; done" &
  echo "pid $!" >>"$PIDFILE"
  # A compile loop: one compiler at a time, as a build beside the job would.
  cat >"$work/unit.cpp" <<'EOF'
#include <map>
#include <regex>
#include <string>
#include <vector>
int main(int argc, char**) {
  std::map<std::string, std::vector<std::regex>> m;
  m["a"].emplace_back("x+y*");
  return static_cast<int>(m.size()) + argc;
}
EOF
  setsid bash -c "end=\$((SECONDS + $LIMIT)); while [ \$SECONDS -lt \$end ]; do
      c++ -O2 -c '$work/unit.cpp' -o '$work/unit.o' >/dev/null 2>&1 || sleep 0.5; done" &
  echo "pid $!" >>"$PIDFILE"
  # Bursts of a single-threaded 128 MiB copy, with pauses between them.
  setsid bash -c "end=\$((SECONDS + $LIMIT)); while [ \$SECONDS -lt \$end ]; do
      '$XB' copy --backend host -t d2d -s 128M --method core --threads 1 -n 8 -w 0 --no-check \
        >/dev/null 2>&1; sleep 0.\$((RANDOM % 8)); done" &
  echo "pid $!" >>"$PIDFILE"
  ;;
stop)
  PIDFILE=$2
  [ -f "$PIDFILE" ] || exit 0
  while read -r kind value; do
    [ "$kind" = pid ] && kill -TERM -- "-$value" 2>/dev/null
  done <"$PIDFILE"
  sleep 0.5
  while read -r kind value; do
    [ "$kind" = pid ] && kill -KILL -- "-$value" 2>/dev/null
    [ "$kind" = work ] && rm -rf "$value"
  done <"$PIDFILE"
  rm -f "$PIDFILE"
  ;;
*)
  echo "usage: busy_node.sh start XFERBENCH PIDFILE | stop PIDFILE" >&2
  exit 2
  ;;
esac
