# Sourced by the ctests that compare a folded simulated run with an unfolded one
# (test_apsp_folded.sh, test_ot_folded.sh, test_gw_folded.sh), whose arguments are
# KOTML_SMPI_BINARY SOURCE_DIR WORK_DIR. Sets kotml, source and work (emptied),
# run (smpi_run.sh on 4 ranks of the IB platform) and python: Debian's, which has
# h5py and numpy (python3-h5py, .ci/install-deps); a python3 earlier on PATH may not.
kotml=$1 source=$2 work=$3
run="$source/perf/scaling/smpi_run.sh --platform $source/perf/scaling/platforms/fat_tree_ib_hdr100_1152.xml --host-speed 1Gf --kotml $kotml --ranks 4"
rm -rf "$work" && mkdir -p "$work"
python=/usr/bin/python3
[ -x "$python" ] || python=python3
