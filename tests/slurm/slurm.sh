#!/usr/bin/env bash
# xferbench under a real, private, single-node Slurm: slurm.sh XFERBENCH SCENARIO
#
# Starts munged, slurmctld and slurmd (Debian's slurm-wlm) on loopback, all
# of them with their files in one scratch folder and on ports picked at
# random, so no system service or /etc file is touched and two runs do not
# collide. Runs one scenario against that cluster, then tears it all down
# (the EXIT trap: scancel, the daemons, munged, the folder).
#
# Scenarios:
#   coll    srun -n 3 --mpi=pmi2 xferbench coll allreduce ... --format json:
#           exit 0 and env.ranks == 3 in the file (MPICH's PMI-2 client talks
#           to Slurm's mpi/pmi2 plugin; no mpiexec involved)
#   salloc  salloc -n 2 mpiexec xferbench coll allreduce ...: exit 0 and the
#           table's header says 2 ranks (hydra inside an allocation launches
#           its proxies with srun)
#   nopmi   srun -n 2 --mpi=none xferbench coll allreduce ...: each task would
#           be a 1-rank world of its own; xferbench must say so, naming
#           `srun --mpi=pmi2`, and exit 2
#   fleet   srun -n 3 --mpi=pmi2 xferbench fleet --backend host --format json:
#           exit 0 or 1 and the file has "summary"
#   pmix2, pmix3
#           srun -n N --mpi=pmix xferbench coll allreduce ... --format json, as
#           sites with MpiDefault=pmix launch. A build against Open MPI (whose
#           PMIx client Slurm's mpi/pmix reaches) must give one N-rank run,
#           #wrong 0; a build against MPICH (Debian's speaks PMI only) either
#           does the same or is refused: exit 2, one line naming the fix,
#           never N tables of 1 rank
#   sbatch  docs/examples/fleet.sbatch as it is written (its --time, its
#           srun), on one node with 3 tasks: the job starts (not left
#           pending by the partition's MaxTime), ends 0 or 1, and
#           fleet-JOB.json has "summary"
#   doctor  srun -N 1 --ntasks-per-node=1 --mpi=pmi2 xferbench doctor --quick
#           -o d-{host}.json: doctor runs on the node (as operators schedule
#           a node check on every node at once), the file named by host; and
#           srun -n 2 (two tasks on one node, as a job with a task per GPU
#           has): one doctor runs, the other task leaves at once, exit 0
#
# Exit codes: 0 ok, 1 FAIL, 77 cannot run here (not root, Slurm or munge not
# installed, the daemons do not come up), with the reason on the "SKIP:" line.
# The whole script ends within about 2 minutes: start-up has a deadline and
# every srun/salloc runs under timeout.
#
# Knobs: XB_SLURM_KEEP=1 keeps the scratch folder (its path is printed);
# XB_SLURM_STEP_S (seconds one srun/salloc may take, default 60).
set -u

xb=${1:?usage: slurm.sh XFERBENCH SCENARIO}
scenario=${2:?usage: slurm.sh XFERBENCH SCENARIO (coll, salloc, nopmi, fleet, pmix2, pmix3, doctor)}
step_s=${XB_SLURM_STEP_S:-60}

skip() { echo "SKIP: $*"; exit 77; }

case $scenario in
  coll|salloc|nopmi|fleet|sbatch|pmix2|pmix3|doctor) ;;
  *) echo "slurm.sh: unknown scenario '$scenario' (coll, salloc, nopmi, fleet, sbatch, pmix2, pmix3, doctor)" >&2; exit 2 ;;
esac
# slurmd must run as root to start tasks as the job's user (root here).
[ "$(id -u)" = 0 ] || skip "a private slurmd needs root (running as uid $(id -u))"
[ -x "$xb" ] || { echo "slurm.sh: no xferbench binary at $xb" >&2; exit 2; }
xb=$(readlink -f "$xb")
for tool in slurmctld slurmd munged mungekey srun salloc sinfo scancel timeout; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps.sh test installs slurmctld slurmd slurm-client munge)"
done
# The launcher of the MPI this xferbench is built with (salloc runs it inside the allocation).
mpi_lib=$("$xb" --version 2>/dev/null | sed -n 's/^mpi: //p')
if [ "$scenario" = salloc ]; then
  case $mpi_lib in
    *"Open MPI"*) launcher=mpirun.openmpi ;;
    *) launcher=mpiexec.mpich ;;
  esac
  command -v "$launcher" >/dev/null || launcher=mpiexec
  command -v "$launcher" >/dev/null || skip "no MPI launcher ($launcher) is installed"
