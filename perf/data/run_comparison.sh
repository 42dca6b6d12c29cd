#!/usr/bin/env bash
# Side-by-side timings of `kotml prep` and scanpy (see compare_prep.py).
#
#   perf/data/run_comparison.sh BUILD_DIR [--threads N] [--repeats R]
#
# Creates perf/.venv on first use and installs perf/data/requirements.txt into
# it. KOTML_PERF_PYTHON=/path/to/python uses an existing interpreter instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:?usage: perf/data/run_comparison.sh BUILD_DIR [options]}"
shift
python="${KOTML_PERF_PYTHON:-}"
if [[ -z "$python" ]]; then
  venv="$root/perf/.venv"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
  fi
  "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
  python="$venv/bin/python"
fi
exec "$python" "$here/compare_prep.py" --build "$build" "$@"
