#!/usr/bin/env python3
"""Side-by-side time per Sinkhorn iteration of kotml's tiled Sinkhorn and
OTT-JAX 0.6 (online PointCloud) on the same points, epsilon and cores.

Run from the repository root (it creates its own virtual environment):

    perf/ot/run_ott_comparison.sh BUILD_DIR [--n 20000] [--dims 64,350,750]
                                             [--costs cosine,sqeuclidean] [--ranks 1,2]
                                             [--updates alternating|symmetric] [--skip-stored]

or, with an interpreter that has jax==0.8.2, jaxlib==0.8.2, ott-jax==0.6.0 and
h5py: PYTHON perf/ot/compare_ott.py --build BUILD_DIR ...

BUILD_DIR holds a kotml build (src/kotml, perf/bench_ot_tiled). For each
dimension and cost the script:
  1. draws n source and n target points once (numpy, seed 2026, standard normal)
     and writes them to BUILD_DIR/perf/ott_points_D.h5 (/x, /y);
  2. times OTT: Sinkhorn(threshold=0, inner_iterations=10) on
     PointCloud(x, y, cost_fn, epsilon=0.05, batch_size=1024) in float32, with
     max_iterations 10 and 20, each compiled ahead of time; XLA restricted to the
     cores of the run (taskset, and one intra-op thread per core);
  3. times `kotml ot --solver sinkhorn --precision float --threshold 0` with the
     same settings, online costs, stored costs in the log domain and stored
     costs with the automatic domain (the scaling domain where the cost range
     allows), on 1 and 2 MPI ranks (mpirun), from the solve time kotml reports,
     again with 10 and 20 iterations (stored costs: 10 and 110, --stored-iters,
     since 10 of their iterations take about as long as the set-up's noise);
  4. prints a markdown table of seconds per iteration ((t20 - t10) / 10, which
     cancels set-up, compilation and the fill of stored costs) and the ratios.

Both tools count one iteration as one g- and one f-update; both check the error
every 10 iterations. kotml's alternating online iterations are joint passes
(one tile product per iteration, see kotml/ot/tiled_sinkhorn.hpp); the GFLOP/s
column counts the products kotml made (its tile_sweeps). The machine limits (OpenBLAS sgemm rate, exp rate) come
from perf/bench_ot_tiled and perf/bench_ot_sinkhorn, run with --limits.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from machine import describe_machine  # noqa: E402

EPSILON = 0.05
INNER = 10
ITERS = (10, 20)


def write_points(build, n, dim):
    path = os.path.join(build, "perf", f"ott_points_{n}_{dim}.h5")
    if not os.path.exists(path):
        rng = np.random.default_rng(2026)
        with h5py.File(path, "w") as f:
            f["x"] = rng.standard_normal((n, dim))
            f["y"] = rng.standard_normal((n, dim))
    return path


OTT_SNIPPET = r"""
import json, sys, time
import h5py, jax, jax.numpy as jnp
from ott.geometry import costs, pointcloud
from ott.problems.linear import linear_problem
from ott.solvers.linear import sinkhorn
path, cost, eps, inner, iters = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), [int(k) for k in sys.argv[5].split(",")]
symmetric = len(sys.argv) > 6 and sys.argv[6] == "symmetric"
with h5py.File(path) as f:
    x = jnp.asarray(f["x"][...], dtype=jnp.float32)
    y = jnp.asarray(f["y"][...], dtype=jnp.float32)
fn = {"cosine": costs.Cosine(), "sqeuclidean": costs.SqEuclidean()}[cost]
def solve(k):
    geom = pointcloud.PointCloud(x, y, cost_fn=fn, epsilon=eps, batch_size=1024)
    prob = linear_problem.LinearProblem(geom)
    kwargs = dict(threshold=0.0, inner_iterations=inner, max_iterations=k)
    if symmetric:  # kotml's --updates symmetric
        from ott.solvers.linear import acceleration
        kwargs.update(parallel_dual_updates=True, momentum=acceleration.Momentum(value=0.5))
    solver = jax.jit(sinkhorn.Sinkhorn(**kwargs))
    return solver.lower(prob).compile(), prob  # compiled ahead of time, not run
out = {}
for k in iters:
    compiled, prob = solve(k)
    t = time.perf_counter()
    r = compiled(prob)
    jax.block_until_ready(r.f)
    out[k] = time.perf_counter() - t
    out[f"n_iters_{k}"] = int(r.n_iters)
