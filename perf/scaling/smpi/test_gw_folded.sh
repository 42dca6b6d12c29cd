#!/bin/sh
# ctest smpi_gw_landmark_folded_4_ranks (cmake/KotmlSmpi.cmake): sampled GW in
# landmark mode on 4 simulated ranks, with folding and without. Folding shares
# the kNN graphs, both landmark embeddings and the gathered target anchor
# distances D_Y with their mean squares (gw/cost_estimate.hpp) among the
# simulated ranks; SMPI copies no message into folded memory, so each rank
# writes its own target rows of D_Y there itself before the allgather. The
# folded run's /plan, /match, costs and errors must be the unfolded run's bits: a rank
# that left its rows of D_Y unwritten, or wrote them at another rank's offset,
# would change Λ and with it every later iteration.
#
#   test_gw_folded.sh KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR
set -eu
. "$(dirname "$0")/folded_test_common.sh"
$python - "$work/points.h5" <<'PY'
import sys
import h5py
import numpy as np
rng = np.random.default_rng(7)
# 300 points: 5 plan-row tiles of 64, split 2, 1, 1 and 1 over the 4 ranks (the last one short),
# so every rank writes target rows of its own, of two sizes.
n = 300
r, theta = np.linspace(0.3, 1.0, n), np.linspace(0.0, 9.0, n)
noise = rng.standard_normal((n, 2)) * 0.05
with h5py.File(sys.argv[1], "w") as h5:
    h5["x"] = np.column_stack([(r + noise[:, 0]) * np.cos(theta), (r + noise[:, 1]) * np.sin(theta)])
    h5["y"] = np.column_stack([r * np.cos(theta), rng.uniform(size=n), r * np.sin(theta)])
PY
gw="gw $work/points.h5 --mode landmark --k 8 --landmarks 20 --M 40 --max-iter 12 --min-iter 12 --plan dense"
$run --fold --log "$work/folded.log" -- $gw -o "$work/folded.h5"
$run --log "$work/plain.log" -- $gw -o "$work/plain.h5"
$python - "$work/folded.h5" "$work/plain.h5" <<'PY'
import json
import sys
import h5py
import numpy as np
folded, plain = (h5py.File(p, "r") for p in sys.argv[1:3])
config = json.loads(plain.attrs["kotml_config"])
if config.get("ranks") != 4 or config.get("mode") != "landmark":
    sys.exit(f"FAIL: not a 4-rank landmark run: {config}")
a, b = folded["plan"][()], plain["plan"][()]
if a.shape != (300, 300) or not np.isfinite(b).all() or not b.sum() > 0.5:
    sys.exit(f"FAIL: the unfolded run's plan is not a plan: shape {b.shape}, mass {b.sum()}")
for name in ("plan", "match", "gw_cost", "cost_list", "err_list"):
    a, b = folded[name][()], plain[name][()]
    if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
        sys.exit(f"FAIL: /{name} differs between the folded and the unfolded run")
print(f"folded and unfolded runs: the same /plan, /match, /gw_cost ({plain['gw_cost'][()]!r}), "
      f"/cost_list and /err_list, bit for bit")
PY
