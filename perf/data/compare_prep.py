"""Side-by-side timing of `kotml prep` and scanpy's standard preprocessing on the
same .h5ad files, file to file:

    kotml prep IN -o OUT --n-top-genes H --n-comps K
    scanpy: read_h5ad, layers["counts"] = X.copy(), pp.normalize_total(target_sum=1e4),
            pp.log1p, pp.highly_variable_genes(n_top_genes=H), pp.pca(n_comps=K),
            write_h5ad

Both files hold the same content: kotml keeps the input counts as layers/counts
unless told otherwise, and scanpy's tutorials keep them the same way, so scanpy
does too here (--scanpy-counts-layer no drops it from scanpy's side only).

Run it through perf/data/run_comparison.sh (which provides the Python
environment). Inputs: ../shared/data/glioblastoma_lemur.h5ad when present, and
scrna cohorts made by `kotml simulate` (sizes below). Each measurement is the
median wall and CPU time (user + system, of the process and its children) of
--repeats runs; both tools use the same number of threads
(OMP_NUM_THREADS for kotml's OpenMP build, NUMBA/OPENBLAS/OMP threads for
scanpy). The table also reports whether the HVG sets agree and the largest
principal angle between the first min(20, K) components, and each tool's largest
angle to the exact components (float64 eigendecomposition of the centred HVG
covariance, computed here), which tells whose error the first angle is.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from machine import describe_machine  # noqa: E402

sys.modules["zarr"] = None  # anndata 0.11.4 refuses zarr >= 3; no zarr is used here


def threads_argument(argv):
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "1"


# Thread counts reach numba and OpenBLAS only if they are in the environment
# before those load: set later, numba refused to start its pool a second time.
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
for _variable in THREAD_VARIABLES:
    os.environ[_variable] = threads_argument(sys.argv)

import anndata as ad  # noqa: E402
import numpy as np  # noqa: E402
import scanpy as sc  # noqa: E402
import scipy.linalg  # noqa: E402


def scanpy_prep(src, dst, n_top, n_comps, counts_layer):
    a = ad.read_h5ad(src)
    if counts_layer:
        a.layers["counts"] = a.X.copy()
    sc.pp.normalize_total(a, target_sum=1e4)
    sc.pp.log1p(a)
    sc.pp.highly_variable_genes(a, n_top_genes=n_top)
    sc.pp.pca(a, n_comps=n_comps)
    a.write_h5ad(dst)


def exact_components(a, k):
    """The first k principal axes of the HVG columns of a's X, in float64, full length."""
    hv = a.var["highly_variable"].to_numpy()
    x = a.X[:, hv].astype(np.float64).toarray()
    x -= x.mean(axis=0)
    _, vectors = np.linalg.eigh(x.T @ x)
    full = np.zeros((a.n_vars, k))
    full[hv] = vectors[:, ::-1][:, :k]
    return full


def cpu_seconds():
    # This process plus finished children (the kotml runs).
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn, repeats):
    """Median wall and CPU seconds of repeats runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    return statistics.median(walls), statistics.median(cpus)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True, help="build directory with src/kotml")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--scanpy-counts-layer", choices=("yes", "no"), default="yes",
                   help="scanpy keeps the counts as layers/counts, as kotml does by default")
    p.add_argument("--shared-data", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
    args = p.parse_args()
    kotml = os.path.abspath(os.path.join(args.build, "src", "kotml"))
    threads = str(args.threads)
    if any(os.environ[variable] != threads for variable in THREAD_VARIABLES):
        raise SystemExit("compare_prep.py: thread variables differ from --threads")
    env = dict(os.environ, OMP_NUM_THREADS=threads, OMP_PROC_BIND="false")

    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        glio = os.path.join(args.shared_data, "glioblastoma_lemur.h5ad")
        if os.path.exists(glio):
            cases.append(("glioblastoma 5000x300", glio, 200, 50))
        for donors, cells, genes, top in ((30, 250, 1000, 500), (60, 500, 2000, 1000)):
            path = os.path.join(tmp, f"scrna_{donors}_{cells}_{genes}.h5ad")
            subprocess.run([kotml, "simulate", "--kind", "scrna", "--donors-per-class", str(donors),
                            "--cells-per-donor", str(cells), "--n-genes", str(genes), "-o", path],
                           check=True, capture_output=True, env=env)
            cases.append((f"scrna {2 * donors * cells}x{genes}", path, top, 50))

        print(f"machine: {describe_machine()}; threads per tool: {threads}; median of {args.repeats} runs")
        print("| input | HVG | PCs | kotml wall (s) | scanpy wall (s) | scanpy/kotml wall | kotml CPU (s) | scanpy CPU (s) "
              "| same HVG set | max angle, first 20 PCs (rad) | kotml to exact | scanpy to exact |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, path, top, comps in cases:
            ours, theirs = os.path.join(tmp, "kotml.h5ad"), os.path.join(tmp, "scanpy.h5ad")
            cmd = [kotml, "prep", path, "-o", ours, "--n-top-genes", str(top), "--n-comps", str(comps)]
            t_kotml = timed(lambda: subprocess.run(cmd, check=True, capture_output=True, env=env), args.repeats)
            t_scanpy = timed(lambda: scanpy_prep(path, theirs, top, comps, args.scanpy_counts_layer == "yes"),
                             args.repeats)
            a, b = ad.read_h5ad(ours), ad.read_h5ad(theirs)
            same = bool((a.var["highly_variable"].to_numpy() == b.var["highly_variable"].to_numpy()).all())
            k = min(20, comps)
            angle = float(scipy.linalg.subspace_angles(a.varm["PCs"][:, :k], b.varm["PCs"][:, :k]).max())
            exact = exact_components(b, k)
            ours_exact = float(scipy.linalg.subspace_angles(a.varm["PCs"][:, :k], exact).max())
            theirs_exact = float(scipy.linalg.subspace_angles(b.varm["PCs"][:, :k], exact).max())
            print(f"| {name} | {top} | {comps} | {t_kotml[0]:.2f} | {t_scanpy[0]:.2f} | {t_scanpy[0] / t_kotml[0]:.2f} | "
                  f"{t_kotml[1]:.2f} | {t_scanpy[1]:.2f} | {'yes' if same else 'no'} | {angle:.1e} | {ours_exact:.1e} | {theirs_exact:.1e} |")


if __name__ == "__main__":
    main()
