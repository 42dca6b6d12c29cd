"""Side-by-side timing of kotml's AnnData reader (perf/bench_io.cpp) and
anndata 0.11 / h5py on the same .h5ad file, written here by anndata:

  cells x 2000 genes, 60 non-zeros per cell, CSR float32 X, an obs column
  'donor' with 100 donors whose cells lie in 20 blocks of 50 rows spread over
  the file (the layout bench_io.cpp writes for itself).

Operations (median wall time over --repeats; kotml's from Google Benchmark's
real_time on the same file):

  one donor, CSR     kotml read_csr_rows<float>  h5py: the whole indptr, then one slice of
                                                 indices and data per run of consecutive rows
                                                 (what anndata's backed mode does)
  one donor, dense   kotml read_rows<float>      the same + toarray()
  whole X as CSR     kotml read_csr<float>       anndata read_elem(f["X"])
  donor labels       kotml obs("donor")          anndata read_elem(f["obs/donor"]).astype(str)

(anndata 0.11.4's own backed row indexing fails with scipy >= 1.15:
'backed_csr_matrix' has no '_validate_indices'; hence the h5py peer.)

--compression gzip writes X (and obs) gzip-compressed, as anndata's
write_h5ad(compression="gzip") and most shared .h5ad files do; --threads N runs
bench_io with OMP_NUM_THREADS=N (an OpenMP build inflates chunks on N threads;
h5py inflates on one).

Run it through perf/io/run_comparison.sh BUILD_DIR (which provides the Python
environment); BUILD_DIR must hold perf/bench_io.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.modules["zarr"] = None  # anndata 0.11.4 refuses zarr >= 3; no zarr is used here

import anndata as ad  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import scipy.sparse as sp  # noqa: E402

GENES, PER_CELL, DONORS, BLOCK = 2000, 60, 100, 50


def write_cohort(path: Path, cells: int, compression):
    rng = np.random.default_rng(1)
    starts = rng.integers(0, GENES, size=cells)
    strides = rng.integers(1, 32, size=cells)
    cols = (starts[:, None] + np.arange(PER_CELL)[None, :] * strides[:, None]) % GENES
    cols.sort(axis=1)
    data = rng.integers(1, 21, size=cells * PER_CELL).astype(np.float32)
    x = sp.csr_matrix((data, cols.ravel(), np.arange(cells + 1) * PER_CELL), shape=(cells, GENES))
    donor = pd.Categorical.from_codes((np.arange(cells) // BLOCK) % DONORS,
                                      [f"donor{d}" for d in range(DONORS)])
    ad.AnnData(x, obs=pd.DataFrame({"donor": donor}, index=[f"c{i}" for i in range(cells)])).write_h5ad(
        path, compression=compression)
    return [np.flatnonzero(donor.codes == d) for d in range(DONORS)]


def median_ms(action, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        action()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def h5py_rows(f, rows):
    """CSR rows from an anndata CSR group with h5py slices, run by run."""
    indptr = f["X/indptr"][:]
    data, indices = f["X/data"], f["X/indices"]
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    parts_data, parts_indices, lengths = [], [], []
    for run in np.split(rows, breaks):
        lo, hi = indptr[run[0]], indptr[run[-1] + 1]
        parts_data.append(data[lo:hi])
        parts_indices.append(indices[lo:hi])
        lengths.append(np.diff(indptr[run[0]:run[-1] + 2]))
    new_indptr = np.concatenate([[0], np.cumsum(np.concatenate(lengths))])
    return sp.csr_matrix((np.concatenate(parts_data), np.concatenate(parts_indices), new_indptr),
                         shape=(len(rows), f["X"].attrs["shape"][1]))


def anndata_times(path: Path, donors, repeats):
    counter = iter(range(10 ** 9))

    def donor_rows():
        return donors[next(counter) % len(donors)]

    with h5py.File(path, "r") as f:
        out = {
            "one donor, dense": median_ms(lambda: h5py_rows(f, donor_rows()).toarray(), repeats),
            "one donor, CSR": median_ms(lambda: h5py_rows(f, donor_rows()), repeats),
        }
        out["whole X as CSR"] = median_ms(lambda: ad.io.read_elem(f["X"]), max(3, repeats // 10))
        out["donor labels"] = median_ms(lambda: np.asarray(ad.io.read_elem(f["obs/donor"])).astype(str), repeats)
    return out


def kotml_times(build: Path, path: Path, threads: int):
    binary = build / "perf" / "bench_io"
    env = dict(os.environ, KOTML_BENCH_IO_FILE=str(path), OMP_NUM_THREADS=str(threads),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    result = subprocess.run(
        [str(binary), "--benchmark_filter=BM_DonorRows|BM_WholeMatrixCsr|BM_ObsLabels",
         "--benchmark_format=json", "--benchmark_repetitions=5",
         "--benchmark_report_aggregates_only=true"],
        check=True, env=env, capture_output=True, text=True)
    report = json.loads(result.stdout)
    names = {"BM_DonorRowsDense": "one donor, dense", "BM_DonorRowsCsr": "one donor, CSR",
             "BM_WholeMatrixCsr": "whole X as CSR", "BM_ObsLabels": "donor labels"}
    out = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name") == "median" and b["run_name"] in names:
            scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6}[b["time_unit"]]
            out[names[b["run_name"]]] = b["real_time"] * scale
    return out, report["context"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--cells", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--compression", choices=("none", "gzip"), default="none")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS for bench_io")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cohort.h5ad"
        donors = write_cohort(path, args.cells, None if args.compression == "none" else args.compression)
        kotml, context = kotml_times(args.build, path, args.threads)
        peer = anndata_times(path, donors, args.repeats)
    print(f"machine: {platform.node()}, {context.get('cpu_model', '?')}, "
          f"{context.get('num_cpus', '?')} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"file: {args.cells} cells x {GENES} genes, {args.cells * PER_CELL} non-zeros (CSR float32), "
          f"{DONORS} donors of {args.cells // DONORS} cells, compression {args.compression}; "
          f"kotml on {args.threads} thread(s); anndata {ad.__version__}, h5py {h5py.__version__}")
    print(f"{'operation':18s} {'kotml ms':>10s} {'peer ms':>11s} {'peer/kotml':>14s}")
    for name in ("one donor, dense", "one donor, CSR", "whole X as CSR", "donor labels"):
        print(f"{name:18s} {kotml[name]:10.2f} {peer[name]:11.2f} {peer[name] / kotml[name]:14.1f}")


if __name__ == "__main__":
    main()
