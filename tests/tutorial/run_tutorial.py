#!/usr/bin/env python3
"""Runs the ```sh blocks of docs/tutorial.md, in order, as one shell script.

    run_tutorial.py --tutorial docs/tutorial.md --repo ROOT --kotml BUILT_KOTML \
                    --data SHARED_DATA [--mpirun "mpiexec -n 1 ..."] [--plot-python PY]
                    [--full] [--keep DIR]

The script runs under `sh -e -x` in the repository root with DATA, KOTML, MPIRUN,
PYTHON and WORK (a fresh temporary folder) set in the environment, and the
tutorial's size variables reduced (unless --full), so that the whole tutorial
takes well under two minutes on two cores. Afterwards every output the tutorial
promises must exist under WORK.

Exit status: 0 passed, 1 failed, 77 skipped (the data folder or one of its
files is absent). When the plot Python lacks numpy, h5py or matplotlib, the
tutorial's Python commands ("$PYTHON" ..., with their here-documents) and the
kotml map step that needs the files written by one of them are replaced by a
message and the rest still runs. Standard library only.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77

DATA_FILES = ["kidney_igan_glomeruli.h5ad", "snareseq_rna.h5ad", "snareseq_atac.h5ad",
              "glioblastoma_lemur.h5ad"]

# Reduced sizes: 77 patients (>= 75 glomeruli), 3 epochs, 2 splits; 20 GW iterations.
REDUCED = {"N_CELLS": "75", "EPOCHS": "3", "N_SPLITS": "2", "GW_M": "1000", "GW_MAX_ITER": "20"}

# What the tutorial writes under WORK: always, and with a plotting Python.
EXPECTED = ["kidney_pca.h5ad", "kidney/metrics.csv", "kidney/summary.json", "kidney/results.h5",
            "dist_learned.h5", "dist_euclidean.h5", "snare_gw.h5"]
EXPECTED_WITH_PYTHON = ["gbm_query.h5ad", "gbm_reference.h5ad", "gbm_query_mapped.h5ad",
                        "map/mapping.csv", "map/distance.csv", "map/similar_clusters.json",
                        "map/map.h5"]
FIGURES = ["results_training", "results_metrics", "results_loadings", "dist_learned_mds",
           "dist_learned_heatmap", "dist_euclidean_mds", "dist_euclidean_heatmap",
           "snare_gw_matches", "map_mapping_mean", "map_distance", "map_sankey"]

# The tutorial's own output lines checked in the log (a regression that still
# writes files but prints nonsense should fail too).
EXPECTED_OUTPUT = [r"\| ggml \(emd\) \|", r"\| euclidean \|", r"gw: 1047 x 1047 .*FOSCTTM 0\.\d{4}",
                   r"wrote .*kidney_pca\.h5ad"]
EXPECTED_OUTPUT_WITH_PYTHON = [r"FOSCTTM 0\.\d+", r"best match in the same cell line: 0\.\d+",
                               r"\| ctrl \| 1000 \|", r"all: 0\.\d+"]


def sh_blocks(markdown):
    """The bodies of the ```sh fenced blocks, in order."""
    return re.findall(r"^```sh[ \t]*\n(.*?)^```[ \t]*$", markdown, flags=re.S | re.M)


def is_python_command(line):
    return re.match(r'\s*"?\$\{?PYTHON\}?"?\s', line) is not None


def without_python(lines):
    """Lines with every "$PYTHON" command (and its here-document or continuation
    lines) and the kotml map command (its inputs come from a Python step)
    replaced by a message."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if is_python_command(line) or re.search(r"\$\{?KOTML\}?\s+map\b", line):
            command = [line]
            heredoc = re.search(r"<<-?\s*'?\"?(\w+)'?\"?", line)
            while command[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                command.append(lines[i])
            if heredoc:
                end = heredoc.group(1)
                while i + 1 < len(lines) and lines[i].strip() != end:
                    i += 1
            what = "plot/Python step" if is_python_command(line) else "kotml map (needs the Python split)"
            out.append(f"echo 'run_tutorial: skipped {what}: no numpy/h5py/matplotlib' >&2")
        else:
            out.append(line)
        i += 1
    return out


def python_has_modules(python):
    if not python or not shutil.which(python) and not os.path.exists(python):
        return False
    return subprocess.run([python, "-c", "import numpy, h5py, matplotlib"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tutorial", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--kotml", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--mpirun", default="", help="MPIRUN for the tutorial (empty: no mpirun)")
    parser.add_argument("--plot-python", default="/usr/bin/python3")
    parser.add_argument("--full", action="store_true", help="the tutorial's own sizes")
    parser.add_argument("--keep", help="use this folder as WORK and keep it")
    args = parser.parse_args()

    data = pathlib.Path(args.data)
    missing = [name for name in DATA_FILES if not (data / name).is_file()]
    if missing:
        print(f"skipped: the shared data folder {data} lacks {', '.join(missing)} "
              "(set KOTML_SHARED_DATA_DIR at configure time)")
        return SKIP

    markdown = pathlib.Path(args.tutorial).read_text(encoding="utf-8")
    blocks = sh_blocks(markdown)
    if not blocks:
        print(f"FAIL: no ```sh blocks in {args.tutorial}")
        return 1
    lines = "\n".join(blocks).splitlines()
    have_python = python_has_modules(args.plot_python)
    if not have_python:
        print(f"note: {args.plot_python or '(none)'} cannot import numpy, h5py and matplotlib; "
              "the plotting and Python lines are skipped, the kotml lines still run")
        lines = without_python(lines)

    work = pathlib.Path(args.keep) if args.keep else pathlib.Path(tempfile.mkdtemp(prefix="kotml-tutorial-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update({"DATA": str(data.resolve()), "KOTML": str(pathlib.Path(args.kotml).resolve()),
                "MPIRUN": args.mpirun, "PYTHON": args.plot_python, "WORK": str(work)})
    if not args.full:
        env.update(REDUCED)
    script = work / "tutorial.sh"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"running {len(blocks)} sh blocks of {args.tutorial} in {args.repo}, WORK={work}"
          + ("" if args.full else " (reduced: " + " ".join(f"{k}={v}" for k, v in REDUCED.items()) + ")"),
          flush=True)
    start = time.monotonic()
    run = subprocess.run(["sh", "-e", "-x", str(script)], cwd=args.repo, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    print(run.stdout)
    failures = []
    if run.returncode != 0:
        failures.append(f"the tutorial's commands stopped with status {run.returncode} "
                        "(the last '+ ' line above is the command that failed)")
    else:
        expected = EXPECTED + (EXPECTED_WITH_PYTHON if have_python else [])
        failures += [f"missing output {work / p}" for p in expected if not (work / p).is_file()]
        if have_python:
            for stem in FIGURES:
                for ext in ("png", "svg"):
                    figure = work / "figures" / f"{stem}.{ext}"
                    if not figure.is_file() or figure.stat().st_size < 1000:
                        failures.append(f"missing or empty figure {figure}")
        patterns = EXPECTED_OUTPUT + (EXPECTED_OUTPUT_WITH_PYTHON if have_python else [])
        failures += [f"no line matching /{p}/ in the output" for p in patterns
                     if not re.search(p, run.stdout)]
    print(f"tutorial: {seconds:.1f} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print("PASS" + ("" if have_python else " (without the Python steps)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
