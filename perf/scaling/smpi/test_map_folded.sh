#!/bin/sh
# ctest smpi_map_folded_8_ranks (cmake/KotmlSmpi.cmake): a map with costs
# recomputed per tile on 8 simulated ranks, folded (the reference's features,
# y's packed copy, the joint pass's scratch and the cluster masses shared by the
# simulated ranks) and plain. Folding must change no value: mapping.csv and
# distance.csv are the same bytes. glibc is made to map every allocation of 4 kB
# or more (MALLOC_MMAP_THRESHOLD_), so that plain buffers take the addresses of
# folded ones freed before them: SimGrid 3.32 keeps taking such an address for
# shared memory until every rank has freed the site, and copies no message into
# it (sim::release_folded reserves the range; without that this run's Sinkhorn
# errors and tables come out wrong at 8 ranks, three times in three).
#
#   test_map_folded.sh KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR
set -eu
. "$(dirname "$0")/map_test_cohorts.sh"
map="map $work/q.h5ad $work/r.h5ad --query-label-col cell_type --ref-label-col cell_type --query-sample-col sample
  --ref-sample-col sample --n-top-genes 50 --max-iter 10 --threshold 0 --cost-storage online --verbose"
MALLOC_MMAP_THRESHOLD_=4096 $run --ranks 8 --fold --log "$work/folded.log" -- $map --out "$work/folded"
MALLOC_MMAP_THRESHOLD_=4096 $run --ranks 8 --log "$work/plain.log" -- $map --out "$work/plain"
for log in folded plain; do
  grep -q "kotml map: time per phase over 8 rank" "$work/$log.log" || { echo "FAIL: the $log run did not finish"; exit 1; }
done
errors() { sed -n 's/.*sinkhorn: iteration 10, error \([^ ]*\)$/\1/p' "$1"; }
[ -n "$(errors "$work/plain.log")" ] && [ "$(errors "$work/folded.log")" = "$(errors "$work/plain.log")" ] ||
  { echo "FAIL: the folded run's error '$(errors "$work/folded.log")' is not the plain run's '$(errors "$work/plain.log")'"; exit 1; }
for table in mapping.csv distance.csv; do
  cmp -s "$work/plain/$table" "$work/folded/$table" || { echo "FAIL: $table differs between the folded and the plain run"; exit 1; }
done
echo "folded and plain runs on 8 ranks: error $(errors "$work/plain.log") after 10 iterations, the same mapping.csv and distance.csv"
