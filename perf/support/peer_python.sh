# Sourced by perf/<area>/run_comparison.sh. `peer_python REQUIREMENTS [torch]`
# prints the Python interpreter that runs a peer comparison: $KOTML_PERF_PYTHON
# when set, else perf/.venv, created on first use. With `torch`, torch comes
# first, the CPU-only wheel where its index is reachable and PyPI's default
# wheel otherwise. The area's requirements are installed every time (pip skips
# what is there), so one venv serves every area. pip talks on stderr.
peer_python() {
  local requirements="$1" with_torch="${2:-}"
  if [[ -n "${KOTML_PERF_PYTHON:-}" ]]; then
    echo "$KOTML_PERF_PYTHON"
    return
  fi
  local venv
  venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --upgrade pip >&2
  fi
  if [[ "$with_torch" == torch ]] && ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    "$venv/bin/pip" install --quiet torch --index-url https://download.pytorch.org/whl/cpu >&2 ||
      "$venv/bin/pip" install --quiet torch >&2
  fi
  "$venv/bin/pip" install --quiet -r "$requirements" >&2
  echo "$venv/bin/python"
}
