#!/usr/bin/env bash
# Runs one kotml command line on a simulated cluster with SimGrid's SMPI.
#
#   perf/scaling/smpi_run.sh --ranks P --platform FILE.xml --host-speed F [options] -- KOTML-ARGS...
#
#   --ranks P          simulated MPI ranks, one per host of the platform (its first P hosts)
#   --platform FILE    SimGrid platform, e.g. perf/scaling/platforms/fat_tree_ib_hdr100_1152.xml
#   --host-speed F     smpi/host-speed in flop/s (1.1e9 or 1.1Gf): the calibration of this
#                      machine against the platform's 1Gf hosts (README, "Simulated clusters")
#   --json FILE        also write one JSON record of the run: the configuration, SMPI's
#                      simulated time and kotml's timers (the `timers.json` of the command)
#   --log FILE         kotml's and SMPI's output (default: FILE.json's name with .log, or stderr)
#   --kotml PATH       the SMPI build of kotml (default build/smpi/src/kotml; `cmake --preset smpi`)
#   --samples N        sample kotml's compute (include/kotml/core/simulation.hpp): the tiled
#                      Sinkhorn runs N iterations for real, records one and replays it; apsp
#                      times N Dijkstra sources per rank and charges their mean for the rest.
#                      For problems whose compute would take hours here; the outputs are then
#                      not the answer
#   --recorded R       with --samples: the tiled Sinkhorn records R iterations (each from the
#                      same state) and charges each compute block the mean of its R runs
#                      (default 1)
#   --fold             fold the buffers that every rank holds alike (the reference's features,
#                      y's packed copy, apsp's points, the kNN neighbours and graphs of apsp and
#                      gw, gw's landmark embeddings and gathered target anchor distances; with
#                      --samples also apsp's output rows), and the joint pass's scratch (its row strips and
#                      slot limbs over recomputed costs): every rank's allocation at one site
#                      maps the same memory (smpi/shared-malloc:local), so P ranks hold one copy
#   --cfg KEY:VALUE    one more SimGrid option (repeatable; it wins over the script's), e.g.
#                      --cfg smpi/coll-selector:mpich
#
# Collectives use Open MPI's algorithm selection (smpi/coll-selector:ompi), as kotml's real runs
# do. SMPI's own default algorithms are the naive ones (an allgather of P ranks is P*(P-1)
# point-to-point messages), unrealistic and quadratically slow to simulate past 100 ranks.
#
# kotml's timers: a command with --out DIR writes DIR/timers.json; apsp, distances, gw and ot
# take --timers FILE, and the script adds `--timers` in a scratch folder when none is given.
# Under SMPI the timers read the simulated clock (cmake/KotmlSmpi.cmake).
#
# Exit status: kotml's (smpirun's). The run's scratch files (hostfile, timers, and the per-rank
# copies of kotml and Kokkos, about 14 MB a rank while it runs) go to a folder in $TMPDIR that
# is removed at the end. smpirun hands the arguments on split at spaces: none may contain one.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ranks="" platform="" host_speed="" json="" log="" kotml="$root/build/smpi/src/kotml" samples=0 recorded=1 fold=0
extra_cfg=()
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "smpi_run.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?}; shift 2 ;;
    --platform) platform=${2:?}; shift 2 ;;
    --host-speed) host_speed=${2:?}; shift 2 ;;
    --json) json=${2:?}; shift 2 ;;
    --log) log=${2:?}; shift 2 ;;
    --kotml) kotml=${2:?}; shift 2 ;;
    --cfg) extra_cfg+=("--cfg=${2:?}"); shift 2 ;;
    --samples) samples=${2:?}; shift 2 ;;
    --recorded) recorded=${2:?}; shift 2 ;;
    --fold) fold=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    *) die "unknown option '$1' (kotml's arguments go after --)" ;;
  esac
