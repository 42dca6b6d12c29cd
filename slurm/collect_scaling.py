"""Scaling tables from a folder of runs, and their plots.

    python3 slurm/collect_scaling.py results/<STUDY> [--plots DIR]

Two kinds of runs are read, each giving one markdown table, rows sorted by ranks:

- Slurm runs of slurm/cpu_openmp.sbatch or slurm/gpu_cuda.sbatch: every
  <run>/job.json with its <run>/train_test/summary.json. Columns: nodes, ranks,
  threads and GPUs per rank, epoch time (mean ± SD over splits), speedup
  S(p) = T(p0)·p0 / T(p) and efficiency S(p)/p relative to the run with the
  fewest ranks (strong scaling: the runs share the input and options), knn_acc.
- Runs of perf/scaling/study.py: every <name>.json holding kotml's timers. T(p)
  is the command's time on its slowest rank. Strong: speedup T(p0)·p0 / T(p) and
  efficiency T(p0)·p0 / (p·T(p)); weak (the problem grows with the ranks):
  efficiency T(p0) / T(p) and scaled speedup (p/p0)·efficiency; 'weak-work' marks
  weak runs whose problem grew as the work (study.py --weak-growth work: each
  rank's share of an all-pairs problem fixed), 'weak' those that grew as the
  units. Then the peak proportional set size of the run's processes (MiB, as
  study.py sampled it: what the machine held, a simulated run's folded buffers
  counted once; '–' in records made before it was measured), and one column
  per outermost phase of kotml's timer table (mean seconds over ranks), and
  'other', so that the phases add up to the mean total.

--plots DIR draws time, speedup/efficiency and the stacked phases against
ranks for each table as PNG (tools/kotml_plot.py; needs matplotlib). The tables
need the standard library only.
"""

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def slurm_table(folder):
    rows = []
    for job in sorted(pathlib.Path(folder).glob("*/job.json")):
        summary = job.parent / "train_test" / "summary.json"
        if not summary.exists():
            continue
        rows.append((json.loads(job.read_text()), json.loads(summary.read_text())))
    if not rows:
        return None
    rows.sort(key=lambda r: (r[0]["ranks"], r[0]["job"]))
    p0, t0 = rows[0][0]["ranks"], rows[0][1]["epoch_time_s"]["mean"]
    lines = ["| nodes | ranks | threads/rank | GPUs/rank | epoch time (s) | speedup | efficiency | knn_acc |",
             "|---|---|---|---|---|---|---|---|"]
    for info, result in rows:
        t = result["epoch_time_s"]["mean"]
        speedup = t0 * p0 / t
        lines.append(f"| {info['nodes']} | {info['ranks']} | {info['threads_per_rank']} | {info['gpus_per_rank']} | "
                     f"{t:.4f} ± {result['epoch_time_s']['sd']:.4f} | {speedup:.2f} | {speedup / info['ranks']:.0%} | "
                     f"{result['knn_acc']['mean']:.2f} ± {result['knn_acc']['sd']:.2f} |")
    return "\n".join(lines)


def kind_of(record):
    """strong, weak (units per rank fixed) or weak-work (work per rank fixed)."""
    return "weak-work" if record["kind"] == "weak" and record.get("weak_growth") == "work" else record["kind"]


def study_runs(folder):
    """The study.py records below the folder, grouped by (command, kind, launcher)."""
    groups = {}
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(record, dict) or "timers" not in record or "ranks" not in record:
            continue
        groups.setdefault((record["command"], kind_of(record), record["launcher"]), []).append(record)
    return groups


def study_table(records):
    records = sorted(records, key=lambda r: r["ranks"])
    # The outermost phases of every run, in first-seen order.
    phases = []
    for r in records:
        for phase in r["timers"]["phases"]:
            if phase["depth"] == 0 and phase["name"] not in phases:
                phases.append(phase["name"])
    phases.append("other")
    base = records[0]
    p0, t0 = base["ranks"], base["timers"]["total_seconds"]["max"]
    weak = base["kind"] == "weak"
    header = ["nodes", "ranks", "command", "kind", "size", "time (s)", "speedup", "efficiency", "peak Pss (MiB)"]
    header += [f"{name} (s)" for name in phases]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in records:
        p, t = r["ranks"], r["timers"]["total_seconds"]["max"]
        efficiency = t0 / t if weak else t0 * p0 / (p * t)
        speedup = p / p0 * efficiency if weak else t0 * p0 / t
        seconds = {phase["name"]: phase["seconds"]["mean"] for phase in r["timers"]["phases"]}
        seconds["other"] = r["timers"]["other"]["seconds"]["mean"]
        # One simulated host per rank under SimGrid; this machine otherwise.
        nodes = p if r["launcher"] == "smpi" else 1
        cells = [str(nodes), str(p), r["command"], kind_of(r), f"{r['size']} {r['unit']}", f"{t:.4f}",
                 f"{speedup:.2f}", f"{efficiency:.0%}"]
        # What the machine held for the run (study.py); a record made before it was measured has none.
        pss = r.get("peak_pss_bytes")
        cells.append(f"{pss / 2**20:.0f}" if pss else "–")
        cells += [f"{seconds.get(name, 0.0):.4f}" for name in phases]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draw(table, name, plots):
    plots.mkdir(parents=True, exist_ok=True)
    source = plots / f"{name}.md"
    source.write_text(table + "\n")
    subprocess.run([sys.executable, str(ROOT / "tools" / "kotml_plot.py"), str(source), "--out", str(plots),
                    "--format", "png"], check=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--plots", type=pathlib.Path, help="also draw each table's figures (PNG) into this folder")
    args = parser.parse_args(argv)
    tables = []
    slurm = slurm_table(args.folder)
    if slurm:
        tables.append(("slurm", slurm))
    for (command, kind, launcher), records in sorted(study_runs(args.folder).items()):
        tables.append((f"{command}_{kind}_{launcher}", study_table(records)))
    if not tables:
        sys.exit(f"no finished runs below {args.folder} (job.json + train_test/summary.json, "
                 "or the RUN.json files of perf/scaling/study.py)")
    for i, (name, table) in enumerate(tables):
        if len(tables) > 1:
            print(("\n" if i else "") + f"{name}:\n")
        print(table)
        if args.plots:
            draw(table, name, args.plots)


if __name__ == "__main__":
    main(sys.argv[1:])
