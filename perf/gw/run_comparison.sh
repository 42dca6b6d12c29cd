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
root="$(cd "$here/../.." && pwd)"
build="${1:?usage: perf/gw/run_comparison.sh BUILD_DIR [options]}"
shift
python="${KOTML_PERF_PYTHON:-}"
if [[ -z "$python" ]]; then
  venv="$root/perf/.venv"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  if ! "$venv/bin/python" -c "import torchgw, sklearn, h5py" 2>/dev/null; then
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet torch --index-url https://download.pytorch.org/whl/cpu
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
  fi
  python="$venv/bin/python"
fi
exec "$python" "$here/compare_gw.py" --build "$build" "$@"
