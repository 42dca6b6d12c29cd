"""kotml's graph and GW commands side by side with their peers, on the same inputs.

Run through perf/gw/run_comparison.sh BUILD_DIR [options] (it provides the
Python environment), or directly:
    python perf/gw/compare_gw.py --build build-graph-k4rel --threads 1,2

Sections (--only apsp,gw,snare; default all):
  apsp   all-pairs shortest paths on the k=5 kNN graphs of a 5000-point spiral
         and Swiss roll: scipy.sparse.csgraph.dijkstra(directed=False) (one
         thread, in memory) against `kotml apsp` (end to end: read graph,
         Dijkstra, write HDF5) and the in-memory kernel (bench_graph_gw), both
         at each thread count; results checked equal.
  gw     TorchGW's two benchmark problems, spiral → Swiss roll from TorchGW's own
         generator: 400×500 precomputed (its test settings) and 4000×5000 landmark
         with mixed precision (its scale-benchmark settings). torchgw.sampled_gw
         on CPU (torch.set_num_threads) against `kotml gw`, wall time end to end
         (graphs included) and |Spearman ρ| of the matched angles.
  snare  SNARE-seq (same cells in both modalities, true matching = identity):
         RNA PCs → ATAC topics from ../shared/data, rows L2-normalised (SCOT's
         preprocessing), precomputed mode; FOSCTTM of both tools' plans.
Every timing is the median of --repeats runs (GW 4000×5000 and SNARE: one run).
Prints one table per section, naming the machine.
"""
import argparse
import json
import os
import pathlib
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from machine import describe_machine  # noqa: E402

import h5py
import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra
from scipy.stats import spearmanr

ROOT = pathlib.Path(__file__).resolve().parents[2]


def curve(n, seed, roll, dtype=np.float64):
    """TorchGW's generator (tests/test_spiral_swissroll.py)."""
    rng = np.random.default_rng(seed)
    r = np.linspace(0.3, 1.0, n)
    theta = np.linspace(0, 9, n)
    e = rng.normal(size=(2, n)) * 0.05
    x = (r + e[0]) * np.cos(theta)
    y = (r + e[1]) * np.sin(theta)
    if roll:
        z = 0.1 * rng.uniform(size=n) * 10
        return np.stack([x, z, y], axis=1).astype(dtype), theta
    return np.stack([x, y], axis=1).astype(dtype), theta


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, threads, env_extra=None, cpu=None):
    """Runs a kotml command; returns (wall s, stdout). With a list `cpu`, appends
    the child's CPU seconds (user + system, all threads)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false",
               OPENBLAS_NUM_THREADS=str(threads), KOKKOS_DISABLE_WARNINGS="1")
    env.update(env_extra or {})
    c0 = children_cpu()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(children_cpu() - c0)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{out.stderr}")
    return wall, out.stdout


def median_time(fn, repeats, cpu=None):
    """Median wall time of fn() (and, with a list `cpu`, median CPU seconds of
    this process, all threads), and fn's last result."""
    times, cpus, result = [], [], None
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    if cpu is not None:
        cpu.append(float(np.median(cpus)))
    return float(np.median(times)), result


def table(title, header, rows):
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


