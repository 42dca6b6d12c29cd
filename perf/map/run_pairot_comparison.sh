#!/usr/bin/env bash
# kotml map against pairOT a66c7cf side by side (see compare_pairot.py).
#
#   KOTML_PAIROT_PYTHON=/path/to/venv/bin/python perf/map/run_pairot_comparison.sh BUILD_DIR [options]
#
# pairOT cannot be installed from a requirements file alone (its wheel build and
# its R side need the steps in requirements_pairot.txt), so the interpreter of a
# prepared virtualenv is given by KOTML_PAIROT_PYTHON.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: KOTML_PAIROT_PYTHON=... perf/map/run_pairot_comparison.sh BUILD_DIR [options]}"
shift
python="${KOTML_PAIROT_PYTHON:?set KOTML_PAIROT_PYTHON to the python of a virtualenv with pairOT (requirements_pairot.txt)}"
exec "$python" "$here/compare_pairot.py" --build "$build" "$@"
