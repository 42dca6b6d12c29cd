#!/usr/bin/env bash
# Side-by-side timings and quality of kotml against scipy (all-pairs Dijkstra)
# and TorchGW 0.4.2 on CPU (sampled GW), on the same inputs (see compare_gw.py).
#
#   perf/gw/run_comparison.sh BUILD_DIR [compare_gw.py options, e.g. --only apsp]
#
# BUILD_DIR holds src/kotml and perf/bench_graph_gw (a Kokkos 4 OpenMP build for
# the multi-thread numbers). Creates perf/.venv from perf/gw/requirements.txt on
# first use; KOTML_PERF_PYTHON=/path/to/python uses an existing interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: perf/gw/run_comparison.sh BUILD_DIR [options]}"
shift
source "$here/../support/peer_python.sh"
python="$(peer_python "$here/requirements.txt" torch)"
exec "$python" "$here/compare_gw.py" --build "$build" "$@"
