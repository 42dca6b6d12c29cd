#!/usr/bin/env python3
"""kotml map against pairOT 0.1 (cellannotation/pairOT a66c7cf), end to end, on
the same two .h5ad files, side by side in one run.

    perf/map/run_pairot_comparison.sh BUILD_DIR [--query-cells 8000] [--reference-cells 5000]
                                                [--n-top-genes 500] [--ranks 1,2] [--skip-pairot]

The input pair: one `kotml simulate --kind scrna` cohort (2 classes x 8 donors,
--n-genes genes, 8 cell types), split by donor into a query (the first 8 donors,
without the last cell type) and a reference (the other 8 donors, without the
first type), each subsampled to the requested size (numpy default_rng(0)). Raw
counts in X, obs cell_type and sample.

pairOT runs as its README does, with its defaults (float32: jax_enable_x64 off;
epsilon 0.05, batch_size 1024 online costs, tau 1, balanced marginals), except
gene_filtering=False: the simulated gene names are not HGNC symbols, so pairOT's
default filtering would leave no markers at all (kotml runs without its gene
lists, which is the same setting). Phases timed: preprocess_adatas (gene
alignment, DE with limma through rpy2 and AUROC, HVGs), init_geom + init_problem
(label distance, features), solve (jit, until the potentials are ready), the
three mappings (compute_mapping(aggregation_method=None)) and compute_distance
(n_samples=10000).

kotml runs `kotml map` on 1 and 2 MPI ranks (one thread each, Serial build),
timed from outside (wall clock, process start to exit: reading, preprocessing,
solve, aggregation and writing), with its own per-phase seconds from map.h5.

Printed: a markdown table of phase times and ratios, and the agreement of the
outputs (max |difference| of the mean mapping and of the distance, the similar
clusters by the mean mapping). pairOT's distance samples unseeded, so its
distance differs from kotml's by the sampling only where a cluster has more than
10000 cells (not here).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from machine import describe_machine  # noqa: E402


def make_inputs(kotml, out, n_query, n_reference, n_genes, seed):
    import anndata as ad
    import scipy.sparse as sp

    path = os.path.join(out, "cohort.h5ad")
    cells_per_donor = int(np.ceil(max(n_query, n_reference) * 8 / 7 / 8)) + 50
    subprocess.run([kotml, "simulate", "--kind", "scrna", "--seed", str(seed), "--n-classes", "2",
                    "--donors-per-class", "8", "--cells-per-donor", str(cells_per_donor), "--n-genes",
                    str(n_genes), "--n-types", "8", "-o", path], check=True, capture_output=True)
    cohort = ad.read_h5ad(path)
    cohort.X = sp.csr_matrix(cohort.X, dtype=np.float32)
    donors = sorted(cohort.obs["sample"].unique())
    types = sorted(cohort.obs["cell_type"].unique())
    rng = np.random.default_rng(0)
    files = []
    for name, donor_set, dropped, size in (("query", donors[:8], types[-1], n_query),
                                           ("reference", donors[8:], types[0], n_reference)):
        mask = (cohort.obs["sample"].isin(donor_set) & (cohort.obs["cell_type"] != dropped)).to_numpy()
        rows = np.flatnonzero(mask)
        rows = np.sort(rng.choice(rows, size=min(size, rows.size), replace=False))
        a = cohort[rows].copy()
        a.obs = a.obs[["cell_type", "sample"]].copy()
        for c in ("cell_type", "sample"):
            a.obs[c] = a.obs[c].astype(str).astype("category")
        a.var = a.var[[]].copy()
        a.uns = {}
        a.obsm.clear()
        file = os.path.join(out, f"{name}.h5ad")
        a.write_h5ad(file)
        files.append(file)
    return files


def run_pairot(query, reference, n_top_genes):
    import anndata as ad
    import jax
    import pairot as pr

    q = ad.read_h5ad(query)
    r = ad.read_h5ad(reference)
    t = {}
    start = time.perf_counter()
    qp, rp = pr.pp.preprocess_adatas(q, r, cell_type_column_adata1="cell_type", cell_type_column_adata2="cell_type",
                                     sample_column_adata1="sample", sample_column_adata2="sample",
                                     n_top_genes=n_top_genes)
    t["preprocess"] = time.perf_counter() - start
    dm = pr.tl.DatasetMap(qp, rp)
    start = time.perf_counter()
    dm.init_geom(gene_filtering=False)
    dm.init_problem()
    t["init"] = time.perf_counter() - start
    start = time.perf_counter()
    dm.solve()
    jax.block_until_ready(dm.ot_solution.f)
    t["solve"] = time.perf_counter() - start
    t["iterations"] = int(dm.ot_solution.n_iters)
    start = time.perf_counter()
    mappings = dm.compute_mapping(aggregation_method=None)
    t["mapping"] = time.perf_counter() - start
    start = time.perf_counter()
    distance = dm.compute_distance(n_samples=10000)
    t["distance"] = time.perf_counter() - start
    t["total"] = t["preprocess"] + t["init"] + t["solve"] + t["mapping"] + t["distance"]
    clusters_q = list(qp.obs["cell_type_author"].cat.categories)
    clusters_r = list(rp.obs["cell_type_author"].cat.categories)
    mean = mappings["mean"].loc[clusters_q, clusters_r]
    dist = distance.loc[clusters_q, clusters_r]
    similar = pr.tl.DatasetMap.select_similar_clusters(mean, dist)
    out = {"seconds": t, "mean": mean.to_numpy(np.float64).tolist(), "distance": dist.to_numpy(np.float64).tolist(),
           "similar": {k: list(v) for k, v in similar.items()}, "clusters_query": clusters_q,
           "clusters_reference": clusters_r, "dtype": str(np.asarray(dm.ot_solution.f).dtype)}
    return out


def run_kotml(build, query, reference, out, ranks, n_top_genes):
    import h5py

    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", os.path.join(build, "src", "kotml"), "map", query,
           reference, "--out", out, "--query-label-col", "cell_type", "--ref-label-col", "cell_type",
           "--query-sample-col", "sample", "--ref-sample-col", "sample", "--n-top-genes", str(n_top_genes), "--quiet"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    with h5py.File(os.path.join(out, "map.h5")) as h:
        config = json.loads(h.attrs["configuration"])
        s = config["seconds"]
        result = {
            "wall": wall,
            "preprocess": s["genes"] + s["de"] + s["hvg"],
            "init": s["label_distance"],
            "solve": s["solve"],
            "mapping": s["mapping"],
            "distance": s["distance"],
            "transfer": s["transfer"],
            "iterations": config["iterations"],
            "cost_storage": config["cost_storage"],
            "sinkhorn_domain": config["sinkhorn_domain"],
            "mean": h["mapping/mean"][...].tolist(),
            "distance_matrix": h["distance"][...].tolist(),
            "clusters_query": [c.decode() if isinstance(c, bytes) else c for c in h["clusters/query"][...]],
            "clusters_reference": [c.decode() if isinstance(c, bytes) else c for c in h["clusters/reference"][...]],
        }
    with open(os.path.join(out, "similar_clusters.json")) as f:
        result["similar"] = {q: [e["reference"] for e in v] for q, v in json.load(f)["mean"].items()}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True)
    parser.add_argument("--query-cells", type=int, default=8000)
    parser.add_argument("--reference-cells", type=int, default=5000)
    parser.add_argument("--n-genes", type=int, default=2000)
    parser.add_argument("--n-top-genes", type=int, default=500)
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--skip-pairot", action="store_true")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    build = os.path.abspath(args.build)

    with tempfile.TemporaryDirectory() as tmp:
        query, reference = make_inputs(os.path.join(build, "src", "kotml"), tmp, args.query_cells,
                                       args.reference_cells, args.n_genes, args.seed)
        load = os.getloadavg()[0]
        kotml = {}
        for ranks in (int(r) for r in args.ranks.split(",")):
            kotml[ranks] = run_kotml(build, query, reference, os.path.join(tmp, f"out{ranks}"), ranks,
                                     args.n_top_genes)
        pairot = None if args.skip_pairot else run_pairot(query, reference, args.n_top_genes)
        load_after = os.getloadavg()[0]

    first = kotml[min(kotml)]
    print(f"Machine: {describe_machine()}; load average {load:.2f} before, {load_after:.2f} after")
    print(f"{args.query_cells} query x {args.reference_cells} reference cells, {args.n_genes} genes, "
          f"{args.n_top_genes} HVGs; kotml: {first['iterations']} Sinkhorn iterations, {first['cost_storage']} costs, "
          f"{first['sinkhorn_domain']} domain"
          + ("" if pairot is None else f"; pairOT: {pairot['seconds']['iterations']} iterations in "
             f"{pairot['dtype']}"))
    print()
    phases = ("preprocess", "init", "solve", "mapping", "distance")
    header = "| phase | " + ("pairOT | " if pairot else "") + " | ".join(f"kotml {r} rank(s)" for r in kotml)
    if pairot:
        header += " | " + " | ".join(f"ratio ({r})" for r in kotml)
    print(header + " |")
    print("|---" * header.count("|") + "|")
    for phase in phases + ("total",):
        row = f"| {phase} | "
        if pairot:
            row += f"{pairot['seconds'][phase]:.2f} s | "
        values = {r: (k["wall"] if phase == "total" else k[phase]) for r, k in kotml.items()}
        row += " | ".join(f"{v:.3f} s" for v in values.values())
        if pairot:
            row += " | " + " | ".join(f"{pairot['seconds'][phase] / max(v, 1e-9):.0f}x" for v in values.values())
        print(row + " |")
    print("\nkotml total = wall clock of the whole run (reading, writing and start-up included); "
          "pairOT total = the sum of its phases (reading not included).")
    same = all(k["mean"] == first["mean"] and k["distance_matrix"] == first["distance_matrix"] for k in kotml.values())
    print(f"kotml outputs identical across rank counts: {same}")
    if pairot:
        assert pairot["clusters_query"] == first["clusters_query"]
        assert pairot["clusters_reference"] == first["clusters_reference"]
        d_mean = np.abs(np.array(pairot["mean"]) - np.array(first["mean"])).max()
        d_dist = np.abs(np.array(pairot["distance"]) - np.array(first["distance_matrix"])).max()
        print(f"max |mapping(mean) difference| {d_mean:.2e}, max |distance difference| {d_dist:.2e}, "
              f"same similar clusters: {pairot['similar'] == first['similar']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kotml": kotml, "pairot": pairot, "load": [load, load_after]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
