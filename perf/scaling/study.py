#!/usr/bin/env python3
"""A scaling study of one kotml command: the same command at several rank counts.

    python3 perf/scaling/study.py --command train --kind strong --size 40 --ranks 1,2 --out results/train_strong
    python3 perf/scaling/study.py --command apsp --kind weak --per-rank 2000 --ranks 1,2 --out results/apsp_weak
    python3 perf/scaling/study.py --command gw --kind strong --size 3000 --ranks 1,2,4,8 \\
        --launcher smpi --platform perf/scaling/platforms/FILE.xml --host-speed 2.5Gf --out results/gw_smpi

strong: one problem of --size units for every rank count; weak: --per-rank units
per rank (the problem grows with the ranks). Weak problems grow as the units
(--weak-growth units: p ranks hold p * per-rank units) or as the work
(--weak-growth work: round(per-rank * sqrt(p)) units, for the commands whose work
grows as the square of their units: all pairs of donors, of cells or of nodes,
so that every rank's share of it stays the same). The units are donors (train, train
in batches mode, distances), cells of each file (map), graph nodes (apsp) and
points of each cloud (gw, ot). kotml's own outputs go to --out/runs. Each rank
count writes RUN.json in --out (the fastest of --repeats runs): the command
line, the sizes, the wall time, the peak proportional set size of the run's
processes (sampled from /proc every 0.2 s, or less often where a sample takes
long: what the machine held for it, a simulated run's folded buffers counted
once), kotml's time per phase over ranks
(its timers.json), the launcher and the machine. slurm/collect_scaling.py turns a
folder of them into a table and plots.

Inputs are made once per size in --out/inputs with `kotml simulate` (cohorts,
map's query and reference) or numpy (point clouds; TorchGW's spiral and Swiss
roll for gw). Launchers: mpirun (this machine's Open MPI; ranks beyond its cores
are oversubscribed) or smpi (perf/scaling/smpi_run.sh: SimGrid's simulated
cluster, for rank counts this machine does not have). Needs numpy and h5py.
"""
import argparse
import json
import math
import os
import pathlib
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "support"))
from machine import describe_machine  # noqa: E402

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1",
            "OMP_PROC_BIND": "false", "KOKKOS_DISABLE_WARNINGS": "1"}

# Each command: the unit its size counts, and the kotml arguments of one run
# (inputs come from make_inputs; OUT is the run's own folder or file stem).
UNITS = {"train": "donors", "train-batches": "donors", "train-test": "donors", "distances": "donors", "map": "cells",
         "apsp": "nodes", "gw": "points", "ot": "points"}
# Commands whose work grows as the square of their units (pairs of donors, of
# cells, of graph nodes); train in batches mode solves within batches of fixed
# size, so its work grows as its donors.
QUADRATIC = {"train", "train-test", "distances", "map", "apsp", "gw", "ot"}


def problem_size(args, ranks):
    """Units of the problem at `ranks` ranks."""
    if args.kind == "strong":
        return args.size
    if args.weak_growth == "work":
        return round(args.per_rank * math.sqrt(ranks))
    return args.per_rank * ranks


def exit_failed(argv, returncode, stderr):
    sys.exit(f"study: {' '.join(map(shlex.quote, argv))} failed ({returncode}):\n{stderr[-3000:]}")


def run_checked(argv, env=None, cwd=None):
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        exit_failed(argv, result.returncode, result.stderr)
    return result


def tree_pss(root):
    """Proportional set size in bytes of process `root` and its descendants: what the
    machine holds for them, each shared page divided among its mappings (a folded
    buffer of a simulated run counts once, not once per simulated rank as in the
    resident size). None where /proc has no smaps_rollup."""
    parents = {}
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    total, seen = 0, False
    for pid in tree:
        try:
            rollup = pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
                seen = True
    return total if seen else None


