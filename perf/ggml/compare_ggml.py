#!/usr/bin/env python3
"""kotml train-test against GGML-OT 0.9.94's train_test on the same cohorts,
the same donor splits and the same machine.

    perf/ggml/run_comparison.sh BUILD_DIR [--epochs 5] [--skip-ggml] [--cases toy2d-emd,...]

BUILD_DIR holds a kotml build (BUILD_DIR/src/kotml). What it does:
  1. writes the inputs once with kotml itself, into BUILD_DIR/perf/ggml/:
     toy2d.h5ad (kotml simulate --kind toy2d: 3 classes x 10 donors x 300 cells,
     2-D) and scrna60.h5ad (kotml simulate --kind scrna: 2 classes x 30 donors x
     250 cells x 1000 genes, then kotml prep --no-hvg: normalize_total + log1p);
  2. per case (cohort x solver) runs `kotml train-test` on 1 and 2 MPI ranks, then
     GGML-OT's train_test on the very donor splits kotml used (read back from
     results.h5), the same cells (every cell of every donor), the same options
     (epochs, n_comps, normalize, entropic_reg) and no early stop on either side
     (kotml --stop-thr 0, GGML-OT stop_thr=None), so both run the same epochs;
     The scrna100 cases (asked for with --cases) are issue 14's every-cell check:
     kotml simulate --kind scrna, 2 classes x 50 donors x 1000 cells, kotml prep
     --no-hvg --n-comps 50, trained on obsm X_pca with every cell (GGML-OT's
     n_cells=1000, which is every cell too), and scrna100x500 the same with 500
     cells per donor;
  3. mode batches: kotml --mode batches on scrna (EMD) for per-rank batch sizes
     and 1 or 2 ranks with --lr-scaling linear: global batch, epoch time and the
     held-out triplet loss (test_loss of metrics.csv);
  4. prints markdown tables naming the machine, with each kotml rank's peak
     resident memory (/usr/bin/time around every rank) and GGML-OT's (VmHWM of
     the process that trained and evaluated).

--batch-size N gives both tools stratified mini-batches of N donors in pairs
mode (kotml --batch-size, GGML-OT batch_size; both samplers give each class
max(1, round(N·n_c/donors)) donors per batch), so an epoch is several optimiser
steps on each side. Without it both train on one full batch per epoch (their
defaults). GGML-OT keeps the autograd graph of every pair of a batch until the
backward pass, so its memory grows with the pairs of one batch: at 1000 cells
per donor the full batch of 60 training donors passed 23 GB.

Timing: epoch time is the wall time of the batch loop (both tools measure the
same thing: triplets, OT solves, gradient, Adam step), mean over epochs and
splits. Because the machine may be shared, the CPU time per epoch is reported
too (kotml: largest over ranks, from metrics.csv; GGML-OT: process time of
train() divided by its epochs). GGML-OT runs with settings.n_threads = 1
(torch and POT on one thread) next to kotml on one rank; the 2-rank column is
kotml's strong scaling on the same work.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from machine import describe_machine  # noqa: E402

_find_spec = importlib.util.find_spec


def _find_spec_without_zarr(name, package=None):
    # anndata 0.11 refuses zarr >= 3; nothing here needs zarr.
    if name == "zarr" or name.startswith("zarr."):
        return None
    return _find_spec(name, package)


importlib.util.find_spec = _find_spec_without_zarr

import h5py  # noqa: E402
import numpy as np  # noqa: E402

CASES = {
    # name: (input, n_cells, normalize, n_comps, n_splits, entropic_reg, use_rep)
    "toy2d-emd": ("toy2d.h5ad", 300, False, 2, 3, 0.0, None),
    "toy2d-sinkhorn": ("toy2d.h5ad", 300, False, 2, 3, 0.5, None),
    "scrna-emd": ("scrna60.h5ad", 250, True, 5, 2, 0.0, None),
    "scrna-sinkhorn": ("scrna60.h5ad", 250, True, 5, 2, 0.5, None),
    # Every cell (issue 14): 100 donors x 1000 cells, 50 PCs; GGML-OT with
    # n_cells=1000 takes every cell too. Not in the default list (tens of
    # minutes for GGML-OT); ask with --cases.
    "scrna100-emd": ("scrna100.h5ad", 1000, False, 5, 1, 0.0, "X_pca"),
    "scrna100-sinkhorn": ("scrna100.h5ad", 1000, False, 5, 1, 0.5, "X_pca"),
    # The same design at 500 cells per donor (every cell): GGML-OT's train_test
    # on 1000 cells per donor was killed by the OOM killer at 23.8 GB resident
    # on a 23 GB machine (2026-11-26).
    "scrna100x500-emd": ("scrna100x500.h5ad", 500, False, 5, 1, 0.0, "X_pca"),
    "scrna100x500-sinkhorn": ("scrna100x500.h5ad", 500, False, 5, 1, 0.5, "X_pca"),
}
DEFAULT_CASES = ["toy2d-emd", "toy2d-sinkhorn", "scrna-emd", "scrna-sinkhorn"]
# A GGML-OT row that was not measured (not asked for, or killed).
NO_RESULT = {"knn": float("nan"), "wall": float("nan"), "cpu": float("nan"), "peak_mb": float("nan"), "note": ""}


def run(cmd, **kw):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout, time.time() - t


def make_inputs(kotml, folder):
    os.makedirs(folder, exist_ok=True)
    toy = os.path.join(folder, "toy2d.h5ad")
    if not os.path.exists(toy):
        run([kotml, "simulate", "--kind", "toy2d", "-o", toy])
    scrna = os.path.join(folder, "scrna60.h5ad")
    if not os.path.exists(scrna):
        counts = os.path.join(folder, "scrna60_counts.h5ad")
        run([kotml, "simulate", "--kind", "scrna", "--n-classes", "2", "--donors-per-class", "30",
             "--cells-per-donor", "250", "--n-genes", "1000", "-o", counts])
        run([kotml, "prep", counts, "-o", scrna, "--no-hvg", "--n-comps", "10"])


def make_every_cell_input(kotml, folder, name):
    cells = {"scrna100.h5ad": 1000, "scrna100x500.h5ad": 500}[name]
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        counts = os.path.join(folder, name.replace(".h5ad", "_counts.h5ad"))
        run([kotml, "simulate", "--kind", "scrna", "--n-classes", "2", "--donors-per-class", "50",
             "--cells-per-donor", str(cells), "--n-genes", "1000", "-o", counts])
        run([kotml, "prep", counts, "-o", path, "--no-hvg", "--n-comps", "50"])


def mpirun(ranks):
    if ranks == 1:
        return []
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"]


def kotml_train_test(kotml, path, case, epochs, ranks, out, extra=()):
    _, n_cells, normalize, n_comps, n_splits, reg, use_rep = CASES[case]
    # Each rank runs under /usr/bin/time: its peak resident memory.
    cmd = mpirun(ranks) + ["/usr/bin/time", "-f", "kotml-peak-rss-kb %M",
                           kotml, "train-test", path, "--n-cells", str(n_cells), "--n-comps", str(n_comps),
                           "--n-splits", str(n_splits), "--epochs", str(epochs), "--stop-thr", "0",
                           "--entropic-reg", str(reg), "--out", out, *extra]
    if normalize:
        cmd.append("--normalize")
    if use_rep:
        cmd += ["--use-rep", use_rep]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    peak_mb = [int(line.split()[1]) / 1024 for line in r.stderr.splitlines() if line.startswith("kotml-peak-rss-kb ")]
    summary = json.load(open(os.path.join(out, "summary.json")))
    with h5py.File(os.path.join(out, "results.h5")) as f:
        splits = [(list(f[f"splits/{s}/train_donors"].asstr()[()]), list(f[f"splits/{s}/test_donors"].asstr()[()]))
                  for s in range(n_splits)]
        cpu = float(np.mean(f["metrics/epoch_cpu_s"][()]))
        test_loss = float(np.mean(f["metrics/test_loss"][()]))
    return {"knn": summary["knn_acc"]["mean"], "ari": summary["ari"]["mean"], "wall": summary["epoch_time_s"]["mean"],
            "cpu": cpu, "test_loss": test_loss, "splits": splits, "peak_mb": max(peak_mb) if peak_mb else float("nan")}


def ggml_train_test(path, case, epochs, splits, threads, batch_size=None):
    import anndata
    import ggml_ot
    import ggml_ot.benchmark.evaluation as evaluation

    _, n_cells, normalize, n_comps, n_splits, reg, use_rep = CASES[case]
    # torch's intra-op pool and POT's OpenMP network simplex (numThreads) both
    # follow this setting.
    ggml_ot.settings.n_threads = threads
    adata = anndata.read_h5ad(path)
    dataset = ggml_ot.from_anndata(adata, patient_col="sample", label_col="patient_group", n_cells=n_cells,
                                   use_rep=use_rep)
    if normalize:
        dataset.normalize()
    patients = list(np.unique(adata.obs["sample"].astype(str)))
    index = {p: i for i, p in enumerate(patients)}
    ours = [(np.array([index[d] for d in train]), np.array([index[d] for d in test])) for train, test in splits]
    dataset._train_test_split = lambda *args, **kwargs: ours

    cpu_per_epoch = []
    original_train = evaluation.train

    def timed_train(*args, **kwargs):
        start = time.process_time()
        result = original_train(*args, **kwargs)
        cpu_per_epoch.append((time.process_time() - start) / epochs)
        return result

    evaluation.train = timed_train
    try:
        kwargs = dict(n_comps=n_comps, max_iter=epochs, stop_thr=None)
        if reg > 0:
            kwargs["entropic_reg"] = reg
        if batch_size:
            kwargs["batch_size"] = batch_size
        _, df = ggml_ot.train_test(dataset, n_splits=n_splits, train_size=0.6, scoring=("knn", "mi", "ari", "vi"),
                                   plot_split=False, plot_type=False, print_table=False, **kwargs)
    finally:
        evaluation.train = original_train
    return {"knn": float(df[("knn", "mean")].iloc[0]), "ari": float(df[("ari", "mean")].iloc[0]),
            "wall": float(df[("epoch_time(s)", "mean")].iloc[0]), "cpu": float(np.mean(cpu_per_epoch)),
            "peak_mb": peak_resident_mb()}


def peak_resident_mb():
    """This process's peak resident memory (VmHWM), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def ggml_isolated(path, case, epochs, splits, threads, batch_size=None):
    """ggml_train_test in a forked child, so that GGML-OT killed for memory
    (the kernel's OOM killer sends SIGKILL) is reported, not fatal."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()

    def child():
        queue.put(ggml_train_test(path, case, epochs, splits, threads, batch_size))

    process = context.Process(target=child)
    process.start()
    process.join()
    if process.exitcode != 0:
        why = "killed (SIGKILL: out of memory?)" if process.exitcode == -9 else f"exit {process.exitcode}"
        print(f"GGML-OT {case}: {why}", file=sys.stderr, flush=True)
        return dict(NO_RESULT, note=f" ({why})")
    return dict(queue.get(), note="")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES),
                        help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--skip-ggml", action="store_true")
    parser.add_argument("--skip-batches", action="store_true")
    parser.add_argument("--batch-sizes", default="8,16")
    parser.add_argument("--batch-size", type=int,
                        help="pairs mode: donors per stratified batch on both sides (default: one full batch)")
    parser.add_argument("--ggml-threads", default="1",
                        help="comma-separated GGML-OT thread counts (settings.n_threads), e.g. 1,2; 2 adds a table against kotml on 2 ranks")
    args = parser.parse_args()
    ggml_threads = [int(t) for t in args.ggml_threads.split(",")]
    kotml = os.path.abspath(os.path.join(args.build, "src", "kotml"))
    folder = os.path.abspath(os.path.join(args.build, "perf", "ggml"))
    make_inputs(kotml, folder)
    for name in sorted({CASES[c][0] for c in args.cases.split(",")} & {"scrna100.h5ad", "scrna100x500.h5ad"}):
        make_every_cell_input(kotml, folder, name)
    version, _ = run([kotml, "--version"])
    print(f"machine: {describe_machine()}\nkotml: {version.splitlines()[0]}; {version.splitlines()[1]}")
    batching = f"batches of {args.batch_size} donors" if args.batch_size else "one full batch per epoch"
    print(f"epochs per split: {args.epochs}, no early stop on either side, {batching}; "
          f"GGML-OT on {', '.join(map(str, ggml_threads))} thread(s)\n")
    rows = []
    batch_option = ("--batch-size", str(args.batch_size)) if args.batch_size else ()
    # Each case's row prints as soon as it is measured: a later case may take
    # GGML-OT past the machine's memory.
    print("| case | GGML-OT knn | kotml knn | GGML-OT s/epoch | kotml 1 rank s/epoch | speedup | "
          "GGML-OT cpu s/epoch | kotml cpu s/epoch | cpu ratio | kotml 2 ranks s/epoch | 1→2 efficiency | "
          "kotml peak RSS per rank, 1 / 2 ranks (MB) | GGML-OT peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for case in args.cases.split(","):
        path = os.path.join(folder, CASES[case][0])
        one = kotml_train_test(kotml, path, case, args.epochs, 1, os.path.join(folder, f"{case}_np1"), batch_option)
        two = kotml_train_test(kotml, path, case, args.epochs, 2, os.path.join(folder, f"{case}_np2"), batch_option)
        peers = {} if args.skip_ggml else {t: ggml_isolated(path, case, args.epochs, one["splits"], t, args.batch_size)
                                           for t in ggml_threads}
        rows.append((case, one, two, peers))
        g = peers.get(1, NO_RESULT)
        print(f"| {case} | {g['knn']:.2f} | {one['knn']:.2f} | {g['wall']:.3f}{g['note']} | {one['wall']:.4f} | "
              f"{g['wall'] / one['wall']:.1f}x | {g['cpu']:.3f} | {one['cpu']:.4f} | {g['cpu'] / one['cpu']:.1f}x | "
              f"{two['wall']:.4f} | {one['wall'] / (2 * two['wall']):.0%} | {one['peak_mb']:.0f} / {two['peak_mb']:.0f} | "
              f"{g['peak_mb']:.0f} |",
              flush=True)
        print(f"done {case}", file=sys.stderr, flush=True)

    # Each tool on the whole machine: GGML-OT with more threads against kotml
    # with as many ranks.
    for threads in (t for t in ggml_threads if t == 2):
        print(f"\nwhole machine: GGML-OT on {threads} threads against kotml on {threads} ranks "
              f"(the 2-rank kotml run above)\n")
        print("| case | GGML-OT knn | GGML-OT s/epoch | kotml s/epoch | speedup |")
        print("|---|---|---|---|---|")
        for case, one, two, peers in rows:
            g = peers.get(threads, NO_RESULT)
            ours = two if threads == 2 else {"wall": float("nan")}
            print(f"| {case} | {g['knn']:.2f} | {g['wall']:.3f} | {ours['wall']:.4f} | {g['wall'] / ours['wall']:.1f}x |")

    if not args.skip_batches:
        print("\nmode batches (scrna, EMD, --lr-scaling linear; test_loss = triplet loss among the test donors)\n")
        print("| ranks | batch per rank | global batch | lr | s/epoch | cpu s/epoch | test_loss | knn |")
        print("|---|---|---|---|---|---|---|---|")
        path = os.path.join(folder, "scrna60.h5ad")
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            for ranks in (1, 2):
                out = os.path.join(folder, f"batches_b{batch}_np{ranks}")
                r = kotml_train_test(kotml, path, "scrna-emd", args.epochs, ranks, out,
                                     ("--mode", "batches", "--batch-size", str(batch), "--lr-scaling", "linear"))
                print(f"| {ranks} | {batch} | {batch * ranks} | {0.1 * ranks:g} | {r['wall']:.4f} | {r['cpu']:.4f} | "
                      f"{r['test_loss']:.4f} | {r['knn']:.2f} |")


if __name__ == "__main__":
    main()
