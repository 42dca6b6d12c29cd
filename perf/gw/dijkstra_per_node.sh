#!/bin/bash
# Where a Dijkstra's time per settled node goes as the graph grows (issue 13:
# apsp's cost per node rising with n). For each size, on the scaling study's
# 16-D Gaussian clouds (perf/scaling/study.py's point_file, k = 10):
#   - measured: `kotml apsp --landmarks L`, the `sources` phase (L Dijkstra runs
#     on the ordered graph) divided by L·n, three rounds;
#   - counted: callgrind with its cache model, collecting inside dijkstra_from
#     only (4 runs), for instructions, loads, and misses of a 48 KiB L1 and of a
#     2 MiB last level (this guest's per-core L2) per node and run.
# The counts do not depend on what else the machine runs; the times do.
#
#   perf/gw/dijkstra_per_node.sh BUILD_DIR WORK_DIR [SIZES...]
set -euo pipefail
build=$(cd "$1" && pwd); work=$2; shift 2
sizes=${*:-4000 16000 64000 256000}
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-/usr/bin/python3}  # Debian's, with python3-h5py (.ci/install-deps)
kotml=$build/src/kotml
mkdir -p "$work"; cd "$work"
"$py" - $sizes <<EOF
import pathlib, sys
sys.path.insert(0, "$here/perf/scaling")
import study
for n in map(int, sys.argv[1:]):
    study.point_file(pathlib.Path(f"points_apsp_{n}.h5"), n, 16, False)
EOF
runs_for() {  # landmarks for about one second of Dijkstra at 75-550 ns a node
  echo $(( 8000000 / $1 > 2 ? 8000000 / $1 : 2 ))
}
echo "n landmarks round ns_per_node"
for n in $sizes; do
  [ -f "g$n.h5" ] || "$kotml" knn-graph "points_apsp_$n.h5" --k 10 -o "g$n.h5" --quiet
  L=$(runs_for "$n")
  for round in 1 2 3; do
    rm -f out.h5
    "$kotml" apsp "g$n.h5" --landmarks "$L" -o out.h5 --timers "t_${n}_$round.json" --quiet > /dev/null
    "$py" -c "
import json; p = {q['name']: q['seconds']['mean'] for q in json.load(open('t_${n}_$round.json'))['phases']}
print($n, $L, $round, round(p['sources'] / ($L * $n) * 1e9, 1))"
  done
done
echo "n Ir_per_node loads_per_node L1_misses_per_node LL2MiB_misses_per_node"
for n in $sizes; do
  rm -f out.h5
  valgrind --tool=callgrind --callgrind-out-file="cg$n.out" --toggle-collect='*dijkstra_from*' \
    --cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 \
    "$kotml" apsp "g$n.h5" --landmarks 4 -o out.h5 --quiet > "cg$n.log" 2>&1
  "$py" - "$n" "cg$n.log" <<'EOF'
import re, sys
n, text = int(sys.argv[1]), open(sys.argv[2]).read()
def count(label):  # the largest report's: other processes (MPI's) collect nothing
    return max(int(c.replace(",", "")) for c in re.findall(label + r":\s+([\d,]+)", text))
per = lambda c: round(c / (4 * n), 2)
print(n, per(count("I   refs")), per(count("D   refs")), per(count("D1  misses")), per(count("LLd misses")))
EOF
done
echo "line by line: callgrind_annotate --auto=yes --show=Ir,D1mr,D1mw,DLmr,DLmw $work/cgN.out"
