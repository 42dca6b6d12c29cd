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
root="$(cd "$here/../.." && pwd)"
build="${1:?usage: perf/ggml/run_comparison.sh BUILD_DIR [options]}"
shift
python="${KOTML_PERF_PYTHON:-}"
if [[ -z "$python" ]]; then
  venv="$root/perf/.venv"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    # The CPU-only wheel when its index is reachable, PyPI's default wheel otherwise.
    "$venv/bin/pip" install --quiet torch --index-url https://download.pytorch.org/whl/cpu ||
      "$venv/bin/pip" install --quiet torch
  fi
  "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
  python="$venv/bin/python"
fi
# One thread for numpy/torch inside GGML-OT unless the script sets more.
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1
exec "$python" "$here/compare_ggml.py" --build "$build" "$@"
