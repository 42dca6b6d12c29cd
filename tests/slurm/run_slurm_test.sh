#!/bin/bash
# The Slurm scripts of slurm/, run for real on a one-node Slurm brought up on
# this machine.
#
#   sudo tests/slurm/run_slurm_test.sh build/release/src/kotml .
#
# In a fresh temporary folder: a munge key and munged on its own socket; a
# generated slurm.conf (one node, this host, CPUs=2 and the machine's memory,
# two fake GPUs (device nodes like /dev/null), proctrack/linuxproc, task/none,
# select/cons_tres, MpiDefault=none, free ports); slurmctld and slurmd in the
# foreground as children of this script. When sinfo shows the node idle:
#
#   1. slurm/cpu_openmp.sbatch with sbatch --wait at 1 rank (with the demo)
#      and at 2 ranks (DEMO=0), both on the built-in scrna cohort at a tiny
#      size, srun's ranks joined through PMIx (SLURM_MPI_TYPE=pmix);
#   2. job.json, version.txt, demo/summary.json and train_test/summary.json
#      checked (the 2-rank run must be one 2-rank MPI job);
#   3. slurm/collect_scaling.py on the study: one table row per run;
#   4. slurm/gpu_cuda.sbatch with DRY_RUN=1 at 2 ranks, --gpus-per-task=1:
#      each rank must report its own fake GPU and Kokkos device 0.
#
# Every wait polls with a deadline; slurmctld, slurmd and munged are stopped and
# the folder removed on every exit (KEEP=1 keeps the folder). Exits 0 on
# success, 1 on a failure (with the tails of the job outputs and daemon logs),
# 77 (skipped, with the reason) when not root, when Slurm or munge is not
# installed (Debian: apt-get install slurm-wlm munge), when a Slurm already runs
# on this machine, when this Slurm has no PMIx plugin, or when no device node
# can be made. TIME_LIMIT (seconds, default 150) bounds the run up to the
# teardown, which takes at most about a minute more.

set -euo pipefail
# munged, slurmctld and slurmd live in /usr/sbin, which a non-login root may lack.
PATH=$PATH:/usr/sbin:/sbin

SKIP=77
START=$SECONDS
TIME_LIMIT=${TIME_LIMIT:-150}

