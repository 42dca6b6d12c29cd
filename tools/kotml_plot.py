#!/usr/bin/env python3
"""kotml_plot: figures from kotml's output files.

    kotml_plot.py INPUT [INPUT ...] --out DIR [--format png,svg] [--top-genes N] [--dpi D]

Each input's kind is read from its content, not its name:

  results.h5 (kotml train, train-test, test)
      <stem>_training   loss and gradient norm per epoch (one line per split)
      <stem>_metrics    per-split knn_acc, mi, ari, vi and epoch time
      <stem>_loadings   the top genes of each component of the learned metric
  donor distances (kotml distances)
      <stem>_mds        classical MDS of the distance matrix, coloured by label
      <stem>_heatmap    the distance matrix, donors ordered by label
  map.h5 (kotml map)
      <stem>_mapping_<method>  query x reference mapping heatmaps
      <stem>_distance          query x reference distance heatmap
      <stem>_sankey            the similar clusters as a Sankey diagram
  a Gromov-Wasserstein result (kotml gw)
      <stem>_matches    source and target clouds, matched points in one colour
  a scaling table (the markdown that slurm/collect_scaling.py prints)
      <stem>_time, <stem>_efficiency, and <stem>_phases when the table has
      phase columns

<stem> is the input's file name without its extension (with its folder's name
in front when two inputs share a name). One line on stderr names each file
written. Errors print one line, "kotml_plot: error: ...", and exit with 2.

Needs numpy, h5py and matplotlib (Debian 12: python3-numpy, python3-h5py,
python3-matplotlib); kotml itself needs no Python.
"""

import argparse
import json
import math
import pathlib
import re
import sys

PROG = "kotml_plot"


def fail(message):
    """Prints one error line and exits with status 2."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


try:
    import numpy as np
    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import PathPatch, Rectangle
    from matplotlib.path import Path
except ImportError as missing:
    fail(f"the Python module '{missing.name}' is missing; kotml_plot needs numpy, h5py and matplotlib "
         "(Debian: apt-get install python3-numpy python3-h5py python3-matplotlib)")


class PlotError(Exception):
    """A problem with an input, reported as one error line."""


# Okabe & Ito's colour-blind-safe palette (black last, for an eighth class).
OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"]
SEQUENTIAL = "viridis"
UNMATCHED = "#BBBBBB"
FORMATS = ("png", "svg", "pdf")
RESULTS_METRICS = ("knn_acc", "mi", "ari", "vi")
MAPPING_METHODS = ("mean", "transported_mass", "jensen_shannon")


def categorical_colours(n):
    """n distinct colour-blind-safe colours: Okabe-Ito, or viridis samples beyond eight."""
    if n <= len(OKABE_ITO):
        return OKABE_ITO[:n]
    cmap = plt.get_cmap(SEQUENTIAL)
    return [cmap(v) for v in np.linspace(0.0, 0.95, n)]


def setup_matplotlib():
    """Fixed style and deterministic SVG ids."""
    plt.rcParams.update({
        "figure.dpi": 100,
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.grid": False,
        "image.cmap": SEQUENTIAL,
        "svg.hashsalt": PROG,
        "svg.fonttype": "none",
    })


class Writer:
    """Saves each figure under DIR as <stem>_<name>.<format> and reports it on stderr."""

    def __init__(self, out_dir, formats, dpi):
        self.out_dir = out_dir
        self.formats = formats
        self.dpi = dpi
        self.written = []

    def save(self, fig, stem, name):
        for fmt in self.formats:
            path = self.out_dir / f"{stem}_{name}.{fmt}"
            metadata = {"Date": None} if fmt in ("svg", "pdf") else {}
            try:
                fig.savefig(path, format=fmt, dpi=self.dpi, bbox_inches="tight", metadata=metadata)
            except OSError as error:
                plt.close(fig)
                raise PlotError(f"{path}: cannot write ({error.strerror or error})") from None
            print(f"{PROG}: wrote {path}", file=sys.stderr)
            self.written.append(path)
        plt.close(fig)


# ---------------------------------------------------------------- reading

def strings(dataset):
    """A dataset of HDF5 strings as a list of str."""
    return [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in np.atleast_1d(dataset[()])]


def text_attribute(h5, name):
    """A string attribute of an HDF5 object, or None."""
    value = h5.attrs.get(name)
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    return value


def json_attribute(h5, name):
    """A JSON string attribute parsed, or {} when absent or not JSON."""
    value = text_attribute(h5, name)
    if value is None:
        return {}
    try:
        return json.loads(value)
    except ValueError:
        return {}


def hdf5_kind(h5):
    """The kind of a kotml HDF5 output, from the datasets it holds."""
    if "mapping" in h5 and "clusters" in h5 and "distance" in h5:
        return "map"
    if "match" in h5 and "gw_cost" in h5:
        return "gw"
    if "distances" in h5 and "labels" in h5 and "donors" in h5:
        return "distances"
    if text_attribute(h5, "subcommand") in ("train", "train-test", "test") or "history" in h5 or "metrics" in h5:
        return "results"
    return None


SCALING_HEADER = re.compile(r"^\|\s*nodes\s*\|\s*ranks\s*\|")


def detect_kind(path):
    """'results', 'distances', 'map', 'gw' or 'scaling', read from the file's content."""
    if not path.exists():
        raise PlotError(f"{path}: no such file")
    if not path.is_file():
        raise PlotError(f"{path}: not a regular file")
    if h5py.is_hdf5(path):
        try:
            with h5py.File(path, "r") as h5:
                kind = hdf5_kind(h5)
        except OSError as error:
            raise PlotError(f"{path}: cannot read this HDF5 file ({error})") from None
        if kind is None:
            raise PlotError(f"{path}: an HDF5 file that is none of kotml's results.h5, distances, map.h5 or gw outputs")
        return kind
    try:
        with open(path, "rb") as stream:
            text = stream.read(1 << 16).decode("utf-8", errors="replace")
    except OSError:
        text = ""
    if any(SCALING_HEADER.match(line.strip()) for line in text.splitlines()):
        return "scaling"
    raise PlotError(f"{path}: unknown file kind (expected a kotml results.h5, distances file, map.h5, "
                    "gw output, or the table of slurm/collect_scaling.py)")