print(json.dumps(out))
"""


def time_ott(python, path, cost, cores, updates):
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={'true' if cores > 1 else 'false'} intra_op_parallelism_threads={cores}"
    env["OMP_NUM_THREADS"] = str(cores)
    cpu_list = ",".join(str(c) for c in range(cores))
    cmd = ["taskset", "-c", cpu_list, python, "-c", OTT_SNIPPET, path, cost, str(EPSILON), str(INNER),
           ",".join(str(k) for k in ITERS), updates]
    result = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
    return (result[str(ITERS[1])] - result[str(ITERS[0])]) / (ITERS[1] - ITERS[0])


def time_kotml(build, path, cost, ranks, storage, domain="auto", iters=ITERS, updates="alternating"):
    """Seconds per iteration, the domain kotml reports, and its passes over the tiles per iteration."""
    seconds, sweeps = [], []
    for k in iters:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", os.path.join(build, "src", "kotml"), "ot", "--input",
               path, "--solver", "sinkhorn", "--cost", cost, "--epsilon", str(EPSILON), "--threshold", "0",
               "--inner-iterations", str(INNER), "--max-iter", str(k), "--precision", "float", "--cost-storage",
               storage, "--sinkhorn-domain", domain, "--updates", updates]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        summary = json.loads(out.strip().splitlines()[-1])
        assert summary["iterations"] == k, summary
        seconds.append(summary["seconds"])
        sweeps.append(summary["tile_sweeps"])
    span = iters[1] - iters[0]
    return (seconds[1] - seconds[0]) / span, summary["sinkhorn_domain"], (sweeps[1] - sweeps[0]) / span


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--dims", default="64,350,750")
    parser.add_argument("--costs", default="cosine,sqeuclidean")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--stored-iters", default="10,110", help="kotml's two iteration counts with stored costs")
    parser.add_argument("--updates", default="alternating", choices=["alternating", "symmetric"],
                        help="symmetric: kotml --updates symmetric against OTT's parallel_dual_updates with "
                             "momentum 0.5 (the same iterates); kotml evaluates each online tile once per "
                             "iteration instead of twice")
    parser.add_argument("--skip-stored", action="store_true", help="online columns only")
    parser.add_argument("--skip-ott", action="store_true")
    args = parser.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    ranks = [int(r) for r in args.ranks.split(",")]
    stored_iters = tuple(int(k) for k in args.stored_iters.split(","))
    print(f"Machine: {describe_machine()}")
    print(f"updates: {args.updates}")
    print(f"n = m = {args.n}, float32, epsilon {EPSILON} (absolute), inner_iterations {INNER}; "
          f"seconds per iteration = (t({ITERS[1]}) - t({ITERS[0]})) / {ITERS[1] - ITERS[0]}, kotml stored "
          f"(t({stored_iters[1]}) - t({stored_iters[0]})) / {stored_iters[1] - stored_iters[0]}\n")
    print("| cost | d | cores | OTT online | kotml online | kotml stored, log | kotml stored, auto (domain) | "
          "online vs OTT | stored log vs OTT | stored auto vs OTT | kotml GFLOP/s (online) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for cost in args.costs.split(","):
        for dim in dims:
            path = write_points(args.build, args.n, dim)
            for r in ranks:
                ott = float("nan") if args.skip_ott else time_ott(sys.executable, path, cost, r, args.updates)
                online, _, passes = time_kotml(args.build, path, cost, r, "online", updates=args.updates)
                stored_log = stored_auto = float("nan")
                domain = "not run"
                if not args.skip_stored:
                    stored_log, _, _ = time_kotml(args.build, path, cost, r, "stored", "log", stored_iters, args.updates)
                    stored_auto, domain, _ = time_kotml(args.build, path, cost, r, "stored", iters=stored_iters,
                                                     updates=args.updates)
                # Tile products per iteration: one per pass over the tiles (one with symmetric updates or
                # alternating joint passes, two with alternating half-step passes).
                flops = passes * 2.0 * args.n * args.n * dim / online / 1e9
                print(f"| {cost} | {dim} | {r} | {ott:.3f} s | {online:.3f} s | {stored_log:.4f} s | "
                      f"{stored_auto:.4f} s ({domain}) | {ott / online:.1f}x | {ott / stored_log:.0f}x | "
                      f"{ott / stored_auto:.0f}x | {flops:.1f} |", flush=True)

if __name__ == "__main__":
    main()
