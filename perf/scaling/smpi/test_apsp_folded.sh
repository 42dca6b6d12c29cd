#!/bin/sh
# ctest smpi_apsp_folded_4_ranks (cmake/KotmlSmpi.cmake): all-pairs shortest
# paths of a 600-point cloud's kNN graph on 4 simulated ranks, with folding
# (include/kotml/core/simulation.hpp: the points, the gathered neighbours and
# the graph are then one copy shared by all simulated ranks) and without. The
# two /distances must be the same bits: a rank that wrote into the shared
# graph after it was built (the edge lengths scaled again, say) would change
# them (a mutant that set the shared lengths fails it).
#
#   test_apsp_folded.sh KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR
set -eu
. "$(dirname "$0")/folded_test_common.sh"
$python - "$work/points.h5" <<'PY'
import sys
import h5py
import numpy as np
rng = np.random.default_rng(5)
# Two blobs far apart: the kNN graph needs a bridge, which the comparison covers too.
x = np.vstack([rng.standard_normal((300, 8)), rng.standard_normal((300, 8)) + 40.0])
with h5py.File(sys.argv[1], "w") as h5:
    h5["x"] = x
PY
apsp="apsp $work/points.h5 --dataset x --k 6 --chunk-rows 40"
$run --fold --log "$work/folded.log" -- $apsp -o "$work/folded.h5"
$run --log "$work/plain.log" -- $apsp -o "$work/plain.h5"
$python - "$work/folded.h5" "$work/plain.h5" <<'PY'
import sys
import h5py
import numpy as np
folded, plain = (h5py.File(p, "r")["distances"][()] for p in sys.argv[1:3])
assert folded.shape == (600, 600), folded.shape
assert np.isfinite(plain).all() and (plain.diagonal() == 0).all(), "the unfolded run's lengths are not a metric's"
differ = int((folded.view(np.uint32) != plain.view(np.uint32)).sum())
if differ:
    sys.exit(f"FAIL: {differ} of {plain.size} lengths differ between the folded and the unfolded run")
print(f"folded and unfolded runs: the same {plain.size} lengths, bit for bit")
PY