def output_stems(paths):
    """File-name stems, made unique by the parent folder's name (then a counter)."""
    original = [p.stem for p in paths]
    stems = list(original)
    for i, path in enumerate(paths):
        if original.count(path.stem) > 1:
            parent = path.resolve().parent.name
            stems[i] = f"{parent}_{path.stem}" if parent else path.stem
    seen, named = {}, list(stems)
    for i, stem in enumerate(named):
        if named.count(stem) > 1:
            seen[stem] = seen.get(stem, 0) + 1
            stems[i] = f"{stem}_{seen[stem]}"
    return stems


# ---------------------------------------------------------------- results.h5

def histories(h5):
    """(label, history group) pairs: every split of a train-test, else the one run."""
    if "splits" in h5:
        splits = sorted(h5["splits"].keys(), key=int)
        found = [(f"split {s}", h5["splits"][s]["history"]) for s in splits if "history" in h5["splits"][s]]
        if found:
            return found
    if "history" in h5:
        return [("all donors", h5["history"])]
    return []


def plot_training(h5, stem, writer):
    """Loss (left) and gradient norm (right) against the epoch, one line per split."""
    runs = [(label, group) for label, group in histories(h5) if group["epoch"].shape[0] > 0]
    if not runs:
        return
    subcommand = text_attribute(h5, "subcommand") or "train"
    fig, (ax_loss, ax_grad) = plt.subplots(1, 2, figsize=(9, 3.4))
    colours = categorical_colours(len(runs))
    for (label, group), colour in zip(runs, colours):
        epoch = group["epoch"][()]
        ax_loss.plot(epoch, group["loss"][()], marker="o", markersize=3, color=colour, label=label)
        ax_grad.plot(epoch, group["grad_norm"][()], marker="o", markersize=3, color=colour, label=label)
    ax_loss.set(xlabel="epoch", ylabel="triplet loss (ground-cost units)", title="training loss")
    ax_grad.set(xlabel="epoch", ylabel="gradient norm ‖∇A‖ (Frobenius)", title="gradient norm")
    for ax in (ax_loss, ax_grad):
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    ax_loss.legend(fontsize=8, frameon=False)
    fig.suptitle(f"{stem}: kotml {subcommand}, training curves")
    writer.save(fig, stem, "training")


def plot_metrics(h5, stem, writer):
    """Per-split kNN accuracy, MI, ARI and VI as grouped bars (with mean ± SD), and
    the mean epoch time of each split in seconds where the run trained."""
    if "metrics" not in h5 or "knn_acc" not in h5["metrics"]:
        return
    metrics = h5["metrics"]
    names = [m for m in RESULTS_METRICS if m in metrics]
    values = np.array([metrics[m][()] for m in names], dtype=float)  # metric x split
    n_splits = values.shape[1]
    times = metrics["epoch_time_s"][()] if "epoch_time_s" in metrics else np.array([])
    has_time = times.size > 0 and np.isfinite(times).any()
    fig, axes = plt.subplots(1, 2 if has_time else 1, figsize=(9 if has_time else 6, 3.4),
                             gridspec_kw={"width_ratios": [3, 1]} if has_time else None)
    ax = axes[0] if has_time else axes
    colours = categorical_colours(n_splits)
    width = 0.8 / n_splits
    x = np.arange(len(names))
    for s in range(n_splits):
        ax.bar(x - 0.4 + width * (s + 0.5), values[:, s], width, color=colours[s], label=f"split {s}")
    ax.errorbar(x, values.mean(axis=1), yerr=values.std(axis=1, ddof=1) if n_splits > 1 else None,
                fmt="D", color="black", markersize=4, capsize=4, label="mean ± SD")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(x, names)
    ax.set(ylabel="score (dimensionless)", title="evaluation per split")
    ax.grid(axis="y", alpha=0.3)
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.25 * (high - low))
    ax.legend(fontsize=8, frameon=False, ncol=min(n_splits + 1, 5), loc="upper left")
    if has_time:
        ax_time = axes[1]
        ax_time.bar(np.arange(n_splits), times, color=colours)
        ax_time.set_xticks(np.arange(n_splits), [str(s) for s in range(n_splits)])
        ax_time.set(xlabel="split", ylabel="mean epoch time (s)", title="epoch time")
        ax_time.grid(axis="y", alpha=0.3)
    subcommand = text_attribute(h5, "subcommand") or "test"
    fig.suptitle(f"{stem}: kotml {subcommand}, {n_splits} split(s)")
    writer.save(fig, stem, "metrics")