done
[ -n "$ranks" ] && [ -n "$platform" ] && [ -n "$host_speed" ] || usage
[ $# -gt 0 ] || die "no kotml arguments after --"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || die "--ranks: a positive integer, not '$ranks'"
[[ "$samples" =~ ^[0-9]+$ ]] || die "--samples: a count of runs, not '$samples'"
[[ "$recorded" =~ ^[1-9][0-9]{0,2}$ ]] || die "--recorded: a count of iterations from 1 to 999, not '$recorded'"
[ -f "$platform" ] || die "no platform file $platform"
[ -f "$kotml" ] || die "no SMPI build of kotml at $kotml: cmake --preset smpi && cmake --build --preset smpi"
command -v smpirun >/dev/null || die "smpirun not found: apt-get install -y libsimgrid-dev simgrid"
platform=$(cd "$(dirname "$platform")" && pwd)/$(basename "$platform")
# A plain number is in flop/s (SimGrid warns on unit-less speeds).
[[ "$host_speed" =~ ^[0-9.]+([eE][+-]?[0-9]+)?$ ]] && host_speed="${host_speed}f"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kotml-smpi.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The hostfile: the platform's first P hosts, one rank each (clusters expanded from
# prefix/radical/suffix, then plain <host> elements).
python3 - "$platform" "$ranks" >"$scratch/hostfile" <<'EOF'
import sys, xml.etree.ElementTree as ET
platform, ranks = sys.argv[1], int(sys.argv[2])
hosts = []
for e in ET.parse(platform).iter():
    if e.tag == "cluster":
        for part in e.get("radical").split(";"):
            lo, _, hi = part.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                hosts.append(e.get("prefix", "") + str(i) + e.get("suffix", ""))
    elif e.tag == "host":
        hosts.append(e.get("id"))
if len(hosts) < ranks:
    sys.exit(f"smpi_run.sh: {platform} has {len(hosts)} hosts, fewer than {ranks} ranks")
print("\n".join(hosts[:ranks]))
EOF

# Every simulated rank runs in this one process: libraries with global state must be loaded
# once per rank. SMPI copies the kotml binary per rank (smpi/privatization:dlopen, smpirun's
# default) and, with smpi/privatize-libs, each library named there: it renames the copy and
# patches the name into the rank's copy of kotml, so only kotml's own DT_NEEDED entries can be
# privatised. Kokkos keeps its initialisation, execution-space instances and profiling hooks
# in globals of libkokkoscore; libkokkoskernels goes with it. (The copy of libkokkoskernels
# still names the system libkokkoscore, which is loaded once as well, but the rank's copy
# comes first in the rank's lookup scope and takes every call. libkokkoscontainers, needed by
# libkokkoskernels only, has no global state nor any dependence on libkokkoscore.)
privatize=$(readelf -d "$kotml" | sed -n 's/.*(NEEDED).*\[\(.*kokkos.*\)\]/\1/p' | paste -sd';' -)
[ -n "$privatize" ] || die "$kotml needs no Kokkos library (readelf -d)"

# kotml's timers: DIR/timers.json with --out DIR, or --timers FILE (added when absent and the
# command takes it).
args=("$@")
timers=""
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --out|-o) [ "${args[i]}" = --out ] && timers="${args[i+1]:-}/timers.json" ;;
    --out=*) timers="${args[i]#--out=}/timers.json" ;;
    --timers) timers="${args[i+1]:-}" ;;
    --timers=*) timers="${args[i]#--timers=}" ;;
  esac
done
if [ -z "$timers" ]; then
  case "${args[0]}" in
    apsp|distances|gw|ot) timers="$scratch/timers.json"; args+=(--timers "$timers") ;;
  esac
fi

if [ -z "$log" ]; then
  if [ -n "$json" ]; then log="${json%.json}.log"; else log=/dev/stderr; fi
fi
if [ "$log" = /dev/stderr ]; then logfile="$scratch/run.log"; else logfile="$log"; fi

# Open MPI's collective algorithms, from 2 ranks on: with 1 rank the ompi selector's allgatherv
# (gather + NTSB broadcast) dies in SimGrid 3.32 ("Actor pid=-1 is gone??"); there is nothing
# to simulate then anyway.
colls=()
[ "$ranks" -gt 1 ] && colls=("--cfg=smpi/coll-selector:ompi" "--log=smpi_colls.thres:warning")
cmd=(smpirun -np "$ranks" -platform "$platform" -hostfile "$scratch/hostfile"
     "--cfg=smpi/host-speed:$host_speed"
     "--cfg=smpi/privatization:dlopen"
     "--cfg=smpi/privatize-libs:$privatize"
     "--cfg=smpi/display-timing:yes"
     "${colls[@]}")
[ "$fold" = 1 ] && cmd+=("--cfg=smpi/shared-malloc:local")
cmd+=("${extra_cfg[@]}"
     "$kotml" "${args[@]}")
start=$(date +%s.%N)
status=0
# One BLAS thread (kotml also asks OpenBLAS for one): the simulated ranks take turns on one core.
# smpirun puts the per-rank copies of kotml and of the privatised libraries in $TMPDIR (and
# finds them there through LD_LIBRARY_PATH): the scratch folder, removed at the end.
TMPDIR="$scratch" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 KOTML_SMPI_SAMPLES="$samples" KOTML_SMPI_RECORDED="$recorded" \
  KOTML_SMPI_FOLD="$fold" \
  "${cmd[@]}" >"$logfile" 2>&1 || status=$?
end=$(date +%s.%N)
[ "$log" = /dev/stderr ] && cat "$logfile" >&2

if [ -n "$json" ]; then
  python3 - "$json" "$logfile" "$timers" "$status" "$ranks" "$platform" "$host_speed" "$start" "$end" \
    "$privatize" "$samples" "$recorded" "$fold" "${cmd[@]}" <<'EOF'
import json, re, sys
out, logfile, timers_path, status, ranks, platform, host_speed, start, end, privatize, samples, recorded, fold = \
    sys.argv[1:14]
cmd = sys.argv[14:]
text = open(logfile, errors="replace").read()
def number(pattern):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None
record = {
    "launcher": "smpirun",
    "ranks": int(ranks),
    "platform": platform,
    "host_speed": host_speed,
    "privatize_libs": privatize.split(";"),
    "command": cmd,
    "sampled_runs": int(samples),  # 0: every compute block ran
    "recorded_iterations": int(recorded),
    "folded": fold == "1",
    "exit_status": int(status),
    # SMPI's smpi/display-timing lines
    "simulated_time_s": number(r"Simulated time: ([0-9.eE+-]+) seconds"),
    "simulation_wall_s": number(r"The simulation took ([0-9.eE+-]+) seconds"),
    "application_compute_wall_s": number(r"([0-9.eE+-]+) seconds were actual computation of the application"),
    "launcher_wall_s": float(end) - float(start),
    "timers": None,
}
try:
    with open(timers_path) as f:
        record["timers"] = json.load(f)
except (OSError, ValueError):
    pass
with open(out, "w") as f:
    json.dump(record, f, indent=2)
    f.write("\n")
EOF
fi
exit "$status"