# ---------------------------------------------------------------------- apsp
def section_apsp(args, kotml, bench, work):
    rows = []
    for name, (points, _) in {"spiral": curve(args.apsp_n, 0, False),
                              "swiss roll": curve(args.apsp_n, 1, True)}.items():
        cloud = work / "apsp_cloud.h5"
        with h5py.File(cloud, "w") as f:
            f["x"] = points
        graph = work / "apsp_graph.h5"
        run([kotml, "knn-graph", cloud, "-o", graph, "--k", "5"], 1)
        with h5py.File(graph) as f:
            g = f["graph"]
            G = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]),
                              shape=tuple(g.attrs["shape"]))
        cpu_scipy = []
        t_scipy, D = median_time(lambda: dijkstra(G, directed=False), args.repeats, cpu_scipy)
        for threads in args.threads:
            out = work / "apsp_d.h5"
            times, cpus = [], []
            for _ in range(args.repeats):
                wall, stdout = run([kotml, "apsp", graph, "-o", out, "--precision", "float64"], threads,
                                   cpu=cpus)
                inner = float(re.search(r" in ([0-9.eE+-]+) s", stdout).group(1))
                times.append((wall, inner))
            wall = float(np.median([t[0] for t in times]))
            inner = float(np.median([t[1] for t in times]))
            with h5py.File(out) as f:
                diff = float(np.abs(f["distances"][:] - D).max())
            kernel = kernel_cpu = float("nan")
            if bench:
                _, stdout = run([bench, "--benchmark_filter=BM_AllPairsDijkstra",
                                 "--benchmark_format=json", f"--benchmark_repetitions={args.repeats}",
                                 "--benchmark_report_aggregates_only=true"], threads)
                report = json.loads(stdout)
                median = [b for b in report["benchmarks"] if b.get("aggregate_name") == "median"][0]
                kernel = median["real_time"] / 1000.0
                kernel_cpu = median["cpu_time"] / 1000.0
            rows.append([name, G.shape[0], G.nnz // 2, f"{t_scipy:.2f}", f"{cpu_scipy[0]:.2f}", threads,
                         f"{kernel:.2f}", f"{kernel_cpu:.2f}", f"{inner:.2f}", f"{wall:.2f}",
                         f"{float(np.median(cpus)):.2f}", f"{t_scipy / kernel:.1f}x",
                         f"{t_scipy / inner:.1f}x", f"{diff:.1e}"])
    table(f"All-pairs Dijkstra, k=5 kNN graphs ({describe_machine()}, scipy {scipy.__version__})",
          ["graph", "nodes", "edges", "scipy wall s", "scipy cpu s", "threads", "kotml kernel wall s",
           "kotml kernel cpu s", "kotml apsp s", "kotml process wall s", "kotml process cpu s",
           "kernel speed-up (wall)", "apsp speed-up (wall)", "max |diff|"], rows)


# ------------------------------------------------------------------------ gw
def torchgw_run(X, Y, threads, **kw):
    import torch
    from torchgw import sampled_gw
    torch.set_num_threads(threads)
    T, log = sampled_gw(X, Y, device=torch.device("cpu"), log=True, **kw)
    return T.numpy(), log


def kotml_gw(kotml, pair, out, threads, opts, plan=False):
    cmd = [kotml, "gw", pair, "-o", out] + opts + (["--plan", "dense"] if plan else [])
    cpu = []
    wall, stdout = run(cmd, threads, cpu=cpu)
    with h5py.File(out) as f:
        match = f["match"][:]
        iters = int(f["iterations"][()])
        T = f["plan"][:] if plan else None
        config = json.loads(f.attrs["kotml_config"])
    # What torchgw's timing covers (graphs, distances, iterations), without the
    # process start (MPI and Kokkos initialisation) and the file I/O.
    inside = float(config["seconds_setup"]) + float(config["seconds_solve"])
    return wall, match, iters, T, cpu[0], inside


def section_gw(args, kotml, work):
    problems = [
        ("400x500 precomputed", 400, 500, dict(distance_mode="precomputed", k=5, M=80, alpha=0.8,
                                               epsilon=0.005, max_iter=300, s_shared=400),
         ["--mode", "precomputed", "--k", "5", "--M", "80", "--alpha", "0.8", "--epsilon", "0.005",
          "--max-iter", "300", "--s-shared", "400"], args.repeats),
        ("4000x5000 landmark fp32", 4000, 5000, dict(distance_mode="landmark", k=5, M=80,
                                                     epsilon=0.005, max_iter=300, mixed_precision=True),
         ["--mode", "landmark", "--k", "5", "--M", "80", "--epsilon", "0.005", "--max-iter", "300",
          "--mixed-precision"], 1),
    ]
    rows = []
    for name, n, k, tgw_kw, kotml_opts, repeats in problems:
        if args.gw_sizes and name.split()[0] not in args.gw_sizes:
            continue
        X, tx = curve(n, 0, False, np.float32)
        Y, ty = curve(k, 1, True, np.float32)
        pair = work / "gw_pair.h5"
        with h5py.File(pair, "w") as f:
            f["x"] = X
            f["y"] = Y
        for threads in args.threads:
            cpu_tgw = []
            t_tgw, (T, log) = median_time(lambda: torchgw_run(X, Y, threads, **tgw_kw), repeats, cpu_tgw)
            rho_tgw = abs(spearmanr(tx, ty[T.argmax(1)])[0])
            runs = [kotml_gw(kotml, pair, work / "gw_out.h5", threads, kotml_opts) for _ in range(repeats)]
            t_kotml = float(np.median([r[0] for r in runs]))
            t_inside = float(np.median([r[5] for r in runs]))
            c_kotml = float(np.median([r[4] for r in runs]))
            rho_kotml = abs(spearmanr(tx, ty[runs[-1][1]])[0])
            it_tgw, it_kotml = log["n_iter"], runs[-1][2]
            rows.append([name, threads, f"{t_tgw:.2f}", f"{cpu_tgw[0]:.1f}", it_tgw, f"{rho_tgw:.4f}",
                         f"{t_kotml:.2f}", f"{t_inside:.2f}", f"{c_kotml:.1f}", it_kotml, f"{rho_kotml:.4f}",
                         f"{t_tgw / t_kotml:.1f}x", f"{t_tgw / t_inside:.1f}x",
                         f"{(t_tgw / it_tgw) / (t_inside / it_kotml):.1f}x"])
    table(f"Sampled GW, spiral → Swiss roll ({describe_machine()})",
          ["problem", "threads", "torchgw s", "torchgw cpu s", "torchgw iters", "torchgw |rho|",
           "kotml process wall s", "kotml setup+solve s", "kotml cpu s", "kotml iters", "kotml |rho|",
           "speed-up (process)", "speed-up (setup+solve)", "speed-up per iteration"], rows)