def run_measured(argv, env, interval=0.2):
    """run_checked, sampling the run's tree_pss every `interval` seconds, or ten times
    as long as a sample took where that is longer; returns the peak (None where it
    could not be read). The kernel walks every mapping and page table of a process
    for its smaps_rollup, under the lock that the process's own mmap calls take: at
    1024 simulated ranks (55 GB mapped) one read took 1.2 s, so sampling back to
    back would take a core and slow the simulation."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, text=True)
        peak = None
        while proc.poll() is None:
            start = time.perf_counter()
            pss = tree_pss(proc.pid)
            if pss is not None:
                peak = max(peak or 0, pss)
            time.sleep(max(interval, 10 * (time.perf_counter() - start)))
        if proc.returncode != 0:
            err.seek(0)
            exit_failed(argv, proc.returncode, err.read())
    return peak


def simulate_cohort(kotml, path, donors, cells_per_donor, seed):
    """A two-class scrna cohort of `donors` donors (rounded up to even)."""
    if not path.exists():
        per_class = max(1, (donors + 1) // 2)
        run_checked([kotml, "simulate", "--kind", "scrna", "-o", str(path), "--seed", str(seed), "--quiet",
                     "--donors-per-class", str(per_class), "--cells-per-donor", str(cells_per_donor),
                     "--n-genes", "300"])
    return path


def point_file(path, n, dims, spiral_pair):
    """/x and /y: TorchGW's spiral (2-D) and Swiss roll (3-D) for gw, else two
    Gaussian clouds of `dims` dimensions."""
    if path.exists():
        return path
    import h5py
    import numpy as np
    rng = np.random.default_rng(n)
    with h5py.File(path, "w") as h5:
        if spiral_pair:
            r, theta = np.linspace(0.3, 1.0, n), np.linspace(0.0, 9.0, n)
            noise = rng.standard_normal((n, 2)) * 0.05
            h5["x"] = np.column_stack([(r + noise[:, 0]) * np.cos(theta), (r + noise[:, 1]) * np.sin(theta)])
            h5["y"] = np.column_stack([r * np.cos(theta), rng.uniform(size=n), r * np.sin(theta)])
        else:
            h5["x"] = rng.standard_normal((n, dims))
            h5["y"] = rng.standard_normal((n, dims)) + 0.5
    return path


def kotml_arguments(args, kotml, size, inputs, run):
    """The kotml command line of one run of `size` units, and where its timers go."""
    timers = run.with_suffix(".timers.json")
    if args.command in ("train", "train-batches", "train-test", "distances"):
        cohort = simulate_cohort(kotml, inputs / f"cohort_{size}.h5ad", size, args.cells_per_donor, 1)
        if args.command == "distances":
            return ["distances", str(cohort), "--metric", "euclidean", "--n-cells", "all", "-o",
                    str(run.with_suffix(".h5")), "--timers", str(timers)], timers
        if args.command == "train-test":
            # study::train_test, the library call behind the CLI: one split,
            # its training and its evaluation.
            return ["train-test", str(cohort), "--n-cells", "all", "--epochs", str(args.epochs), "--stop-thr", "0",
                    "--n-comps", "5", "--n-splits", "1", "--out", str(run)], run / "timers.json"
        mode = ["--mode", "batches", "--batch-size", "8"] if args.command == "train-batches" else []
        return ["train", str(cohort), "--n-cells", "all", "--epochs", str(args.epochs), "--stop-thr", "0",
                "--n-comps", "5", *mode, "--out", str(run)], run / "timers.json"
    if args.command == "map":
        donors = max(2, size // args.cells_per_donor)
        query = simulate_cohort(kotml, inputs / f"query_{size}.h5ad", donors, args.cells_per_donor, 2)
        reference = simulate_cohort(kotml, inputs / f"reference_{size}.h5ad", donors, args.cells_per_donor, 3)
        sides = ["--query-label-col", "cell_type", "--ref-label-col", "cell_type", "--query-sample-col", "sample",
                 "--ref-sample-col", "sample"]
        memory = ["--cost-memory", args.cost_memory] if args.cost_memory else []
        if args.column_sum_memory:
            memory += ["--column-sum-memory", args.column_sum_memory]
        if args.cost_storage:
            memory += ["--cost-storage", args.cost_storage]
        fixed = ["--threshold", "0"] if args.fixed_iterations else []
        return ["map", str(query), str(reference), "--out", str(run), *sides, "--n-top-genes", "200",
                "--max-iter", str(args.iterations), *fixed, *memory], run / "timers.json"
    points = point_file(inputs / f"points_{args.command}_{size}.h5", size, args.dims, args.command == "gw")
    if args.command == "apsp":
        return ["apsp", str(points), "--dataset", "x", "--k", "10", "-o", str(run.with_suffix(".h5")),
                "--timers", str(timers)], timers
    if args.command == "gw":
        precision = ["--mixed-precision"] if args.mixed_precision else []
        return ["gw", str(points), "--mode", "landmark", "--k", "10", "--M", "200", "--max-iter",
                str(args.iterations), "--min-iter", str(args.iterations), *precision, "-o",
                str(run.with_suffix(".h5")), "--timers", str(timers)], timers
    return ["ot", "--input", str(points), "--solver", "sinkhorn", "--cost", "sqeuclidean", "--max-iter",
            str(args.iterations), "--threshold", "0", "--timers", str(timers)], timers


def launcher_argv(args, ranks, kotml_args):
    if args.launcher == "smpi":
        sampling = ["--samples", str(args.smpi_samples)] if args.smpi_samples else []
        if args.smpi_samples and args.smpi_recorded > 1:
            sampling += ["--recorded", str(args.smpi_recorded)]
        if args.smpi_fold:
            sampling.append("--fold")
        return [str(ROOT / "perf" / "scaling" / "smpi_run.sh"), "--ranks", str(ranks), "--platform", args.platform,
                "--host-speed", args.host_speed, *sampling, "--", *kotml_args]
    return [args.mpirun, "-np", str(ranks), "--oversubscribe", "--quiet", args.kotml, *kotml_args]


def parse_arguments(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--command", required=True, choices=sorted(UNITS))
    p.add_argument("--kind", required=True, choices=["strong", "weak"])
    p.add_argument("--size", type=int, help="strong: units of the one problem")
    p.add_argument("--per-rank", type=int, help="weak: units per rank")
    p.add_argument("--weak-growth", choices=["units", "work"], default="units",
                   help="weak: p * per-rank units (units), or round(per-rank * sqrt(p)) units so that each rank's "
                        "share of an all-pairs problem stays the same (work)")
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts (default 1,2)")
    p.add_argument("--out", required=True, type=pathlib.Path, help="study folder (RUN.json per run)")
    p.add_argument("--launcher", choices=["mpirun", "smpi"], default="mpirun")
    p.add_argument("--platform", help="smpi: SimGrid platform file")
    p.add_argument("--host-speed", default="", help="smpi: calibrated host speed (e.g. 2.5Gf)")
    p.add_argument("--kotml", default=str(ROOT / "build" / "release" / "src" / "kotml"))
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--epochs", type=int, default=3, help="train: epochs per run")
    p.add_argument("--iterations", type=int, default=50, help="map, gw, ot: iterations per run")
    p.add_argument("--cells-per-donor", type=int, default=100)
    p.add_argument("--dims", type=int, default=16, help="apsp, ot: coordinates per point")
    p.add_argument("--repeats", type=int, default=1, help="runs per rank count (the fastest is kept)")
    p.add_argument("--cost-memory", default="", help="map: kotml's --cost-memory per rank (default: kotml's own)")
    p.add_argument("--column-sum-memory", default="",
                   help="map: kotml's --column-sum-memory per rank, the chunk of the plan's column sums (default: "
                        "kotml's own); smaller chunks keep the simulated ranks' copies of them small")
    p.add_argument("--cost-storage", choices=["automatic", "stored", "online"],
                   help="map: kotml's --cost-storage (default: kotml's own, automatic)")
    p.add_argument("--mixed-precision", action="store_true",
                   help="gw: kotml's --mixed-precision (a float32 plan and cost: half the memory of a rank's rows)")
    p.add_argument("--smpi-samples", type=int, default=0,
                   help="smpi: sampled compute blocks, N real runs each (smpi_run.sh --samples)")
    p.add_argument("--smpi-recorded", type=int, default=1,
                   help="smpi, with --smpi-samples: iterations the tiled Sinkhorn records, each compute block "
                        "charged the mean of its runs (smpi_run.sh --recorded)")
    p.add_argument("--smpi-fold", action="store_true", help="smpi: folded buffers (smpi_run.sh --fold)")
    p.add_argument("--fixed-iterations", action="store_true",
                   help="map: run all --iterations (--threshold 0); needed with --smpi-samples, where the "
                        "skipped sweeps leave the marginal error as it was and convergence cannot be seen")
    p.add_argument("--discard-outputs", action="store_true",
                   help="delete each run's output file once its timers are read (apsp at 50k nodes writes 10 GB "
                        "a run)")
    args = p.parse_args(argv)
    if (args.kind == "strong") != (args.size is not None) or (args.kind == "weak") != (args.per_rank is not None):
        p.error("strong studies take --size, weak ones --per-rank")
    if args.weak_growth == "work" and (args.kind != "weak" or args.command not in QUADRATIC):
        p.error(f"--weak-growth work is for weak studies of {', '.join(sorted(QUADRATIC))}")
    if args.launcher == "smpi" and not (args.platform and args.host_speed):
        p.error("--launcher smpi needs --platform and --host-speed")
    if args.launcher != "smpi" and (args.smpi_samples or args.smpi_fold):
        p.error("--smpi-samples and --smpi-fold are for --launcher smpi")
    if not 1 <= args.smpi_recorded <= 999 or (args.smpi_recorded > 1 and not args.smpi_samples):
        p.error("--smpi-recorded takes 1 to 999 iterations, and more than 1 only with --smpi-samples")
    if args.mixed_precision and args.command != "gw":
        p.error("--mixed-precision is for gw")
    if args.smpi_samples and args.command == "map" and not args.fixed_iterations:
        p.error("--smpi-samples needs --fixed-iterations for map (sampled sweeps cannot converge)")
    args.ranks = [int(r) for r in args.ranks.split(",")]
    args.kotml = os.path.abspath(args.kotml)
    return args


def main(argv):
    args = parse_arguments(argv)
    inputs = args.out / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    (args.out / "runs").mkdir(exist_ok=True)
    env = dict(os.environ, **ROOT_ENV)
    for ranks in args.ranks:
        size = problem_size(args, ranks)
        name = f"{args.command}_{args.kind}_p{ranks}"
        best = None
        for repeat in range(args.repeats):
            run = args.out / "runs" / f"{name}_r{repeat}"
            kotml_args, timers_path = kotml_arguments(args, args.kotml, size, inputs, run)
            argv = launcher_argv(args, ranks, kotml_args)
            start = time.perf_counter()
            peak_pss = run_measured(argv, env=env)
            wall = time.perf_counter() - start
            timers = json.loads(timers_path.read_text())
            if args.discard_outputs:
                run.with_suffix(".h5").unlink(missing_ok=True)
            if best is None or timers["total_seconds"]["max"] < best[1]["total_seconds"]["max"]:
                best = (wall, timers, argv, peak_pss)
        wall, timers, argv, peak_pss = best
        record = {
            "study": args.out.name, "command": args.command, "kind": args.kind, "ranks": ranks,
            "unit": UNITS[args.command], "size": size, "per_rank": args.per_rank,
            "weak_growth": args.weak_growth if args.kind == "weak" else None,
            "launcher": args.launcher, "platform": args.platform, "host_speed": args.host_speed,
            "smpi_samples": args.smpi_samples, "smpi_recorded": args.smpi_recorded, "smpi_fold": args.smpi_fold,
            "fixed_iterations": args.fixed_iterations, "cost_storage": args.cost_storage,
            "mixed_precision": args.mixed_precision,
            "wall_seconds": wall, "peak_pss_bytes": peak_pss, "timers": timers, "argv": argv,
            "machine": describe_machine(),
        }
        (args.out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
        memory = f", peak Pss {peak_pss / 2**20:.0f} MiB" if peak_pss else ""
        print(f"{name}: {size} {UNITS[args.command]}, {ranks} rank(s): "
              f"{timers['total_seconds']['max']:.3f} s (kotml), {wall:.3f} s wall{memory}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
