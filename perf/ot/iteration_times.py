#!/usr/bin/env python3
"""Time per Sinkhorn iteration of one `kotml ot` run, between its error checks.

    perf/ot/iteration_times.py -- build/release/src/kotml ot --input p.h5 --solver sinkhorn ... --verbose

Runs the command after `--` (it must have --verbose, which prints one line per
error check), stamps each "iteration N, error E" line as it arrives on stderr,
and prints per check: N, E and the mean seconds per iteration since the check
before. The set-up (reading, the stored costs, the first kernel) falls before
the first check, so it does not enter any row. A slope from two runs of
different lengths, (t(N2) - t(N1)) / (N2 - N1), carries both runs' set-up
noise, which on a 2-core guest was seconds; these rows do not.
"""
import re
import subprocess
import sys
import time

CHECK = re.compile(r"iteration (\d+), error (\S+)")


def main(argv):
    if "--" not in argv:
        sys.exit("usage: iteration_times.py -- KOTML_COMMAND... --verbose")
    command = argv[argv.index("--") + 1:]
    if "--verbose" not in command:
        sys.exit("iteration_times.py: the command needs --verbose (one line per error check)")
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    print("iteration error seconds_per_iteration")
    last = None
    for line in run.stderr:
        match = CHECK.search(line)
        if not match:
            continue
        now, iteration = time.monotonic(), int(match.group(1))
        if last is not None:
            print(f"{iteration} {match.group(2)} {(now - last[0]) / (iteration - last[1]):.4f}", flush=True)
        last = (now, iteration)
    return run.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
