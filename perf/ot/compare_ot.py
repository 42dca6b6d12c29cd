#!/usr/bin/env python3
"""Side-by-side timings of kotml's OT kernels and their peers on the same inputs.

Run from the repository root (it creates its own virtual environment):

    perf/ot/run_comparison.sh BUILD_DIR [--threads 1,2] [--skip-peers]

or, with an interpreter that already has the packages of perf/ot/requirements.txt:

    PYTHON perf/ot/compare_ot.py --build BUILD_DIR [--threads 1,2]

BUILD_DIR is a kotml build with the benchmark drivers bench_ot_emd and
bench_ot_sinkhorn (perf/). Several thread counts need a Kokkos with OpenMP.

What it does:
  1. draws the inputs once (numpy, seed 2026) and writes them to
     BUILD_DIR/perf/ot_inputs.h5, which the drivers read (KOTML_OT_BENCH_INPUT);
  2. runs the drivers (Google Benchmark, JSON output) for each thread count;
  3. times POT (ot.emd2 on one thread; ot.sinkhorn with method="sinkhorn_log")
     and GGML-OT's batched torch Sinkhorn (_sinkhorn2_batched_torch, the
     formulation its trainer uses, torch on CPU with the same thread count) on
     the very same points and costs;
  4. prints markdown tables with the machine, the ratios, and the roofline of
     the log-domain kernel (measured exp rate and read bandwidth).

Timing rules: best of several repetitions; per-iteration Sinkhorn times are
differences of two runs with different iteration counts, which cancels set-up
and final evaluation. --clock wall (default) measures elapsed time; --clock cpu
measures the CPU time of the timing thread (Google Benchmark's cpu_time, Python's
time.thread_time), for one thread on a machine shared with other jobs, where
elapsed times include waiting for a core.
"""
import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import types

import h5py
import numpy as np
import ot
import scipy
import torch
from scipy.spatial.distance import cdist

DIM = 50
EMD_SIZES = (250, 1000, 2000)
BATCH_PROBLEMS, BATCH_N = 64, 250
DENSE_N = 5000
RELATIVE_EPS = 0.5
# Iteration counts of the two runs whose difference gives the time per iteration
# (must match the Args of perf/bench_ot_sinkhorn.cpp).
BATCH_ITERS = (10, 60)
DENSE_ITERS = (2, 42)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_ggml_batched_sinkhorn():
    """GGML-OT's batched torch Sinkhorn, imported without running the package's
    __init__ (which pulls in scanpy/anndata; not needed for the solver)."""
    spec = importlib.util.find_spec("ggml_ot")
    if spec is None:
        return None
    root = spec.submodule_search_locations[0]
    for name, path in (("ggml_ot", root), ("ggml_ot.distances", os.path.join(root, "distances"))):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [path]
            sys.modules[name] = package
    solvers = importlib.util.spec_from_file_location(
        "ggml_ot.distances._solvers", os.path.join(root, "distances", "_solvers.py"))
    module = importlib.util.module_from_spec(solvers)
    solvers.loader.exec_module(module)
    return module._sinkhorn2_batched_torch


CLOCK = {"wall": time.perf_counter, "cpu": time.thread_time}
clock = CLOCK["wall"]


def best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def make_inputs(path):
    rng = np.random.default_rng(2026)
    data = {}
    with h5py.File(path, "w") as fh:
        for n in EMD_SIZES:
            x, y = rng.normal(size=(n, DIM)), rng.normal(size=(n, DIM))
            fh[f"emd/n{n}/x"], fh[f"emd/n{n}/y"] = x, y
            data[("emd", n)] = (x, y)
        points = rng.normal(size=(2 * BATCH_PROBLEMS * BATCH_N, DIM))
        fh["sinkhorn/batch/points"] = points
        data["batch"] = points.reshape(2 * BATCH_PROBLEMS, BATCH_N, DIM)
        x, y = rng.normal(size=(DENSE_N, DIM)), rng.normal(size=(DENSE_N, DIM))
        fh["sinkhorn/dense/x"], fh["sinkhorn/dense/y"] = x, y
        data["dense"] = (x, y)
    return data


