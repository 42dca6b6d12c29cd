#!/usr/bin/env bash
# Side-by-side OT timings of kotml, POT and GGML-OT (see compare_ot.py).
#
#   perf/ot/run_comparison.sh BUILD_DIR [compare_ot.py options, e.g. --threads 1,2]
#
# Creates perf/.venv from perf/ot/requirements.txt on first use (torch from the
# CPU wheel index when reachable). KOTML_PERF_PYTHON=/path/to/python uses an
# existing interpreter instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: perf/ot/run_comparison.sh BUILD_DIR [options]}"
shift
source "$here/../support/peer_python.sh"
python="$(peer_python "$here/requirements.txt" torch)"
# POT's network simplex and numpy on one thread, as the comparison states.
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$python" "$here/compare_ot.py" --build "$build" "$@"