def plot_loadings(h5, stem, writer, top):
    """The `top` genes of each component of A by |loading|, as signed horizontal bars
    (at most six components)."""
    if "loadings" not in h5 or "values" not in h5["loadings"]:
        return
    values = np.asarray(h5["loadings"]["values"][()], dtype=float)  # genes x k
    genes = strings(h5["loadings"]["genes"]) if "genes" in h5["loadings"] else [str(g) for g in range(len(values))]
    if values.ndim != 2 or values.size == 0:
        return
    k = values.shape[1]
    shown = min(k, 6)
    top = min(top, values.shape[0])
    fig, axes = plt.subplots(1, shown, figsize=(2.6 * shown + 0.6, 0.22 * top + 1.6), squeeze=False,
                             layout="constrained")
    for c, ax in enumerate(axes[0]):
        column = values[:, c]
        order = np.lexsort((np.arange(column.size), -np.abs(column)))[:top]
        colours = [OKABE_ITO[4] if column[g] >= 0 else OKABE_ITO[5] for g in order]
        ax.barh(np.arange(top), column[order], color=colours)
        ax.set_yticks(np.arange(top), [genes[g] for g in order], fontsize=7)
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set(xlabel="loading (per unit feature)", title=f"component {c + 1}")
        ax.grid(axis="x", alpha=0.3)
    more = f" (first {shown} of {k} components)" if shown < k else ""
    fig.suptitle(f"{stem}: top {top} gene loadings of the learned metric{more}; blue > 0, vermillion < 0")
    writer.save(fig, stem, "loadings")


def draw_results(path, stem, writer, options):
    """Training curves, per-split metrics and gene loadings of a results.h5."""
    with h5py.File(path, "r") as h5:
        plot_training(h5, stem, writer)
        plot_metrics(h5, stem, writer)
        plot_loadings(h5, stem, writer, options.top_genes)


# ---------------------------------------------------------------- distances

def classical_mds(distances, components=2):
    """Torgerson's classical MDS: the top eigenvectors of -½ J D² J scaled by √λ
    (negative eigenvalues give zero columns); each axis' sign makes its largest
    |coordinate| positive. Also returns the sum of all positive eigenvalues, the
    variance a share of which each axis shows."""
    d = np.asarray(distances, dtype=float)
    n = d.shape[0]
    centring = np.eye(n) - np.full((n, n), 1.0 / n)
    b = -0.5 * centring @ (d ** 2) @ centring
    eigenvalues, eigenvectors = np.linalg.eigh((b + b.T) / 2)
    order = np.argsort(eigenvalues)[::-1][:components]
    lam = np.clip(eigenvalues[order], 0.0, None)
    coords = eigenvectors[:, order] * np.sqrt(lam)
    if coords.shape[1] < components:
        coords = np.hstack([coords, np.zeros((n, components - coords.shape[1]))])
        lam = np.concatenate([lam, np.zeros(components - lam.size)])
    for c in range(components):
        if coords[np.argmax(np.abs(coords[:, c])), c] < 0:
            coords[:, c] = -coords[:, c]
    return coords, lam, float(np.clip(eigenvalues, 0.0, None).sum())