# --------------------------------------------------------------------- snare
def foscttm(x1, x2):
    """SCOT's domain-averaged FOSCTTM: for each sample, the fraction of the other
    domain's samples closer to it than its true match; averaged over both ways."""
    from sklearn.metrics import pairwise_distances
    d = pairwise_distances(x1, x2)
    true = np.diag(d)
    a = (d < true[:, None]).mean(axis=1)
    b = (d < true[None, :]).mean(axis=0)
    return float((a.mean() + b.mean()) / 2)


def barycentric(T, Y):
    return (T @ Y) / np.maximum(T.sum(axis=1, keepdims=True), 1e-300)


def section_snare(args, kotml, work):
    data = pathlib.Path(args.data)
    with h5py.File(data / "snareseq_rna.h5ad") as f:
        rna = f["X"][:].astype(np.float64)
    with h5py.File(data / "snareseq_atac.h5ad") as f:
        atac = f["X"][:].astype(np.float64)
    rna /= np.linalg.norm(rna, axis=1, keepdims=True)
    atac /= np.linalg.norm(atac, axis=1, keepdims=True)
    n = rna.shape[0]
    m = min(n, max(1000, 3 * n // 4))  # TorchGW-bench's rule for single-cell data
    pair = work / "snare_pair.h5"
    with h5py.File(pair, "w") as f:
        f["x"] = rna
        f["y"] = atac
    rows = []
    for threads in args.threads:
        t_tgw, (T, log) = median_time(
            lambda: torchgw_run(rna, atac, threads, distance_mode="precomputed", k=args.snare_k, M=m,
                                epsilon=args.snare_epsilon), 1)
        f_tgw = foscttm(barycentric(T, atac), atac)
        wall, match, iters, Tk, _, _ = kotml_gw(kotml, pair, work / "snare_out.h5", threads,
                                          ["--mode", "precomputed", "--k", str(args.snare_k), "--M",
                                           str(m), "--epsilon", str(args.snare_epsilon)], plan=True)
        f_kotml = foscttm(barycentric(Tk, atac), atac)
        rows.append([threads, args.snare_k, m, args.snare_epsilon, f"{t_tgw:.2f}", log["n_iter"],
                     f"{f_tgw:.4f}", f"{wall:.2f}", iters, f"{f_kotml:.4f}"])
    table(f"SNARE-seq RNA → ATAC, {n} cells, FOSCTTM (lower is better; random ≈ 0.5) ({describe_machine()})",
          ["threads", "k", "M", "epsilon", "torchgw s", "torchgw iters", "torchgw FOSCTTM",
           "kotml s", "kotml iters", "kotml FOSCTTM"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="build folder with src/kotml (and perf/bench_graph_gw)")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="apsp,gw,snare")
    parser.add_argument("--apsp-n", type=int, default=5000)
    parser.add_argument("--gw-sizes", default="", help="subset of 400x500,4000x5000")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--snare-k", type=int, default=30)
    parser.add_argument("--snare-epsilon", type=float, default=1e-3)
    args = parser.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    args.gw_sizes = [s for s in args.gw_sizes.split(",") if s]
    build = pathlib.Path(args.build).resolve()
    kotml = build / "src" / "kotml"
    bench = build / "perf" / "bench_graph_gw"
    if not kotml.exists():
        sys.exit(f"no kotml executable at {kotml}")
    sections = args.only.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        if "apsp" in sections:
            section_apsp(args, kotml, bench if bench.exists() else None, work)
        if "gw" in sections:
            section_gw(args, kotml, work)
        if "snare" in sections:
            section_snare(args, kotml, work)


if __name__ == "__main__":
    main()
