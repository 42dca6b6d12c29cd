#!/usr/bin/env python3
"""Per-rank memory of `kotml train` under the 2-D donor placement (issue 14),
against its model: a rank holds one row block and one column block of the
donor x donor pair matrix, about N/pr + N/pc of N donors (2N/sqrt(P) on a
square grid of P = pr x pc ranks).

    python3 perf/scaling/placement_memory.py --build build/release --ranks 1,2,3,4,9,16 --out results/placement

The cohort (made once in --out with kotml simulate: 2 classes x --donors-per-class
donors x --cells-per-donor cells x --genes genes, trained on every cell of X, so
that the points dominate a rank's memory) is trained for one EMD epoch at each
rank count, each rank under /usr/bin/time. Ranks beyond this machine's cores are
oversubscribed: memory does not need cores, only the time grows. Prints a
markdown table: the grid, the donors and cells the busiest rank holds (kotml's
--verbose placement line), the model's share, and the peak resident memory per
rank (min and max over ranks). Needs only the Python standard library.
"""
import argparse
import math
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "support"))
from machine import describe_machine  # noqa: E402

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
           KOKKOS_DISABLE_WARNINGS="1")
PLACEMENT = re.compile(r"placement: each rank holds (\d+) to (\d+) of (\d+) training donors "
                       r"\(at most (\d+) of (\d+) cells\)")


def grid(ranks):
    rows = max(r for r in range(1, int(math.isqrt(ranks)) + 1) if ranks % r == 0)
    return rows, ranks // rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True)
    parser.add_argument("--ranks", default="1,2,3,4,9,16")
    parser.add_argument("--donors-per-class", type=int, default=50)
    parser.add_argument("--cells-per-donor", type=int, default=1000)
    parser.add_argument("--genes", type=int, default=1000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    kotml = os.path.abspath(os.path.join(args.build, "src", "kotml"))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cohort = out / f"cohort_{args.donors_per_class}x{args.cells_per_donor}x{args.genes}.h5ad"
    if not cohort.exists():
        subprocess.run([kotml, "simulate", "--kind", "scrna", "--n-classes", "2", "--donors-per-class",
                        str(args.donors_per_class), "--cells-per-donor", str(args.cells_per_donor), "--n-genes",
                        str(args.genes), "-o", str(cohort)], check=True, stdout=subprocess.DEVNULL)
    version = subprocess.run([kotml, "--version"], check=True, capture_output=True, text=True).stdout.splitlines()
    print(f"machine: {describe_machine()}\nkotml: {version[0]}\ncohort: {cohort.name} "
          f"({2 * args.donors_per_class} donors x {args.cells_per_donor} cells x {args.genes} genes, X as float)\n")
    print("| ranks | grid | donors held (busiest rank) | cells held (busiest) | model N/pr + N/pc | "
          "peak RSS per rank, min-max (MB) | wall (s) |")
    print("|---|---|---|---|---|---|---|")
    for ranks in (int(r) for r in args.ranks.split(",")):
        run_dir = out / f"np{ranks}"
        command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
                   "/usr/bin/time", "-f", "kotml-peak-rss-kb %M %e",
                   kotml, "train", str(cohort), "--n-cells", "all", "--epochs", "1", "--stop-thr", "0",
                   "--out", str(run_dir), "--verbose"]
        r = subprocess.run(command, capture_output=True, text=True, env=ENV)
        if r.returncode != 0:
            sys.exit(f"failed ({r.returncode}): {' '.join(command)}\n{r.stderr[-3000:]}")
        peaks = [int(m.group(1)) / 1024 for m in re.finditer(r"kotml-peak-rss-kb (\d+)", r.stderr)]
        walls = [float(m.group(1)) for m in re.finditer(r"kotml-peak-rss-kb \d+ ([\d.]+)", r.stderr)]
        placement = PLACEMENT.search(r.stderr)
        if not placement or len(peaks) != ranks:
            sys.exit(f"no placement line or peaks in the output of {' '.join(command)}\n{r.stderr[-3000:]}")
        fewest, most, donors, most_cells, cells = (int(g) for g in placement.groups())
        pr, pc = grid(ranks)
        model = min(1.0, 1 / pr + 1 / pc)
        print(f"| {ranks} | {pr} x {pc} | {most} of {donors} ({most / donors:.0%}) | {most_cells} ({most_cells / cells:.0%}) | "
              f"{model:.0%} | {min(peaks):.0f}-{max(peaks):.0f} | {max(walls):.1f} |", flush=True)


if __name__ == "__main__":
    main()
