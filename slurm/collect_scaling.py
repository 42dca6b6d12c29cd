"""Scaling table from the runs of slurm/cpu_openmp.sbatch or slurm/gpu_cuda.sbatch.

    python3 slurm/collect_scaling.py results/<STUDY>

Reads every <run>/job.json and <run>/train_test/summary.json below the folder and
prints one markdown row per run, sorted by ranks: nodes, ranks, threads and GPUs
per rank, epoch time (mean ± SD over splits), speedup S(p) = T(p0)·p0 / T(p) and
efficiency S(p)/p relative to the run with the fewest ranks (strong scaling: the
runs must share the input and options), and knn_acc. Standard library only.
"""

import json
import pathlib
import sys


def main(folder):
    rows = []
    for job in sorted(pathlib.Path(folder).glob("*/job.json")):
        summary = job.parent / "train_test" / "summary.json"
        if not summary.exists():
            continue
        info = json.loads(job.read_text())
        result = json.loads(summary.read_text())
        rows.append((info, result))
    if not rows:
        sys.exit(f"no finished runs (job.json + train_test/summary.json) below {folder}")
    rows.sort(key=lambda r: (r[0]["ranks"], r[0]["job"]))
    base = rows[0]
    p0, t0 = base[0]["ranks"], base[1]["epoch_time_s"]["mean"]
    print("| nodes | ranks | threads/rank | GPUs/rank | epoch time (s) | speedup | efficiency | knn_acc |")
    print("|---|---|---|---|---|---|---|---|")
    for info, result in rows:
        t = result["epoch_time_s"]["mean"]
        speedup = t0 * p0 / t
        print(f"| {info['nodes']} | {info['ranks']} | {info['threads_per_rank']} | {info['gpus_per_rank']} | "
              f"{t:.4f} ± {result['epoch_time_s']['sd']:.4f} | {speedup:.2f} | {speedup / info['ranks']:.0%} | "
              f"{result['knn_acc']['mean']:.2f} ± {result['knn_acc']['sd']:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
