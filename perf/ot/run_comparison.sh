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
root="$(cd "$here/../.." && pwd)"
build="${1:?usage: perf/ot/run_comparison.sh BUILD_DIR [options]}"
shift
python="${KOTML_PERF_PYTHON:-}"
if [[ -z "$python" ]]; then
  venv="$root/perf/.venv"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    # The CPU-only torch wheel is small; where its index is unreachable, the
    # default index's wheel (with CUDA libraries, several GB) does as well.
    "$venv/bin/pip" install --quiet torch --index-url https://download.pytorch.org/whl/cpu ||
      "$venv/bin/pip" install --quiet torch
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
  fi
  python="$venv/bin/python"
fi
# POT's network simplex and numpy on one thread, as the comparison states.
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$python" "$here/compare_ot.py" --build "$build" "$@"