fi
if [ "$scenario" = fleet ] && ! "$xb" fleet --help >/dev/null 2>&1; then
  skip "this xferbench has no fleet command"
fi
python=$(command -v /usr/bin/python3 python3 | head -n1)
[ -n "$python" ] || skip "python3 is not installed (needed to read the JSON)"

# Anything Slurm, PMI or hydra left in the environment (this test itself run
# inside a Slurm job or under mpiexec) would point srun at another cluster or
# job, or make xferbench believe it is already a rank: start clean.
while IFS='=' read -r name _; do
  case $name in SLURM_*|SRUN_*|SALLOC_*|SBATCH_*|PMI_*|PMIX_*|HYDRA_*|MPIR_*|OMPI_*) unset "$name" ;; esac
done < <(env)
# Open MPI's mpirun (salloc) refuses root unless told; under srun it does not
# know the node is oversubscribed (3 ranks, 2 cores) and would spin.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xb-slurm.XXXXXX")
chmod 700 "$tmp"   # munged refuses key and socket folders others can write
pids=()
step_pid=
cleanup() {
  local rc=$? p sp
  # A step still running (this script was interrupted): SIGTERM to its
  # timeout, which passes it on to srun/salloc; srun then ends its tasks.
  if [ -n "$step_pid" ] && kill -0 "$step_pid" 2>/dev/null; then
    kill "$step_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$step_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  # Jobs left, while slurmctld and slurmd can still signal their tasks; wait
  # a little for them to go.
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${up_s:-}" ]; then
    if [ -n "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]; then
      timeout 5 scancel --quiet --full --user=root >/dev/null 2>&1
      for _ in $(seq 50); do
        [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for _ in $(seq 30); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  # Each entry is a watchdog timeout, the leader of a process group holding its
  # daemon: a daemon deaf to SIGTERM goes down with its group.
  for p in "${pids[@]}"; do kill -9 -- "-$p" 2>/dev/null || kill -9 "$p" 2>/dev/null; done
  # A slurmstepd (one per step) outlives slurmd. Its command line does not say
  # which cluster it serves, but it holds our slurmd log open: end those.
  local fd
  for sp in $(pgrep -x slurmstepd 2>/dev/null); do
    for fd in /proc/"$sp"/fd/*; do
      case $(readlink "$fd" 2>/dev/null) in "$tmp"/*) kill -9 "$sp" 2>/dev/null; break ;; esac
    done
  done
  if [ "${XB_SLURM_KEEP:-0}" = 1 ]; then
    echo "kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The daemons' logs, less the lines every fresh start writes (no state files
# yet, no PMIx library for the mpi/pmix plugins that slurmd loads anyway).
daemon_logs() {
  local f
  for f in "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log" "$tmp/munge/munged.log"; do
    # Before its log file is open, a daemon reports on stderr only.
    [ -s "$f" ] || f=${f%.log}.out
    [ -s "$f" ] || continue
    echo "--- tail of ${f#"$tmp"/}"
    grep -v -e 'state file' -e 'state save file' -e 'pmix' -e 'MPI: Cannot create context' "$f" | tail -n 15
  done
}

# --- munge: a key of our own, a daemon on our own socket ----------------------
mkdir -p "$tmp/munge"
chmod 700 "$tmp/munge"
mungekey --create --keyfile="$tmp/munge/munge.key" >/dev/null 2>&1 ||
  skip "mungekey could not create a key"
chmod 400 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.sock
# -F: stay in the foreground (it then logs to stderr, munged.out). --force:
# munged wants a socket folder every user can enter; ours is private to root,
# the only user of this cluster. Each daemon runs under timeout, a watchdog:
# should this script be killed outright (SIGKILL, no EXIT trap), the daemons
# still end a little after the script would have.
life_s=$((step_s + 90))
timeout "$life_s" munged -F --force --socket="$sock" --key-file="$tmp/munge/munge.key" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
  --seed-file="$tmp/munge/munged.seed" >"$tmp/munge/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
if ! [ -S "$sock" ]; then
  echo "SKIP: munged did not start"
  daemon_logs
  exit 77
fi

# --- slurm.conf ---------------------------------------------------------------
# Two free TCP ports at random in 20000-40000 (nothing listening on them).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
pick_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 20001))
    [ "$p" != "${1:-}" ] && port_free "$p" && { echo "$p"; return 0; }
  done
  return 1
}
ctl_port=$(pick_port) || skip "no free port for slurmctld"
d_port=$(pick_port "$ctl_port") || skip "no free port for slurmd"

# slurmd names itself by the short host name; the node must carry that name.
node=$(hostname -s)
# More CPUs than the machine has: srun -n 3 must fit on a 2-core box.
# config_overrides makes slurmd take this figure instead of refusing the node
# for having fewer CPUs than configured.
cpus=$(nproc)
[ "$cpus" -lt 8 ] && cpus=8
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/log"
export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
# Generated by tests/slurm/slurm.sh: a private one-node cluster on loopback.
ClusterName=xbtest$$
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# Our munged, not the system one (used by the daemons and the clients alike).
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: plain /proc process tracking, no task binding, no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
# A node that registers after a restart (or a bad start) goes back to service.
ReturnToService=2
SlurmdParameters=config_overrides
# Fast start and fast turnaround for a test: short timeouts, no kill wait.
# MaxTime (minutes, the partition's below) is above what the batch examples
# ask (docs/examples/fleet.sbatch: --time=00:30:00): a job asking more than
# MaxTime pends for ever (PartitionTimeLimit). Every step runs under timeout.
SlurmdTimeout=30
SlurmctldTimeout=30
MessageTimeout=10
KillWait=2
MinJobAge=5
InactiveLimit=0
# No mail: Debian's default MailProg (mail) is not installed and slurmctld says so.
MailProg=/bin/true
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=xb Nodes=$node Default=YES MaxTime=60 State=UP OverSubscribe=YES
EOF

# --- the daemons --------------------------------------------------------------
# -D: foreground, so $! is the daemon (its watchdog); -i (slurmctld): ignore
# any saved state (there is none: the folder is new).
timeout "$life_s" slurmctld -D -i -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
ctl_pid=$!
timeout "$life_s" slurmd -D -N "$node" -f "$SLURM_CONF" >"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
d_pid=$!

# Up when sinfo shows the node idle: slurmctld answers and slurmd registered.
start=$SECONDS
state='' dead=''
while [ $((SECONDS - start)) -lt 30 ]; do
  kill -0 "$ctl_pid" 2>/dev/null || { dead=slurmctld; break; }
  kill -0 "$d_pid" 2>/dev/null || { dead=slurmd; break; }
  state=$(timeout 5 sinfo -h -N -n "$node" -o '%t' 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then
  if [ -n "$dead" ]; then
    echo "SKIP: the private Slurm did not start: $dead exited (node state '${state:-none}')"
  else
    echo "SKIP: the private Slurm did not come up within 30 s (node state '${state:-none}')"
  fi
  daemon_logs
  exit 77
fi
up_s=$((SECONDS - start))

want_plugin=pmi2
case $scenario in pmix*) want_plugin=pmix ;; esac
if [ "$scenario" != salloc ] && ! timeout 10 srun --mpi=list 2>&1 | grep -q "$want_plugin"; then
  echo "SKIP: this Slurm has no mpi/$want_plugin plugin (srun --mpi=list; mpi/pmix needs libpmix-dev)"
  timeout 10 srun --mpi=list 2>&1 | tail -n 5
  exit 77
fi

# --- the scenario -------------------------------------------------------------
out=$tmp/out
err=$tmp/err
# run CMD...: CMD under timeout, stdout/stderr to $out/$err; sets $rc. In
# the background and waited for, so that a SIGTERM to this script runs its
# trap at once and the trap knows the step ($step_pid) to stop.
run() {
  timeout -k 5 "$step_s" "$@" >"$out" 2>"$err" &
  step_pid=$!
  wait "$step_pid"
  rc=$?
}
ok() { echo "ok [$scenario]: $* (Slurm up in ${up_s} s, step $((SECONDS - step_start)) s)"; exit 0; }
fail() {
  echo "FAIL [$scenario]: $*"
  echo "--- command stdout (tail)"; tail -n 20 "$out"
  echo "--- command stderr (tail)"; tail -n 30 "$err"
  daemon_logs
  exit 1
}
json_get() {  # json_get FILE EXPR: print EXPR evaluated on the parsed file (d)
  "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

step_start=$SECONDS
case $scenario in
  coll)
    run srun -n 3 --mpi=pmi2 "$xb" coll allreduce --backend host -b 1K -e 64K --format json -o "$tmp/c.json"
    [ $rc = 0 ] || fail "srun -n 3 --mpi=pmi2 xferbench coll exited $rc"
    [ -s "$tmp/c.json" ] || fail "no JSON file written"
    ranks=$(json_get "$tmp/c.json" 'd["env"]["ranks"]')
    [ "$ranks" = 3 ] || fail "env.ranks is '${ranks}' in the JSON, expected 3"
    ok "srun -n 3 --mpi=pmi2: exit 0, env.ranks 3"
    ;;
  salloc)
    # salloc runs mpiexec here, on the submitting host, with SLURM_JOB_ID and
    # SLURM_NODELIST set; hydra sees them, takes its host list and rank count
    # from the allocation and starts one proxy per node with srun (a step of
    # the job, which slurmd logs); the ranks speak PMI-1 to their proxy.
    run salloc -n 2 "$launcher" "$xb" coll allreduce --backend host -b 1K -e 4K
    [ $rc = 0 ] || fail "salloc -n 2 $launcher xferbench coll exited $rc"
    grep -q '· 2 ranks' "$out" || fail "the table does not say 2 ranks"
    # hydra starts its proxies through srun even on one node; Open MPI's mpirun starts the ranks of
    # the allocation's only node itself.
    if [ "$launcher" != mpirun.openmpi ]; then
      grep -q 'launch task StepId=' "$tmp/log/slurmd.log" ||
        fail "hydra did not start its proxies through srun (no step in slurmd's log)"
    fi
    ok "salloc -n 2 $launcher: exit 0, table says 2 ranks"
    ;;
  nopmi)
    # Without a PMI plugin each task is a 1-rank MPI world of its own: two
    # independent copies. The tasks see SLURM_STEP_NUM_TASKS=2 and no PMI_*
    # variable; xferbench must take that for the mistake it is, name the fix
    # and stop with a usage error.
    run srun -n 2 --mpi=none "$xb" coll allreduce --backend host -b 1K -e 4K
    [ $rc = 2 ] || fail "srun -n 2 --mpi=none exited $rc, expected 2 (a usage error naming srun --mpi=pmi2 or pmix)"
    grep -Eq -- '--mpi=(pmi2|pmix)' "$err" || fail "no stderr line mentions --mpi=pmi2 or --mpi=pmix"
    # srun adds lines of its own ("srun: error: ...: Exited with exit code 2").
    [ "$(grep -c '^xferbench' "$err")" = 1 ] || fail "$(grep -c '^xferbench' "$err") xferbench lines on stderr, expected 1 (from one task only)"
    ok "srun -n 2 --mpi=none: exit 2, one line naming the fix"
    ;;
  pmix2|pmix3)
    n=${scenario#pmix}
    run srun -n "$n" --mpi=pmix "$xb" coll allreduce,allgather --backend host -b 1K -e 64K --format json -o "$tmp/c.json"
    tables=$(grep -c '^# Collective allreduce' "$out")
    [ "$tables" -le 1 ] || fail "$tables allreduce tables printed: $n one-rank copies instead of one $n-rank run"
    if [ $rc = 2 ]; then
      case $mpi_lib in *"Open MPI"*) fail "the Open MPI build was refused under srun --mpi=pmix" ;; esac
      [ "$(grep -c '^xferbench' "$err")" = 1 ] || fail "refused with $(grep -c '^xferbench' "$err") xferbench lines on stderr, expected 1"
      grep -q 'each is alone in an MPI world of 1 rank' "$err" || fail "the refusal does not say why"
      ok "srun -n $n --mpi=pmix ($mpi_lib): refused in one line, exit 2: $(grep '^xferbench' "$err")"
    fi
    [ $rc = 0 ] || fail "srun -n $n --mpi=pmix xferbench coll exited $rc"
    ranks=$(json_get "$tmp/c.json" 'd["env"]["ranks"]')
    [ "$ranks" = "$n" ] || fail "env.ranks is '${ranks}' in the JSON, expected $n"
    wrong=$(json_get "$tmp/c.json" 'sorted(set(r["wrong"] for r in d["results"]))')
    [ "$wrong" = "[0]" ] || fail "#wrong over the records is $wrong, expected [0]"
    ok "srun -n $n --mpi=pmix ($mpi_lib): one $n-rank run, #wrong 0"
    ;;
  doctor)
    run srun -N 1 --ntasks-per-node=1 --mpi=pmi2 "$xb" doctor --quick --checks bandwidth --backend host -q \
      --format json -o "$tmp/d-{host}.json"
    [ $rc = 0 ] || [ $rc = 1 ] || fail "srun -N 1 --ntasks-per-node=1 xferbench doctor exited $rc"
    [ -s "$tmp/d-$(hostname).json" ] || fail "no d-$(hostname).json written ({host} in -o)"
    run srun -n 2 --mpi=pmi2 "$xb" doctor --quick --checks bandwidth --backend host
    [ $rc = 0 ] || [ $rc = 1 ] || fail "two tasks on one node: exit $rc, expected 0 or 1 (one doctor)"
    tables=$(grep -c '^verdicts:' "$out")
    [ "$tables" = 1 ] || fail "$tables doctor tables from two tasks on one node, expected 1"
    ok "srun doctor: one per node writes d-{host}.json; of two tasks on one node one runs it"
    ;;
  sbatch)
    # The example's own #SBATCH lines but --nodes (one node here, 3 ranks on it).
    example=$(cd "$(dirname "$0")/../../docs/examples" && pwd)/fleet.sbatch
    run sbatch --wait --nodes=1 --ntasks-per-node=3 --chdir="$tmp" --export="ALL,XFERBENCH=$xb" \
      "$example"
    job=$(grep -o 'Submitted batch job [0-9]*' "$out" | grep -o '[0-9]*$')
    [ -n "$job" ] || fail "sbatch did not submit the job"
    [ $rc = 124 ] && fail "job $job did not end within ${step_s} s: $(timeout 5 squeue -h -j "$job" -o '%T %r' 2>&1)"
    [ $rc = 0 ] || [ $rc = 1 ] || fail "sbatch --wait fleet.sbatch exited $rc, expected 0 or 1 (job $job)"
    has=$(json_get "$tmp/fleet-$job.json" '"summary" in d')
    [ "$has" = True ] || fail "fleet-$job.json has no \"summary\": $(tail -5 "$tmp/fleet-$job.out" 2>&1)"
    ok "sbatch fleet.sbatch (--time as written): exit $rc, fleet-$job.json has a summary"
    ;;
  fleet)
    run srun -n 3 --mpi=pmi2 "$xb" fleet --backend host --format json -o "$tmp/f.json"
    [ $rc = 0 ] || [ $rc = 1 ] || fail "srun -n 3 --mpi=pmi2 xferbench fleet exited $rc, expected 0 or 1"
    [ -s "$tmp/f.json" ] || fail "no JSON file written"
    has=$(json_get "$tmp/f.json" '"summary" in d')
    [ "$has" = True ] || fail "the JSON has no \"summary\""
    ok "srun -n 3 --mpi=pmi2 fleet: exit $rc, summary present"
    ;;
esac