log() { printf '[%3ds] %s\n' $((SECONDS - START)) "$*"; }
skip() { echo "skipped: $*"; exit "$SKIP"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

if [[ $# -ne 2 ]]; then
  echo "usage: $0 KOTML SOURCE_DIR" >&2
  exit 2
fi
KOTML=$(realpath "$1")
SRC=$(realpath "$2")
[[ -x "$KOTML" ]] || fail "$KOTML is not an executable"
[[ -f "$SRC/slurm/cpu_openmp.sbatch" ]] || fail "$SRC has no slurm/cpu_openmp.sbatch"

# ---- preconditions: skip (77) with the reason ------------------------------
[[ $(id -u) -eq 0 ]] || skip "needs root: it runs munged, slurmctld and slurmd itself"
for prog in munged munge slurmctld slurmd sbatch srun sinfo squeue scancel python3; do
  command -v "$prog" > /dev/null ||
    skip "$prog is not installed (Debian: apt-get install slurm-wlm munge; .ci/install-deps does)"
done
# pids_of NAME...: pids of the processes with exactly these names (pgrep
# matches at most 15 characters of a name, so one name at a time).
pids_of() {
  local name
  for name in "$@"; do pgrep -x "$name" || true; done | tr '\n' ' '
}
SLURM_DAEMONS=(slurmctld slurmctld-wlm slurmd slurmd-wlm slurmstepd)
running=$(pids_of "${SLURM_DAEMONS[@]}")
[[ -z "$running" ]] || skip "a Slurm already runs on this machine (pids ${running% }); this test brings up its own"

# Nothing of a surrounding allocation or site configuration may leak in.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SLURM_' || true)
unset SBATCH_PARTITION SBATCH_ACCOUNT SBATCH_TIMELIMIT SRUN_CPUS_PER_TASK

TMP=$(mktemp -d /tmp/kotml-slurm.XXXXXX)
# munged wants every directory above its socket searchable by all.
chmod 755 "$TMP"
mkdir -p "$TMP"/{state,spool,log,out,results}
PIDS=()           # daemons started here, newest last, as PID:NAME
SBATCH_PID=       # a running sbatch --wait
PASSED=0

# poll SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds (0) or
# SECONDS have passed (1). For the teardown, which must not fail.
poll() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" > /dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

stop_pid() {  # stop_pid PID NAME: SIGTERM, up to 5 s, then SIGKILL
  local pid=$1 name=$2
  kill -0 "$pid" 2> /dev/null || return 0
  kill "$pid" 2> /dev/null || true
  if poll 5 eval "! kill -0 $pid"; then
    wait "$pid" 2> /dev/null || true
    return 0
  fi
  log "$name (pid $pid) ignored SIGTERM; SIGKILL"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}

descendants() {  # descendants PID: the pids of its children, grandchildren, ...
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}

no_slurmstepd() { [[ -z "$(pids_of slurmstepd)" ]]; }
no_jobs() { [[ -z "$(timeout 5 squeue -h -o %i 2> /dev/null)" ]]; }

cleanup() {
  local rc=$?
  set +e
  trap - EXIT
  trap '' INT TERM HUP
  if [[ $rc -ne 0 && $rc -ne $SKIP ]]; then
    for f in "$TMP"/out/*.out "$TMP"/log/slurmctld.log "$TMP"/log/slurmd.log "$TMP"/log/munged.log; do
      [[ -s "$f" ]] || continue
      echo "---- last lines of $f"
      tail -n 25 "$f"
    done
  fi
  [[ -z "$SBATCH_PID" ]] || stop_pid "$SBATCH_PID" sbatch
  if [[ -f "$TMP/slurm.conf" ]] && [[ ${#PIDS[@]} -gt 0 ]]; then
    # Jobs first, so that no slurmstepd outlives its slurmd.
    timeout 10 scancel --quiet --full --user=root 2> /dev/null
    poll 10 no_jobs
  fi
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    stop_pid "${PIDS[i]%%:*}" "${PIDS[i]#*:}"
  done
  # slurmstepd daemonises away from slurmd; none ran before this test started.
  if ! poll 10 no_slurmstepd; then
    for pid in $(pids_of slurmstepd); do
      log "slurmstepd $pid left over (slurmd died?); SIGKILL to it and its tasks"
      kill -9 "$pid" $(descendants "$pid") 2> /dev/null
    done
    poll 5 no_slurmstepd
  fi
  if [[ "${KEEP:-0}" == 1 ]]; then
    log "kept $TMP"
  else
    rm -rf "$TMP"
  fi
  if [[ $rc -eq 0 && $PASSED -eq 1 ]]; then
    log "passed; Slurm stopped"
  elif [[ $rc -eq 0 ]]; then
    rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM HUP

remaining() { echo $((START + TIME_LIMIT - SECONDS)); }

# wait_until SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s; fails on the
# deadline, or as soon as a daemon started here has died.
wait_until() {
  local limit=$1 what=$2 deadline entry
  shift 2
  deadline=$((SECONDS + limit))
  until "$@" > /dev/null 2>&1; do
    for entry in "${PIDS[@]}"; do
      kill -0 "${entry%%:*}" 2> /dev/null || fail "${entry#*:} died while waiting for $what"
    done
    ((SECONDS < deadline)) || fail "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- munge -----------------------------------------------------------------
dd if=/dev/urandom of="$TMP/munge.key" bs=1024 count=1 status=none
chmod 400 "$TMP/munge.key"
MUNGE_SOCKET=$TMP/munge.socket
munged --foreground --key-file="$TMP/munge.key" --socket="$MUNGE_SOCKET" \
  --pid-file="$TMP/munged.pid" --seed-file="$TMP/munged.seed" --log-file="$TMP/log/munged.log" \
  > "$TMP/log/munged.out" 2>&1 &
PIDS+=("$!:munged")
wait_until 15 "munged" bash -c "munge -S '$MUNGE_SOCKET' -n | unmunge -S '$MUNGE_SOCKET'"
log "munged up on $MUNGE_SOCKET"

# ---- slurm.conf --------------------------------------------------------------
NODE=$(hostname -s)
MEMORY=$(slurmd -C 2> /dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -n 1)
[[ -n "$MEMORY" ]] || MEMORY=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
[[ "$CTLD_PORT" != "$SLURMD_PORT" ]] || SLURMD_PORT=$(free_port)
# Slurm only accepts character devices as GPU files; copies of /dev/null stand
# in for two GPUs, so that --gpus-per-task binds one per task.
mknod "$TMP/nvidia0" c 1 3 && mknod "$TMP/nvidia1" c 1 3 ||
  skip "cannot create the device nodes that stand in for GPUs (mknod in $TMP; a container without CAP_MKNOD?)"
echo "NodeName=$NODE Name=gpu File=$TMP/nvidia[0-1]" > "$TMP/gres.conf"
cat > "$TMP/slurm.conf" << EOF
ClusterName=kotmltest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/log/slurmctld.log
SlurmdLogFile=$TMP/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
# sbatch --wait polls every 2 s while MinJobAge/2 <= 2, and a finished job's
# record lives at least MinJobAge seconds, so no finish is missed.
MinJobAge=5
KillWait=2
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=2 RealMemory=$MEMORY Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$TMP/slurm.conf

MPI_TYPES=$(srun --mpi=list 2>&1 || true)
grep -qw pmix <<< "$MPI_TYPES" ||
  skip "this Slurm has no PMIx plugin (srun --mpi=list: $(tr '\n' ' ' <<< "$MPI_TYPES")), which Debian's Open MPI needs under srun"

# ---- slurmctld and slurmd ----------------------------------------------------
slurmctld -D -c -f "$SLURM_CONF" > "$TMP/log/slurmctld.out" 2>&1 &
PIDS+=("$!:slurmctld")
slurmd -D -N "$NODE" -f "$SLURM_CONF" > "$TMP/log/slurmd.out" 2>&1 &
PIDS+=("$!:slurmd")
node_idle() { [[ "$(sinfo -h -n "$NODE" -o %T 2> /dev/null)" == idle ]]; }
wait_until 30 "node $NODE idle in sinfo" node_idle
log "slurmctld and slurmd up (ports $CTLD_PORT, $SLURMD_PORT); $(sinfo -h -o '%P %D %T %N %G')"

# ---- jobs ----------------------------------------------------------------------
RESULTS=$TMP/results
export KOTML RESULTS NCELLS=20 EPOCHS=2 SPLITS=2 SLURM_MPI_TYPE=pmix
export KOKKOS_DISABLE_WARNINGS=1

# submit VAR NAME SBATCH-OPTIONS... SCRIPT: sbatch --wait within the time
# left; the job id goes to VAR.
submit() {
  local var=$1 name=$2 left rc id
  shift 2
  left=$(remaining)
  ((left > 5)) || fail "no time left for $name"
  log "sbatch --wait $*"
  # In the background, so that a dead daemon fails the test at once and a
  # signal reaches the traps while the job runs.
  sbatch --wait --parsable --chdir="$SRC" --output="$TMP/out/$name-%j.out" \
    --job-name="$name" --time=5 --nodes=1 "$@" > "$TMP/out/$name.id" &
  SBATCH_PID=$!
  wait_until "$left" "$name (sbatch --wait) to return" eval '! kill -0 "$SBATCH_PID"'
  rc=0
  wait "$SBATCH_PID" || rc=$?
  SBATCH_PID=
  id=$(head -n 1 "$TMP/out/$name.id")
  [[ $rc -eq 0 ]] || fail "$name (job $id) failed: sbatch --wait returned $rc"
  [[ "$id" =~ ^[0-9]+$ ]] || fail "$name: sbatch printed no job id"
  log "$name: job $id finished"
  printf -v "$var" '%s' "$id"
}

DEMO=1 STUDY=cpu submit JOB1 cpu-r1 --ntasks=1 --ntasks-per-node=1 --cpus-per-task=1 \
  "$SRC/slurm/cpu_openmp.sbatch"
DEMO=0 STUDY=cpu submit JOB2 cpu-r2 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 \
  "$SRC/slurm/cpu_openmp.sbatch"
DRY_RUN=1 DEMO=1 STUDY=gpu submit JOB3 gpu-dry --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 \
  "$SRC/slurm/gpu_cuda.sbatch"

# ---- outputs -------------------------------------------------------------------
log "checking outputs"
python3 - "$RESULTS" "$JOB1" "$JOB2" "$JOB3" "$KOTML" << 'EOF'
import json, pathlib, re, sys

results, job1, job2, job3, kotml = sys.argv[1:]
results = pathlib.Path(results)
problems = []

def check(ok, what):
    if not ok:
        problems.append(what)

def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        problems.append(f"{path}: {error}")
        return {}

for job, ranks, demo in ((job1, 1, True), (job2, 2, False)):
    run = results / "cpu" / f"{job}_n1_r{ranks}_t1"
    check(run.is_dir(), f"{run} missing (runs: {sorted(p.name for p in results.glob('*/*'))})")
    info = load(run / "job.json")
    for key, want in (("job", job), ("nodes", 1), ("ranks", ranks), ("threads_per_rank", 1),
                      ("gpus_per_rank", 0), ("backend", "openmp"), ("input", "builtin:scrna"),
                      ("n_cells", "20"), ("epochs", 2), ("splits", 2)):
        check(info.get(key) == want, f"{run}/job.json: {key} = {info.get(key)!r}, expected {want!r}")
    version = (run / "version.txt").read_text() if (run / "version.txt").exists() else ""
    check(version.startswith("kotml "), f"{run}/version.txt: {version[:80]!r}")
    summary = load(run / "train_test" / "summary.json")
    # ranks == 2: srun's two tasks formed one MPI job, not two 1-rank runs.
    check(summary.get("ranks") == ranks, f"{run}/train_test/summary.json: ranks = {summary.get('ranks')!r}, expected {ranks}")
    check(summary.get("n_splits") == 2, f"{run}/train_test/summary.json: n_splits = {summary.get('n_splits')!r}")
    check(summary.get("epoch_time_s", {}).get("mean", 0) > 0, f"{run}/train_test/summary.json: no epoch time")
    check((run / "demo" / "summary.json").exists() == demo,
          f"{run}/demo/summary.json {'missing' if demo else 'written with DEMO=0'}")
    if demo:
        knn = load(run / "demo" / "summary.json").get("knn_acc", {}).get("mean")
        check(isinstance(knn, (int, float)) and 0 <= knn <= 1, f"{run}/demo/summary.json: knn_acc {knn!r}")

run = results / "gpu" / f"{job3}_n1_r2_g1"
info = load(run / "job.json")
for key, want in (("ranks", 2), ("gpus_per_rank", 1), ("backend", "cuda")):
    check(info.get(key) == want, f"{run}/job.json: {key} = {info.get(key)!r}, expected {want!r}")
check(not (run / "train_test").exists() and not (run / "demo").exists(), f"{run}: DRY_RUN=1 ran kotml")
lines = (run / "dry_run.txt").read_text().splitlines() if (run / "dry_run.txt").exists() else []
pattern = re.compile(r"rank (\d+)/(\d+) on \S+: local rank (\S+), CUDA_VISIBLE_DEVICES=(\S*), "
                     r"Kokkos device (.*?): (\S+) train-test (.*)")
parsed = [pattern.fullmatch(line) for line in lines]
check(len(lines) == 3 and all(parsed), f"{run}/dry_run.txt: expected 3 task lines (demo + 2 ranks), got {lines}")
if len(lines) == 3 and all(parsed):
    demo = [m for m in parsed if "inputs/demo.ini" in m.group(7)]
    main = sorted((m for m in parsed if "--builtin scrna" in m.group(7)), key=lambda m: int(m.group(1)))
    check(len(demo) == 1 and demo[0].group(2) == "1", f"{run}: the demo must be one task: {lines}")
    check([(m.group(1), m.group(2), m.group(3)) for m in main] == [("0", "2", "0"), ("1", "2", "1")],
          f"{run}: train-test tasks are not ranks 0 and 1 of 2 with local ranks 0 and 1: {lines}")
    for m in parsed:
        check(m.group(6) == kotml, f"{run}: task would run {m.group(6)}, not {kotml}")
        check("--kokkos-map-device-id-by=mpi_rank" in m.group(7), f"{run}: no Kokkos device mapping flag: {m.group(0)}")
    check(all(m.group(7).rstrip().split("--out ")[1].split()[0].endswith(f"{run.name}/train_test") for m in main),
          f"{run}: train-test would not write to {run.name}/train_test: {lines}")
    # One GPU per task, a different one per rank, and Kokkos' device 0 of it.
    visible = [m.group(4) for m in main]
    check(all(re.fullmatch(r"\d+", v) for v in visible) and len(set(visible)) == 2,
          f"{run}: each rank must see exactly one, distinct GPU: {visible}")
    for m in parsed:
        check(m.group(5) == f"0 (GPU {m.group(4)})", f"{run}: Kokkos would not use the task's one GPU: {m.group(0)}")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"outputs of jobs {job1}, {job2} (cpu_openmp) and {job3} (gpu_cuda DRY_RUN=1) as expected")
for line in lines:
    print("  " + line)
EOF

# ---- collect_scaling.py ----------------------------------------------------------
# Read by column name, so that columns added to the table later do not matter.
python3 "$SRC/slurm/collect_scaling.py" "$RESULTS/cpu" > "$TMP/scaling.md" ||
  fail "collect_scaling.py failed on $RESULTS/cpu"
cat "$TMP/scaling.md"
python3 - "$TMP/scaling.md" << 'EOF'
import sys

rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in open(sys.argv[1]) if line.startswith("|")]
if len(rows) < 2 or "ranks" not in rows[0] or "speedup" not in rows[0]:
    sys.exit(f"collect_scaling.py: no markdown table with 'ranks' and 'speedup' columns: {rows[:1]}")
header, body = rows[0], [row for row in rows[1:] if not set("".join(row)) <= set("-: ")]
ranks = [row[header.index("ranks")] for row in body]
if sorted(ranks) != ["1", "2"]:
    sys.exit(f"collect_scaling.py: expected one row for 1 rank and one for 2 ranks, got ranks {ranks}")
baseline = body[ranks.index("1")][header.index("speedup")]
if baseline != "1.00":
    sys.exit(f"collect_scaling.py: the 1-rank run is the baseline, yet its speedup is {baseline}")
EOF

PASSED=1
log "all checks passed in $((SECONDS - START))s"
