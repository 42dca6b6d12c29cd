#!/usr/bin/env bash
# Side-by-side Sinkhorn iterations of kotml's tiled Sinkhorn and OTT-JAX (see
# compare_ott.py).
#
#   perf/ot/run_ott_comparison.sh BUILD_DIR [compare_ott.py options]
#
# Creates perf/.venv from perf/ot/requirements_ott.txt on first use.
# KOTML_PERF_PYTHON=/path/to/python uses an existing interpreter instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: perf/ot/run_ott_comparison.sh BUILD_DIR [options]}"
shift
source "$here/../support/peer_python.sh"
python="$(peer_python "$here/requirements_ott.txt")"
exec "$python" "$here/compare_ott.py" --build "$build" "$@"