def run_driver(build, name, threads, bench_filter, inputs, repetitions, field):
    exe = os.path.join(build, "perf", name)
    env = dict(os.environ, KOTML_OT_BENCH_INPUT=inputs, OMP_NUM_THREADS=str(threads),
               OMP_PROC_BIND="spread", OMP_PLACES="threads")
    out = subprocess.run([exe, f"--benchmark_filter={bench_filter}", "--benchmark_format=json",
                          f"--benchmark_repetitions={repetitions}"],
                         env=env, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    best = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        key = b["run_name"]
        ms = b[field] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        if key not in best or ms < best[key]["ms"]:
            best[key] = dict(b, ms=ms)
    return report["context"], best


def per_iteration(best, name, iters, domain):
    """domain: 0 = log, 1 = scaling (the second argument of the Sinkhorn drivers)."""
    a, b = (best[f"{name}/{k}/{domain}/real_time"]["ms"] for k in iters)
    return (b - a) / (iters[1] - iters[0])


def pot_sinkhorn_per_iteration(costs, dtype, iters, repeats):
    """POT's sinkhorn_log, one problem after the other, per iteration (ms)."""
    eps = RELATIVE_EPS * float(np.mean([c.mean() for c in costs]))
    prepared = [(np.full(c.shape[0], 1.0 / c.shape[0], dtype=dtype),
                 np.full(c.shape[1], 1.0 / c.shape[1], dtype=dtype), c.astype(dtype)) for c in costs]

    def run(k):
        for a, b, M in prepared:
            ot.sinkhorn(a, b, M, eps, method="sinkhorn_log", numItermax=k, stopThr=0.0, warn=False)
    run(iters[0])  # first touch of numpy's temporaries, untimed
    t = [best_time(lambda k=k: run(k), repeats) for k in iters]
    return (t[1] - t[0]) / (iters[1] - iters[0]) * 1e3


def ggml_per_iteration(solver, costs, dtype, iters, repeats):
    """GGML-OT's batched torch Sinkhorn (scaling domain, ε relative to the batch mean)."""
    M = torch.from_numpy(np.stack(costs).astype(dtype))
    a = torch.full(M.shape[:2], 1.0 / M.shape[1], dtype=M.dtype)
    b = torch.full((M.shape[0], M.shape[2]), 1.0 / M.shape[2], dtype=M.dtype)
    with torch.no_grad():
        solver(a, b, M, reg=RELATIVE_EPS, numItermax=1, stopThr=None)  # warm-up, untimed
        t = [best_time(lambda k=k: solver(a, b, M, reg=RELATIVE_EPS, numItermax=k, stopThr=None), repeats)
             for k in iters]
    return (t[1] - t[0]) / (iters[1] - iters[0]) * 1e3


def fmt_ms(ms):
    return "–" if ms is None else (f"{ms:.3f} ms" if ms < 1 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms")


def ratio(a, b):
    return "–" if a is None or b is None else f"{b / a:.1f}×"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="kotml build directory with perf/bench_ot_*")
    parser.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions; the best is reported")
    parser.add_argument("--skip-peers", action="store_true", help="time kotml only")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="elapsed time, or CPU time of the timing thread (one thread only)")
    args = parser.parse_args()
    global clock
    clock = CLOCK[args.clock]
    field = "real_time" if args.clock == "wall" else "cpu_time"
    threads = [int(t) for t in args.threads.split(",")]
    if args.clock == "cpu" and threads != [1]:
        parser.error("--clock cpu measures one thread; use --threads 1")

    inputs = os.path.join(args.build, "perf", "ot_inputs.h5")
    data = make_inputs(inputs)
    ggml = None if args.skip_peers else load_ggml_batched_sinkhorn()

    print("## ot: kotml vs POT and GGML-OT\n")
    print(f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}")
    print(f"- peers: POT {ot.__version__}, torch {torch.__version__}, numpy {np.__version__}, "
          f"scipy {scipy.__version__}, GGML-OT solver {'found' if ggml else 'not available'}")
    print(f"- clock: {args.clock} ({'elapsed time' if args.clock == 'wall' else 'CPU time of the timing thread'})")
    print(f"- command: {' '.join(sys.argv)}\n")

    emd_costs = {n: cdist(*data[("emd", n)], "sqeuclidean") for n in EMD_SIZES}
    batch_costs = [cdist(data["batch"][2 * u], data["batch"][2 * u + 1]) for u in range(BATCH_PROBLEMS)]
    dense_cost = cdist(*data["dense"])

    # Peers first (single-threaded POT; torch per thread count below).
    pot_emd = {}
    if not args.skip_peers:
        for n in EMD_SIZES:
            w = np.full(n, 1.0 / n)
            pot_emd[n] = best_time(lambda n=n, w=w: ot.emd2(w, w, emd_costs[n], numItermax=10_000_000),
                                   args.repeats) * 1e3

    for t in threads:
        torch.set_num_threads(t)
        context, emd = run_driver(args.build, "bench_ot_emd", t, ".", inputs, args.repeats, field)
        _, sk = run_driver(args.build, "bench_ot_sinkhorn", t, ".", inputs, args.repeats, field)
        print(f"### {t} thread{'s' if t > 1 else ''} "
              f"(kotml: Kokkos {context.get('kokkos_execution_space', '?')}, "
              f"concurrency {context.get('kokkos_concurrency', '?')})\n")

        print("EMD (network simplex), d = 50, squared Euclidean, uniform weights; solve time, cost matrix given\n")
        print("| problem | kotml | POT ot.emd2 (1 thread) | kotml speed-up | kotml pivots |")
        print("|---|---|---|---|---|")
        for n in EMD_SIZES:
            b = emd[f"BM_EmdSingle/{n}/min_time:1.000"]
            print(f"| 1 × {n}×{n} | {fmt_ms(b['ms'])} | {fmt_ms(pot_emd.get(n))} | "
                  f"{ratio(b['ms'], pot_emd.get(n))} | {int(b['pivots'])} |")
        for key, b in emd.items():
            if key.startswith("BM_EmdBatch"):
                count = int(b["problems"])
                n = int(key.split("/")[1])
                print(f"| batch of {count} × {n}×{n} (costs included) | {fmt_ms(b['ms'])} "
                      f"({fmt_ms(b['ms'] / count)} per problem) | – | – | – |")
        print()

        # Rates from the chosen clock: per run, each thread takes 2000 sweeps of
        # 4096 exps, and the read covers 64 Mi doubles (perf/bench_ot_sinkhorn.cpp).
        def rate(key, amount):
            b = sk[key]
            return amount * b["threads"] / (b["ms"] * 1e-3)
        # The exp rate at the best SIMD level the driver measured (it times each
        # level this CPU has: .../simd_level:L/real_time), which the kernels run at.
        def best_level(prefix):
            keys = [k for k in sk if k.startswith(prefix + "/")]
            return max(keys, key=lambda k: int(k.split("simd_level:")[1].split("/")[0]) if "simd_level:" in k else -1)
        exp32 = rate(best_level("BM_ExpThroughput<float>"), 2000 * 4096)
        exp64 = rate(best_level("BM_ExpThroughput<double>"), 2000 * 4096)
        # The read at each stream count the driver measured (.../streams:S/real_time);
        # the roofline takes the fastest, the machine's limit.
        reads = {int(k.split("streams:")[1].split("/")[0]): (64 << 20) * 8 / (sk[k]["ms"] * 1e-3)
                 for k in sk if k.startswith("BM_ReadBandwidth/")}
        bandwidth = max(reads.values())
        read_list = ", ".join(f"{reads[s] / 1e9:.1f} GB/s in {s} stream{'s' if s > 1 else ''}" for s in sorted(reads))
        print(f"Roofline inputs measured by bench_ot_sinkhorn on {t} thread(s): exp {exp32 / 1e9:.2f} G/s (fp32), "
              f"{exp64 / 1e9:.2f} G/s (fp64); streaming read {read_list} (the roofline takes "
              f"{bandwidth / 1e9:.1f} GB/s)\n")
        print("Sinkhorn, time per iteration (one f- and one g-update), ε = 0.5 × mean cost, Euclidean cost. "
              "Log domain: one exp and one cost read per entry and half-step; scaling domain: one read of "
              "the stored kernel per entry and iteration (both half-steps from one pass), no exp.\n")
        print("| problem | precision | domain | kotml | POT sinkhorn_log | GGML-OT torch (scaling domain) | "
              "vs POT | vs GGML-OT | roofline | kotml / roofline |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        cases = (("64 × 250×250", "BM_SinkhornBatch", BATCH_ITERS, batch_costs),
                 ("1 × 5000×5000", "BM_SinkhornDense", DENSE_ITERS, [dense_cost]))
        for label, bench, iters, costs in cases:
            entries = 2 * sum(c.size for c in costs)
            for dtype, name, rate, size in ((np.float32, "float", exp32, 4), (np.float64, "double", exp64, 8)):
                pot = None if args.skip_peers else pot_sinkhorn_per_iteration(
                    costs, dtype, (1, 4) if len(costs) == 1 else (2, 6), 2 if len(costs) == 1 else args.repeats)
                torch_ms = None if ggml is None else ggml_per_iteration(
                    ggml, costs, dtype, DENSE_ITERS if len(costs) == 1 else BATCH_ITERS, args.repeats)
                for domain, domain_name in ((0, "log"), (1, "scaling")):
                    ours = per_iteration(sk, f"{bench}<{name}>", iters, domain)
                    if domain == 0:
                        roof = max(entries / rate, entries * size / bandwidth) * 1e3
                    else:
                        roof = entries / 2 * size / bandwidth * 1e3
                    print(f"| {label} | fp{8 * size} | {domain_name} | {fmt_ms(ours)} | {fmt_ms(pot)} | "
                          f"{fmt_ms(torch_ms)} | {ratio(ours, pot)} | {ratio(ours, torch_ms)} | {fmt_ms(roof)} | "
                          f"{100 * roof / ours:.0f}% |")
        print()


if __name__ == "__main__":
    main()
