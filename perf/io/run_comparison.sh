#!/usr/bin/env bash
# Side-by-side timings of kotml's AnnData reader and anndata/h5py on one file
# (see compare_io.py).
#
#   perf/io/run_comparison.sh BUILD_DIR [--repeats R] [--cells N]
#
# Creates perf/.venv on first use and installs perf/io/requirements.txt into it.
# KOTML_PERF_PYTHON=/path/to/python uses an existing interpreter instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: perf/io/run_comparison.sh BUILD_DIR [options]}"
shift
source "$here/../support/peer_python.sh"
python="$(peer_python "$here/requirements.txt")"
exec "$python" "$here/compare_io.py" --build "$build" "$@"
