#!/usr/bin/env bash
# Side-by-side timings of `kotml prep` and scanpy (see compare_prep.py).
#
#   perf/data/run_comparison.sh BUILD_DIR [--threads N] [--repeats R]
#
# Creates perf/.venv on first use and installs perf/data/requirements.txt into
# it. KOTML_PERF_PYTHON=/path/to/python uses an existing interpreter instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: perf/data/run_comparison.sh BUILD_DIR [options]}"
shift
source "$here/../support/peer_python.sh"
python="$(peer_python "$here/requirements.txt")"
exec "$python" "$here/compare_prep.py" --build "$build" "$@"
