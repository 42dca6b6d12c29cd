#!/bin/sh
# ctest smpi_map_sampled_replay_4_ranks (cmake/KotmlSmpi.cmake): a map of two
# simulated cohorts on 4 simulated ranks with sampling and folding
# (include/kotml/core/simulation.hpp). Iteration 0 runs for real, iteration 1
# is recorded, and the other 28 replay it; the error checks after iterations
# 10, 20 and 30 are all replays, so they must print one and the same error,
# the error that the same run without sampling prints after its second
# iteration: a replay that drifted from the recorded iteration would not. The
# same holds when three iterations are recorded (--recorded 3).
#
#   test_map_replay.sh KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR
set -eu
. "$(dirname "$0")/map_test_cohorts.sh"
$run --ranks 4 --samples 1 --fold --json "$work/run.json" --log "$work/map.log" -- map "$work/q.h5ad" "$work/r.h5ad" \
  --out "$work/out" --query-label-col cell_type --ref-label-col cell_type --query-sample-col sample \
  --ref-sample-col sample --n-top-genes 50 --max-iter 30 --threshold 0 --cost-storage stored --verbose
cat "$work/map.log"
$run --ranks 4 --log "$work/plain.log" -- map "$work/q.h5ad" "$work/r.h5ad" \
  --out "$work/plain" --query-label-col cell_type --ref-label-col cell_type --query-sample-col sample \
  --ref-sample-col sample --n-top-genes 50 --max-iter 2 --inner-iterations 1 --threshold 0 --cost-storage stored --verbose
second=$(sed -n 's/.*sinkhorn: iteration 2, error \([^ ]*\)$/\1/p' "$work/plain.log")
grep -q "kotml map: time per phase over 4 rank" "$work/map.log" || { echo "FAIL: no phase table"; exit 1; }
errors=$(sed -n 's/.*sinkhorn: iteration [123]0, error \([^ ]*\)$/\1/p' "$work/map.log")
[ "$(echo "$errors" | wc -l)" -eq 3 ] || { echo "FAIL: expected 3 error checks, got: $errors"; exit 1; }
[ "$(echo "$errors" | sort -u | wc -l)" -eq 1 ] || { echo "FAIL: the replays' errors differ: $errors"; exit 1; }
[ -n "$second" ] && [ "$(echo "$errors" | head -1)" = "$second" ] ||
  { echo "FAIL: the replays' error $(echo "$errors" | head -1) is not the unsampled second iteration's '$second'"; exit 1; }
echo "replayed error checks: $second (3 alike, as the unsampled run after 2 iterations)"
# Three recorded iterations (--recorded 3): iterations 2 and 3 restore the state
# and run their blocks for real again, the rest are charged the mean; the
# replays must be the same iteration still.
$run --ranks 4 --samples 1 --recorded 3 --fold --json "$work/run3.json" --log "$work/map3.log" -- map "$work/q.h5ad" \
  "$work/r.h5ad" --out "$work/out3" --query-label-col cell_type --ref-label-col cell_type --query-sample-col sample \
  --ref-sample-col sample --n-top-genes 50 --max-iter 30 --threshold 0 --cost-storage stored --verbose
errors3=$(sed -n 's/.*sinkhorn: iteration [123]0, error \([^ ]*\)$/\1/p' "$work/map3.log")
[ "$(echo "$errors3" | wc -l)" -eq 3 ] && [ "$(echo "$errors3" | sort -u)" = "$second" ] ||
  { echo "FAIL: with 3 recorded iterations the error checks are '$errors3', not 3 of '$second'"; exit 1; }
grep -q '"recorded_iterations": 3' "$work/run3.json" || { echo "FAIL: run3.json does not record 3 iterations"; exit 1; }
echo "with 3 recorded iterations: the same error checks"