def read_distances(h5, path):
    """Matrix, donor names, integer labels and class names of a distances file."""
    matrix = np.asarray(h5["distances"][()], dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise PlotError(f"{path}: /distances is not a square matrix")
    donors = strings(h5["donors"])
    labels = np.asarray(h5["labels"][()], dtype=int)
    classes = strings(h5["classes"]) if "classes" in h5 else [str(c) for c in range(labels.max() + 1)]
    if len(donors) != matrix.shape[0] or labels.size != matrix.shape[0]:
        raise PlotError(f"{path}: /donors and /labels do not match /distances")
    return matrix, donors, labels, classes


def plot_mds(h5, path, stem, writer):
    """The donors in the first two classical-MDS coordinates of the distance matrix
    (computed here), one colour per class label."""
    matrix, donors, labels, classes = read_distances(h5, path)
    coords, lam, positive_total = classical_mds(matrix)
    share = lam / positive_total if positive_total > 0 else lam
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    colours = categorical_colours(len(classes))
    markers = "osD^vP*X"
    for c, name in enumerate(classes):
        mask = labels == c
        if mask.any():
            ax.scatter(coords[mask, 0], coords[mask, 1], s=36, color=colours[c], marker=markers[c % len(markers)],
                       edgecolor="black", linewidth=0.4, label=f"{name} ({mask.sum()})")
    metric = text_attribute(h5, "metric") or json_attribute(h5, "config").get("options", {}).get("metric", "")
    ax.set(xlabel=f"MDS 1 (distance units; {share[0]:.0%} of positive eigenvalues)",
           ylabel=f"MDS 2 (distance units; {share[1]:.0%})",
           title=f"{stem}: donor MDS of {len(donors)} donors" + (f" ({metric} metric)" if metric else ""))
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    ax.legend(title="label", fontsize=8, frameon=False, loc="best")
    writer.save(fig, stem, "mds")


def plot_distance_heatmap(h5, path, stem, writer):
    """The donor x donor distance matrix with donors ordered by label (then name),
    class blocks outlined in white and named on top."""
    matrix, donors, labels, classes = read_distances(h5, path)
    order = np.lexsort((np.array(donors), labels))
    ordered = matrix[np.ix_(order, order)]
    n = len(donors)
    fig, ax = plt.subplots(figsize=(5.8, 5.0))
    image = ax.imshow(ordered, cmap=SEQUENTIAL, interpolation="nearest")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="OT distance (ground-cost units)")
    sorted_labels = labels[order]
    bounds = np.flatnonzero(np.diff(sorted_labels)) + 0.5
    for b in bounds:
        ax.axhline(b, color="white", linewidth=1.2)
        ax.axvline(b, color="white", linewidth=1.2)
    if n <= 40:
        names = [donors[i] for i in order]
        ax.set_xticks(np.arange(n), names, rotation=90, fontsize=6)
        ax.set_yticks(np.arange(n), names, fontsize=6)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    top = ax.secondary_xaxis("top")
    edges = np.concatenate([[-0.5], bounds, [n - 0.5]])
    top.set_xticks((edges[:-1] + edges[1:]) / 2, [classes[c] for c in np.unique(sorted_labels)], fontsize=8)
    ax.set(xlabel="donor (ordered by label)", ylabel="donor (ordered by label)")
    ax.set_title(f"{stem}: donor distances", pad=22)
    writer.save(fig, stem, "heatmap")


def draw_distances(path, stem, writer, options):
    """Donor MDS and ordered distance heatmap of a kotml distances file."""
    with h5py.File(path, "r") as h5:
        plot_mds(h5, path, stem, writer)
        plot_distance_heatmap(h5, path, stem, writer)


# ---------------------------------------------------------------- map.h5

