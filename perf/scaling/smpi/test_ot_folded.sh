#!/bin/sh
# ctest smpi_ot_online_folded_4_ranks (cmake/KotmlSmpi.cmake): a tiled Sinkhorn
# with costs recomputed per tile (`kotml ot --online`, joint passes) on 4
# simulated ranks, with folding and without. Folding shares y's packed copy and
# the joint pass's row strips and per-slot column limbs among the simulated ranks
# (include/kotml/core/simulation.hpp, block_scratch). /f and /g must be the same
# bits: a buffer shared across an MPI call, such as the rank's column limbs before
# their allreduce, would mix the ranks' sums (a mutant that folds those fails it).
#
#   test_ot_folded.sh KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR
set -eu
. "$(dirname "$0")/folded_test_common.sh"
$python - "$work/points.h5" <<'PY'
import sys
import h5py
import numpy as np
rng = np.random.default_rng(11)
# 300 rows: row tiles of 64 on every rank (2, 1, 1 and 1 of them), so all ranks fold.
with h5py.File(sys.argv[1], "w") as h5:
    h5["x"] = rng.standard_normal((300, 12)).astype(np.float32)
    h5["y"] = (rng.standard_normal((700, 12)) + 0.3).astype(np.float32)
PY
ot="ot --input $work/points.h5 --solver sinkhorn --cost sqeuclidean --epsilon 0.5 --online --max-iter 40 --threshold 0 --precision float"
$run --fold --log "$work/folded.log" -- $ot -o "$work/folded.h5"
$run --log "$work/plain.log" -- $ot -o "$work/plain.h5"
$python - "$work/folded.h5" "$work/plain.h5" "$work/plain.log" <<'PY'
import json
import sys
import h5py
import numpy as np
folded, plain = (h5py.File(p, "r") for p in sys.argv[1:3])
summary = json.loads(h5py.File(sys.argv[2], "r").attrs["configuration"])
if summary.get("joint_passes", 0) < 1 or summary.get("cost_storage") != "online":
    sys.exit(f"FAIL: the run made no joint pass over recomputed costs: {summary}")
for name in ("f", "g", "errors"):
    a, b = folded[name][()], plain[name][()]
    if a.shape != b.shape or (a.view(np.uint64) != b.view(np.uint64)).any():
        sys.exit(f"FAIL: /{name} differs between the folded and the unfolded run")
print(f"folded and unfolded runs: the same /f, /g and /errors, bit for bit, after {summary['joint_passes']} joint passes")
PY
