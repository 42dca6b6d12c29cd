# Sourced by the map ctests (test_map_replay.sh, test_map_folded.sh), whose
# arguments are KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR. Sets kotml, source, work
# (emptied) and run (smpi_run.sh on the IB platform; each call gives --ranks),
# and simulates two small cohorts, the query $work/q.h5ad and the reference
# $work/r.h5ad (3 donors a class, 60 cells each, 120 genes).
kotml=$1 source=$2 work=$3
run="$source/perf/scaling/smpi_run.sh --platform $source/perf/scaling/platforms/fat_tree_ib_hdr100_1152.xml --host-speed 1Gf --kotml $kotml"
rm -rf "$work" && mkdir -p "$work"
cohort="simulate --kind scrna --donors-per-class 3 --cells-per-donor 60 --n-genes 120 --quiet"
$run --ranks 1 --log "$work/q.log" -- $cohort --seed 2 -o "$work/q.h5ad"
$run --ranks 1 --log "$work/r.log" -- $cohort --seed 3 -o "$work/r.h5ad"
