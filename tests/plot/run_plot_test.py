#!/usr/bin/env python3
"""End-to-end test of tools/kotml_plot.py on real kotml outputs.

    run_plot_test.py KOTML SOURCE_DIR

In a temporary folder: kotml simulate, train-test, test, distances, gw (spiral
-> Swiss roll) and map (tests/map/fixtures), and a strong-scaling table made by
slurm/collect_scaling.py from a synthetic study folder; then kotml_plot.py on
all of them. Every expected figure must exist, be large enough, and not be
blank (a PNG needs a spread of pixel values and many distinct colours); an
unknown input must give one error line and exit 2. Exits 77 (skipped) when
numpy, h5py or matplotlib cannot be imported, 1 on a failure.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

MIN_PNG_BYTES = 5000
MIN_SVG_BYTES = 2000
MIN_PIXEL_SD = 0.05
MIN_COLOURS = 16


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from python_driver import SKIP, cannot_import, conclude, log, run_driver  # noqa: E402


def run(args, cwd, what):
    """Runs a command, failing the test with its output when it exits non-zero."""
    log("$ " + " ".join(str(a) for a in args))
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        log(result.stdout)
        log(result.stderr)
        raise AssertionError(f"{what} exited with {result.returncode}")
    return result


def write_clouds(path, n_source, n_target):
    """A noisy 2-D spiral as /x and a 3-D Swiss roll as /y (TorchGW's benchmark law)."""
    import h5py
    import numpy as np

    def curve(n, seed, depth):
        rng = np.random.default_rng(seed)
        r, theta = np.linspace(0.3, 1.0, n), np.linspace(0.0, 9.0, n)
        noise = rng.standard_normal((n, 2)) * 0.05
        x, y = (r + noise[:, 0]) * np.cos(theta), (r + noise[:, 1]) * np.sin(theta)
        return np.column_stack([x, rng.uniform(size=n), y]) if depth else np.column_stack([x, y])

    with h5py.File(path, "w") as h5:
        h5["x"] = curve(n_source, 0, False)
        h5["y"] = curve(n_target, 1, True)


def write_study(folder):
    """Four runs (1, 2, 4, 8 ranks) in collect_scaling.py's layout: job.json and
    train_test/summary.json. The times are synthetic (T(p) = 2 s / p^0.85)."""
    for ranks in (1, 2, 4, 8):
        run_dir = folder / f"local_n1_r{ranks}_t1"
        (run_dir / "train_test").mkdir(parents=True)
        job = {"job": "local", "nodes": 1, "ranks": ranks, "threads_per_rank": 1, "gpus_per_rank": 0}
        (run_dir / "job.json").write_text(json.dumps(job))
        summary = {"epoch_time_s": {"mean": 2.0 / ranks ** 0.85, "sd": 0.02},
                   "knn_acc": {"mean": 0.9, "sd": 0.05}}
        (run_dir / "train_test" / "summary.json").write_text(json.dumps(summary))


def with_phases(table):
    """collect_scaling.py's table with two phase columns appended ('<name> (s)')."""
    lines = table.strip().splitlines()
    out = [lines[0] + " ot solve (s) | gradient (s) |", lines[1] + "---|---|"]
    for line in lines[2:]:
        time = float(line.split("|")[5].split("±")[0])
        out.append(line + f" {0.8 * time:.4f} | {0.2 * time:.4f} |")
    return "\n".join(out) + "\n"


def check_image(path):
    """A problem with one figure file, or None."""
    import matplotlib.image

    if not path.is_file():
        return "missing"
    size = path.stat().st_size
    if path.suffix == ".svg":
        text = path.read_text(encoding="utf-8")
        if size < MIN_SVG_BYTES or "<svg" not in text:
            return f"not a plausible SVG ({size} bytes)"
        return None
    if size < MIN_PNG_BYTES:
        return f"only {size} bytes"
    return blank_problem(matplotlib.image.imread(path))


def blank_problem(pixels):
    """'blank (...)' when an image's pixels barely vary or use few colours, else None."""
    import numpy as np

    rgb = pixels[..., :3]
    sd = float(rgb.std())
    colours = len(np.unique((rgb * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    if sd < MIN_PIXEL_SD or colours < MIN_COLOURS:
        return f"blank (pixel SD {sd:.3f}, {colours} distinct colours)"
    return None


def check_checker(folder):
    """The blank-image check must reject an empty figure and accept a drawn one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image
    import matplotlib.pyplot as plt
    import numpy as np

    for name, draw, want_blank in (("empty", lambda ax: ax.axis("off"), True),
                                   ("drawn", lambda ax: ax.imshow(np.arange(400.0).reshape(20, 20)), False)):
        fig, ax = plt.subplots(figsize=(6, 4))
        draw(ax)
        fig.savefig(folder / f"{name}.png")
        plt.close(fig)
        blank = blank_problem(matplotlib.image.imread(folder / f"{name}.png")) is not None
        if blank != want_blank:
            raise AssertionError(f"the test's blank-image check is wrong about an {name} figure")


def main(kotml, source_dir):
    if cannot_import(("numpy", "h5py", "matplotlib"), "python3-matplotlib python3-h5py python3-numpy"):
        return SKIP
    work = pathlib.Path(tempfile.mkdtemp(prefix="kotml_plot_test_"))
    # matplotlib's cache goes to the temporary folder, not a possibly read-only HOME.
    os.environ["MPLCONFIGDIR"] = str(work / "mplconfig")
    os.environ["MPLBACKEND"] = "Agg"
    python = sys.executable
    plot = source_dir / "tools" / "kotml_plot.py"
    fixtures = source_dir / "tests" / "map" / "fixtures"
    log(f"working in {work}")
    check_checker(work)

    # kotml outputs, one rank, tiny sizes.
    run([kotml, "simulate", "--kind", "scrna", "--n-genes", "120", "--n-types", "3", "--donors-per-class", "5",
         "--cells-per-donor", "60", "-o", "cohort.h5ad"], work, "kotml simulate")
    run([kotml, "train-test", "--input", "cohort.h5ad", "--n-cells", "40", "--normalize", "--epochs", "4",
         "--n-splits", "2", "--out", "tt"], work, "kotml train-test")
    run([kotml, "test", "--input", "cohort.h5ad", "--n-cells", "40", "--metric", "euclidean", "--n-splits", "2",
         "--out", "te"], work, "kotml test")
    run([kotml, "distances", "cohort.h5ad", "--n-cells", "40", "--normalize", "--metric", "learned", "--model",
         "tt/results.h5", "-o", "dist.h5"], work, "kotml distances")
    write_clouds(work / "pair.h5", 120, 150)
    run([kotml, "gw", "pair.h5", "-o", "gw.h5", "--mode", "precomputed", "--k", "5", "--M", "30", "--max-iter",
         "40", "--min-iter", "10", "--epsilon", "0.01", "--plan", "topk"], work, "kotml gw")
    run([kotml, "map", fixtures / "labels_sim_query.h5ad", fixtures / "labels_sim_reference.h5ad", "--out", "map",
         "--query-label-col", "cell_type", "--ref-label-col", "cell_type", "--query-sample-col", "sample",
         "--ref-sample-col", "sample", "--n-top-genes", "200", "--allow-non-integer", "--quiet"], work, "kotml map")
    write_study(work / "study")
    table = run([python, source_dir / "slurm" / "collect_scaling.py", "study"], work, "collect_scaling.py").stdout
    (work / "scaling.md").write_text(table)
    (work / "scaling_phases.md").write_text(with_phases(table))

    inputs = ["tt/results.h5", "te/results.h5", "dist.h5", "map/map.h5", "gw.h5", "scaling.md", "scaling_phases.md"]
    result = run([python, plot, *inputs, "--out", "figures", "--format", "png,svg", "--top-genes", "8"], work,
                 "kotml_plot.py")
    expected = {
        "tt_results": ["training", "metrics", "loadings"],
        "te_results": ["metrics"],
        "dist": ["mds", "heatmap"],
        "map": ["mapping_mean", "mapping_transported_mass", "mapping_jensen_shannon", "distance", "sankey"],
        "gw": ["matches"],
        "scaling": ["time", "efficiency"],
        "scaling_phases": ["time", "efficiency", "phases"],
    }
    names = {f"{stem}_{plot_name}.{fmt}" for stem, plots in expected.items() for plot_name in plots
             for fmt in ("png", "svg")}
    figures = work / "figures"
    problems = [f"{name}: {problem}" for name in sorted(names)
                if (problem := check_image(figures / name)) is not None]
    written = {p.name for p in figures.iterdir()}
    problems += [f"{name}: not expected" for name in sorted(written - names)]
    reported = [line for line in result.stderr.splitlines() if line.startswith("kotml_plot: wrote ")]
    if len(reported) != len(written):
        problems.append(f"{len(reported)} 'wrote' lines on stderr for {len(written)} files")

    # An unknown input: one error line, exit status 2, nothing written.
    bad = subprocess.run([python, plot, str(work / "pair.h5"), "--out", str(work / "bad")], capture_output=True,
                         text=True)
    lines = bad.stderr.strip().splitlines()
    if bad.returncode != 2 or len(lines) != 1 or not lines[0].startswith("kotml_plot: error: "):
        problems.append(f"unknown input: exit {bad.returncode}, stderr {bad.stderr!r}")

    return conclude(problems, work, f"{len(names)} figures checked")


if __name__ == "__main__":
    run_driver(main, __doc__)
