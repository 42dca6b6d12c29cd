#!/usr/bin/env bash
# kotml train-test against GGML-OT's train_test, side by side (see compare_ggml.py).
#
#   perf/ggml/run_comparison.sh BUILD_DIR [compare_ggml.py options]
#
# Creates perf/.venv on first use (torch from the CPU wheel index, then
# perf/ggml/requirements.txt); KOTML_PERF_PYTHON=/path/to/python uses an existing
# interpreter with those packages instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: perf/ggml/run_comparison.sh BUILD_DIR [options]}"
shift
source "$here/../support/peer_python.sh"
python="$(peer_python "$here/requirements.txt" torch)"
# One thread for numpy/torch inside GGML-OT unless the script sets more.
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1
exec "$python" "$here/compare_ggml.py" --build "$build" "$@"