def annotated_heatmap(ax, matrix, rows, columns, vmin, vmax, digits):
    """imshow of a small matrix with its values written in the cells."""
    image = ax.imshow(matrix, cmap=SEQUENTIAL, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="auto")
    ax.set_xticks(np.arange(len(columns)), columns, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(np.arange(len(rows)), rows, fontsize=7)
    if matrix.shape[0] <= 20 and matrix.shape[1] <= 20:
        middle = (vmin + vmax) / 2
        for (i, j), value in np.ndenumerate(matrix):
            ax.text(j, i, f"{value:.{digits}f}", ha="center", va="center", fontsize=6,
                    color="black" if value > middle else "white")
    return image


def read_clusters(h5):
    """Query and reference cluster names of a map.h5."""
    return strings(h5["clusters"]["query"]), strings(h5["clusters"]["reference"])


def plot_mapping_heatmaps(h5, stem, writer):
    """One heatmap per mapping method present (mean, transported_mass,
    jensen_shannon): query clusters (rows) onto reference clusters (columns)."""
    query, reference = read_clusters(h5)
    for method in [m for m in MAPPING_METHODS if m in h5["mapping"]]:
        matrix = np.asarray(h5["mapping"][method][()], dtype=float)
        fig, ax = plt.subplots(figsize=(1.0 + 0.5 * len(reference) + 1.6, 1.2 + 0.4 * len(query) + 0.8))
        image = annotated_heatmap(ax, matrix, query, reference, 0.0, max(1.0, float(np.nanmax(matrix))), 2)
        fig.colorbar(image, ax=ax, label=f"mapping, {method} (fraction, 0 to 1)")
        ax.set(xlabel="reference cluster", ylabel="query cluster", title=f"{stem}: mapping ({method})")
        writer.save(fig, stem, f"mapping_{method}")


def plot_map_distance(h5, stem, writer):
    """Query x reference cluster distance (from the block plans) as a heatmap."""
    query, reference = read_clusters(h5)
    matrix = np.asarray(h5["distance"][()], dtype=float)
    fig, ax = plt.subplots(figsize=(1.0 + 0.5 * len(reference) + 1.6, 1.2 + 0.4 * len(query) + 0.8))
    finite = matrix[np.isfinite(matrix)]
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    image = annotated_heatmap(ax, matrix, query, reference, vmin, max(vmax, vmin + 1e-12), 2)
    fig.colorbar(image, ax=ax, label="cluster distance (OT cost units)")
    ax.set(xlabel="reference cluster", ylabel="query cluster", title=f"{stem}: cluster distance")
    writer.save(fig, stem, "distance")


def similar_pairs(h5, method):
    """(query, reference, mapping) of the similar clusters: mapping ≥ the threshold
    and distance ≤ the threshold of the run's configuration (0.25 and 1 by default)."""
    config = json_attribute(h5, "configuration").get("similar", {})
    t_map = float(config.get("threshold_mapping", 0.25))
    t_dist = float(config.get("threshold_distance", 1.0))
    mapping = np.asarray(h5["mapping"][method][()], dtype=float)
    distance = np.asarray(h5["distance"][()], dtype=float)
    pairs = [(i, j, mapping[i, j]) for i, j in zip(*np.nonzero((mapping >= t_map) & (distance <= t_dist)))]
    return pairs, t_map, t_dist


def band_path(x0, x1, left_top, left_bottom, right_top, right_bottom):
    """A Sankey band: two cubic Bézier edges from the left node to the right node."""
    mid = (x0 + x1) / 2
    vertices = [(x0, left_top), (mid, left_top), (mid, right_top), (x1, right_top),
                (x1, right_bottom), (mid, right_bottom), (mid, left_bottom), (x0, left_bottom), (x0, left_top)]
    codes = [Path.MOVETO, Path.CURVE4, Path.CURVE4, Path.CURVE4, Path.LINETO,
             Path.CURVE4, Path.CURVE4, Path.CURVE4, Path.CLOSEPOLY]
    return Path(vertices, codes)


def stack_nodes(heights, gap):
    """Top y of each node stacked downwards from 0 with `gap` between them."""
    tops, y = [], 0.0
    for h in heights:
        tops.append(y)
        y -= h + gap
    return tops, -(y + gap)


def plot_sankey(h5, stem, writer):
    """Query clusters (left) joined to reference clusters (right) by one band per
    similar pair, of width proportional to its mapping ('mean' when present);
    clusters with no similar partner are grey stubs."""
    methods = [m for m in MAPPING_METHODS if m in h5["mapping"]] or sorted(h5["mapping"].keys())
    method = methods[0]
    query, reference = read_clusters(h5)
    pairs, t_map, t_dist = similar_pairs(h5, method)
    stub = 0.25
    left_h = [sum(w for i, _, w in pairs if i == q) or stub for q in range(len(query))]
    right_h = [sum(w for _, j, w in pairs if j == r) or stub for r in range(len(reference))]
    gap = 0.35
    left_top, left_total = stack_nodes(left_h, gap)
    right_top, right_total = stack_nodes(right_h, gap)
    offset_left = (max(left_total, right_total) - left_total) / 2
    offset_right = (max(left_total, right_total) - right_total) / 2
    left_top = [t - offset_left for t in left_top]
    right_top = [t - offset_right for t in right_top]

    fig, ax = plt.subplots(figsize=(7.0, 1.0 + 0.42 * max(len(query), len(reference), 3)))
    colours = categorical_colours(len(query))
    node_w, x0, x1 = 0.04, 0.0, 1.0
    left_used = [0.0] * len(query)
    right_used = [0.0] * len(reference)
    for i, j, w in sorted(pairs):
        lt = left_top[i] - left_used[i]
        left_used[i] += w
        rt = right_top[j] - right_used[j]
        right_used[j] += w
        path = band_path(x0 + node_w, x1, lt, lt - w, rt, rt - w)
        ax.add_patch(PathPatch(path, facecolor=colours[i], edgecolor="none", alpha=0.55))
        ax.text(x0 + node_w + 0.015, lt - w / 2, f"{w:.2f}", ha="left", va="center", fontsize=7)
    for q, name in enumerate(query):
        linked = left_used[q] > 0
        ax.add_patch(Rectangle((x0, left_top[q] - left_h[q]), node_w, left_h[q],
                               color=colours[q] if linked else UNMATCHED))
        ax.text(x0 - 0.02, left_top[q] - left_h[q] / 2, name, ha="right", va="center", fontsize=8)
    for r, name in enumerate(reference):
        linked = right_used[r] > 0
        ax.add_patch(Rectangle((x1, right_top[r] - right_h[r]), node_w, right_h[r],
                               color="#555555" if linked else UNMATCHED))
        ax.text(x1 + node_w + 0.02, right_top[r] - right_h[r] / 2, name, ha="left", va="center", fontsize=8)
    height = max(left_total, right_total)
    ax.text(x0 + node_w / 2, 0.25, "query clusters", ha="center", va="bottom", fontsize=9, weight="bold")
    ax.text(x1 + node_w / 2, 0.25, "reference clusters", ha="center", va="bottom", fontsize=9, weight="bold")
    if not pairs:
        ax.text(0.5, -height / 2, "no similar clusters", ha="center", va="center", fontsize=9, color="#555555")
    ax.set_xlim(-0.45, 1.5)
    ax.set_ylim(-height - 0.1, 0.6)
    ax.axis("off")
    ax.set_title(f"{stem}: similar clusters (mapping '{method}' ≥ {t_map:g}, distance ≤ {t_dist:g});\n"
                 f"band width ∝ mapping (fraction of the query cluster), grey: no similar partner", fontsize=9)
    writer.save(fig, stem, "sankey")


def draw_map(path, stem, writer, options):
    """Mapping heatmaps, distance heatmap and Sankey of a kotml map.h5."""
    with h5py.File(path, "r") as h5:
        plot_mapping_heatmaps(h5, stem, writer)
        plot_map_distance(h5, stem, writer)
        plot_sankey(h5, stem, writer)


# ---------------------------------------------------------------- gw

def resolve_cloud(spec, gw_path):
    """(file, dataset) of a cloud named 'FILE:DATASET' in the gw configuration; FILE
    as written (relative to where kotml ran) or relative to the gw output's folder."""
    if not spec or ":" not in spec:
        raise PlotError(f"{gw_path}: its kotml_config names no source/target cloud")
    file_name, dataset = spec.rsplit(":", 1)
    for candidate in (pathlib.Path(file_name), gw_path.parent / file_name):
        if candidate.is_file():
            return candidate, dataset
    raise PlotError(f"{gw_path}: cannot find the cloud file {file_name} named in its kotml_config "
                    "(run kotml_plot from the folder kotml gw ran in)")


def read_cloud(file_name, dataset):
    """Points of a cloud: a plain HDF5 dataset, or X / obsm/<rep> of an .h5ad."""
    with h5py.File(file_name, "r") as h5:
        if dataset in h5 and isinstance(h5[dataset], h5py.Dataset):
            points = h5[dataset][()]
        elif "obsm" in h5 and dataset in h5["obsm"]:
            points = h5["obsm"][dataset][()]
        else:
            raise PlotError(f"{file_name}: no dense dataset '{dataset}' (a sparse X cannot be drawn)")
    points = np.asarray(points, dtype=float)
    return points.reshape(-1, 1) if points.ndim == 1 else points


def drawable_coordinates(points):
    """2-D or 3-D coordinates of a cloud, with axis labels: the points themselves
    up to three dimensions, else their first two principal components."""
    d = points.shape[1]
    if d == 1:
        return np.column_stack([points[:, 0], np.zeros(len(points))]), ["x (input units)", ""]
    if d <= 3:
        return points, ["x (input units)", "y (input units)", "z (input units)"][:d]
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    for c in range(2):
        if vt[c, np.argmax(np.abs(vt[c]))] < 0:
            vt[c] = -vt[c]
    return centred @ vt[:2].T, ["PC 1 (input units)", "PC 2 (input units)"]


def view_along_thinnest_axis(coords):
    """(elevation, azimuth) of a 3-D view that looks, tilted by about 20 degrees,
    along the coordinate axis of least variance (the depth of a Swiss roll)."""
    views = [(15, -20), (15, -70), (70, -60)]  # along x, y, z
    return views[int(np.argmin(coords.var(axis=0)))]


def scatter_cloud(fig, position, coords, labels, colours, title, faint=None):
    """One cloud in a 2-D or 3-D panel; points where `faint` is true are drawn
    first, small and translucent."""
    faint = np.zeros(len(coords), dtype=bool) if faint is None else faint
    colours = np.asarray(colours)
    three_d = coords.shape[1] == 3
    ax = fig.add_subplot(position, projection="3d" if three_d else None)
    for mask, size, alpha in ((faint, 5, 0.4), (~faint, 10, 1.0)):
        if not mask.any():
            continue
        columns = [coords[mask, c] for c in range(coords.shape[1])]
        extra = {"depthshade": False} if three_d else {"linewidths": 0}
        ax.scatter(*columns, c=colours[mask], s=size, alpha=alpha, **extra)
    ax.set(xlabel=labels[0], ylabel=labels[1])
    if three_d:
        ax.set_zlabel(labels[2])
        ax.view_init(*view_along_thinnest_axis(coords))
        ax.tick_params(labelsize=6)
    else:
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    return ax


def plot_gw_matches(h5, path, stem, writer):
    """The source cloud coloured along its row order (viridis) and the target cloud
    with each matched point in the colour of its source point (the mean colour when
    several sources match it); unmatched target points are grey."""
    config = json_attribute(h5, "kotml_config")
    source_file, source_set = resolve_cloud(config.get("source", ""), path)
    target_file, target_set = resolve_cloud(config.get("target", ""), path)
    source = read_cloud(source_file, source_set)
    target = read_cloud(target_file, target_set)
    match = np.asarray(h5["match"][()], dtype=np.int64)
    if match.size != len(source):
        raise PlotError(f"{path}: /match has {match.size} entries but the source cloud {source_file} has "
                        f"{len(source)} points")
    value = np.linspace(0.0, 1.0, len(source)) if len(source) > 1 else np.zeros(1)
    valid = (match >= 0) & (match < len(target))
    counts = np.bincount(match[valid], minlength=len(target))
    sums = np.bincount(match[valid], weights=value[valid], minlength=len(target))
    cmap = plt.get_cmap(SEQUENTIAL)
    target_colours = np.array([cmap(s / c) if c else matplotlib.colors.to_rgba(UNMATCHED)
                               for s, c in zip(sums, counts)])
    source_xy, source_labels = drawable_coordinates(source)
    target_xy, target_labels = drawable_coordinates(target)
    fig = plt.figure(figsize=(10, 4.4))
    scatter_cloud(fig, 121, source_xy, source_labels, cmap(value),
                  f"source: {source_file.name}:{source_set}\n({len(source)} points, {source.shape[1]}-D)")
    scatter_cloud(fig, 122, target_xy, target_labels, target_colours,
                  f"target: {target_file.name}:{target_set}\n({len(target)} points, {target.shape[1]}-D; "
                  f"{int((counts > 0).sum())} matched, grey: unmatched)", faint=counts == 0)
    mappable = matplotlib.cm.ScalarMappable(norm=matplotlib.colors.Normalize(0, len(source) - 1), cmap=cmap)
    fig.colorbar(mappable, ax=fig.axes, fraction=0.025, pad=0.06, label="source point (row index)")
    gw_cost = float(h5["gw_cost"][()])
    iterations = int(h5["iterations"][()]) if "iterations" in h5 else 0
    fig.suptitle(f"{stem}: Gromov-Wasserstein matching ({config.get('mode', '')} mode, "
                 f"{iterations} iterations, GW cost {gw_cost:.4g})", y=1.03)
    writer.save(fig, stem, "matches")


def draw_gw(path, stem, writer, options):
    """Matched clouds of a kotml gw output."""
    with h5py.File(path, "r") as h5:
        plot_gw_matches(h5, path, stem, writer)


# ---------------------------------------------------------------- scaling

def parse_number(cell):
    """'1.23 ± 0.04' -> (1.23, 0.04); '87%' -> (0.87, nan); '-' -> (nan, nan)."""
    cell = cell.strip()
    if cell.endswith("%"):
        return float(cell[:-1]) / 100.0, math.nan
    parts = cell.split("±")
    try:
        mean = float(parts[0])
    except ValueError:
        return math.nan, math.nan
    sd = float(parts[1]) if len(parts) > 1 else math.nan
    return mean, sd


def read_scaling_table(path):
    """Rows of collect_scaling.py's markdown table as {column: (mean, sd)}, and
    each row's text cells under "text"."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    start = next(i for i, line in enumerate(lines) if SCALING_HEADER.match(line))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue
        row = {name: parse_number(cell) for name, cell in zip(header, cells)}
        row["text"] = dict(zip(header, cells))
        rows.append(row)
    if not rows:
        raise PlotError(f"{path}: the scaling table has no rows")
    rows.sort(key=lambda r: r["ranks"][0])
    return header, rows


TIME_COLUMNS = ("epoch time (s)", "time (s)")


def time_column(header):
    """Slurm tables time an epoch, study tables the whole command."""
    return next(c for c in TIME_COLUMNS if c in header)


def scaling_kind(rows):
    """'weak' when the study table says so, else 'strong'."""
    return "weak" if rows[0]["text"].get("kind") == "weak" else "strong"


def phase_columns(header):
    """Columns read as phases: every '<name> (s)' column other than the time."""
    return [c for c in header if c.endswith("(s)") and c not in TIME_COLUMNS]


def plot_scaling_time(header, rows, stem, writer):
    """Time (an epoch's, ± SD over splits, or the command's) against ranks on
    log-log axes, with the ideal line from the smallest run: T·p₀/p for strong
    scaling, T for weak scaling."""
    column, kind = time_column(header), scaling_kind(rows)
    ranks = np.array([r["ranks"][0] for r in rows])
    time = np.array([r[column][0] for r in rows])
    sd = np.array([r[column][1] for r in rows])
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    ax.errorbar(ranks, time, yerr=np.nan_to_num(sd), fmt="o-", color=OKABE_ITO[4], capsize=3, label="measured")
    ideal = time[0] * ranks[0] / ranks if kind == "strong" else np.full(len(ranks), time[0])
    ax.plot(ranks, ideal, "--", color="black", linewidth=1, label="ideal (T·p₀/p)" if kind == "strong" else "ideal (T)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ranks, [str(int(r)) for r in ranks])
    what = "time per epoch" if column == "epoch time (s)" else "time of the command"
    ax.set(xlabel="MPI ranks", ylabel=column, title=f"{stem}: {kind} scaling, {what}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(frameon=False)
    writer.save(fig, stem, "time")


def plot_scaling_efficiency(header, rows, stem, writer):
    """Speedup (left, against the ideal p/p₀; scaled speedup for weak scaling)
    and parallel efficiency in percent (right) against ranks."""
    kind = scaling_kind(rows)
    ranks = np.array([r["ranks"][0] for r in rows])
    speedup = np.array([r["speedup"][0] for r in rows])
    efficiency = np.array([r["efficiency"][0] for r in rows]) * 100
    fig, (ax_s, ax_e) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax_s.plot(ranks, speedup, "o-", color=OKABE_ITO[4], label="measured")
    ax_s.plot(ranks, ranks / ranks[0], "--", color="black", linewidth=1, label="ideal")
    ax_s.set(xlabel="MPI ranks", ylabel="speedup S(p) (× the smallest run)",
             title="speedup" if kind == "strong" else "scaled speedup")
    ax_s.legend(frameon=False)
    ax_e.plot(ranks, efficiency, "o-", color=OKABE_ITO[5])
    ax_e.axhline(100, linestyle="--", color="black", linewidth=1)
    ax_e.set(xlabel="MPI ranks", ylabel="parallel efficiency (%)",
             title="efficiency T(p₀)·p₀/(p·T(p))" if kind == "strong" else "efficiency T(p₀)/T(p)")
    ax_e.set_ylim(0, max(110, float(np.nanmax(efficiency)) * 1.1))
    for ax in (ax_s, ax_e):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks, [str(int(r)) for r in ranks])
        ax.grid(alpha=0.3)
    fig.suptitle(f"{stem}: {kind} scaling")
    writer.save(fig, stem, "efficiency")


def plot_scaling_phases(header, rows, stem, writer):
    """Seconds of each phase per run, stacked, against ranks (drawn only when the
    table has '<phase> (s)' columns besides the epoch time)."""
    phases = phase_columns(header)
    if not phases:
        return
    labels = [str(int(r["ranks"][0])) for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    bottom = np.zeros(len(rows))
    for phase, colour in zip(phases, categorical_colours(len(phases))):
        seconds = np.nan_to_num(np.array([r.get(phase, (math.nan,))[0] for r in rows]))
        ax.bar(x, seconds, 0.6, bottom=bottom, color=colour, label=phase[:-3].strip())
        bottom += seconds
    ax.set_xticks(x, labels)
    ax.set(xlabel="MPI ranks", ylabel="time (s)", title=f"{stem}: time per phase")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    writer.save(fig, stem, "phases")


def draw_scaling(path, stem, writer, options):
    """Time, speedup/efficiency and phase breakdown of a scaling table."""
    header, rows = read_scaling_table(path)
    for column in ("ranks", "speedup", "efficiency"):
        if column not in header:
            raise PlotError(f"{path}: the scaling table has no '{column}' column")
    if not any(c in header for c in TIME_COLUMNS):
        raise PlotError(f"{path}: the scaling table has no time column ({' or '.join(TIME_COLUMNS)})")
    plot_scaling_time(header, rows, stem, writer)
    plot_scaling_efficiency(header, rows, stem, writer)
    plot_scaling_phases(header, rows, stem, writer)


# ---------------------------------------------------------------- command line

DRAW = {
    "results": draw_results,
    "distances": draw_distances,
    "map": draw_map,
    "gw": draw_gw,
    "scaling": draw_scaling,
}


class Parser(argparse.ArgumentParser):
    """argparse with kotml's one-line errors and exit status 2."""

    def error(self, message):
        fail(message)


def parse_arguments(argv):
    """The command line, checked; errors exit through fail()."""
    parser = Parser(prog="kotml_plot.py", description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="kotml output files")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the figures (created)")
    parser.add_argument("--format", default="png,svg", help="comma-separated: png, svg, pdf (default png,svg)")
    parser.add_argument("--top-genes", type=int, default=10, metavar="N",
                        help="genes per component in the loadings figure (default 10)")
    parser.add_argument("--dpi", type=int, default=110, metavar="D", help="PNG resolution, dots per inch (default 110)")
    options = parser.parse_args(argv)
    options.formats = [f.strip().lower() for f in options.format.split(",") if f.strip()]
    unknown = [f for f in options.formats if f not in FORMATS]
    if not options.formats or unknown:
        fail(f"--format: unknown format {', '.join(unknown) or '(none)'}; choose from {', '.join(FORMATS)}")
    if options.top_genes < 1:
        fail("--top-genes: must be at least 1")
    if not 20 <= options.dpi <= 1200:
        fail("--dpi: must be between 20 and 1200")
    return options


def main(argv):
    """Detects every input's kind first, then draws each input's figures."""
    options = parse_arguments(argv)
    setup_matplotlib()
    paths = [pathlib.Path(p) for p in options.inputs]
    try:
        kinds = [detect_kind(p) for p in paths]
        out_dir = pathlib.Path(options.out)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise PlotError(f"--out {out_dir}: cannot create the folder ({error.strerror})") from None
        writer = Writer(out_dir, options.formats, options.dpi)
        for path, kind, stem in zip(paths, kinds, output_stems(paths)):
            try:
                DRAW[kind](path, stem, writer, options)
            except PlotError:
                raise
            except (OSError, KeyError, ValueError, IndexError, TypeError) as error:
                raise PlotError(f"{path}: cannot draw this {kind} file ({type(error).__name__}: {error})") from None
        if not writer.written:
            raise PlotError("the inputs hold nothing to draw")
    except PlotError as error:
        fail(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
