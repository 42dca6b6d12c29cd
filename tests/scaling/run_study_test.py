#!/usr/bin/env python3
"""perf/scaling/study.py and slurm/collect_scaling.py end to end, at tiny sizes.

    run_study_test.py KOTML SOURCE_DIR

A strong train study (8 donors), a weak apsp study (150 nodes per rank) and a
weak apsp study grown by its work (150 * sqrt(p) nodes: 150, 212), at 1 and 2
ranks; then the tables must hold what the runs' timers say (time on the
slowest rank, speedup and efficiency by their definitions, phases and 'other'
adding up to the mean total, the peak memory the driver sampled), and --plots must draw three non-trivial PNGs per
study. Exit 0 passed, 1 failed, 77 skipped.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skipped: no matplotlib")
    sys.exit(77)


def run(argv, cwd):
    result = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(map(str, argv))}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def table_rows(text):
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


def check_study(folder, kind, problems):
    records = sorted((json.loads(p.read_text()) for p in folder.glob("*.json")), key=lambda r: r["ranks"])
    if [r["ranks"] for r in records] != [1, 2]:
        problems.append(f"{folder.name}: runs at ranks {[r['ranks'] for r in records]}, not [1, 2]")
        return
    rows = table_rows(run([sys.executable, SOURCE / "slurm" / "collect_scaling.py", folder, "--plots",
                           folder / "plots"], folder))
    t = [r["timers"]["total_seconds"]["max"] for r in records]
    for record, row in zip(records, rows):
        p = record["ranks"]
        if int(row["ranks"]) != p or row["kind"] != kind:
            problems.append(f"{folder.name}: row {row} is not the run at {p} ranks")
        if abs(float(row["time (s)"]) - t[p - 1]) > 1e-4:
            problems.append(f"{folder.name}: time {row['time (s)']} is not the slowest rank's {t[p - 1]}")
        efficiency = t[0] / t[p - 1] if kind.startswith("weak") else t[0] / (p * t[p - 1])
        if abs(float(row["efficiency"].rstrip("%")) - 100 * efficiency) > 0.51:
            problems.append(f"{folder.name}: efficiency {row['efficiency']} at {p} ranks, expected {efficiency:.0%}")
        phases = sum(float(v) for k, v in row.items() if k.endswith("(s)") and k != "time (s)")
        if abs(phases - record["timers"]["total_seconds"]["mean"]) > 1e-3 + 1e-3 * phases:
            problems.append(f"{folder.name}: the phases add up to {phases}, not the mean total "
                            f"{record['timers']['total_seconds']['mean']}")
        pss = record.get("peak_pss_bytes")
        if not (isinstance(pss, int) and pss > 2**20):
            problems.append(f"{folder.name}: peak Pss {pss!r} at {p} ranks, not the size of a running kotml")
        elif row["peak Pss (MiB)"] != f"{pss / 2**20:.0f}":
            problems.append(f"{folder.name}: peak Pss {row['peak Pss (MiB)']} MiB in the table, {pss} bytes recorded")
        expected_size = {"strong": 8, "weak": 150 * p, "weak-work": round(150 * p ** 0.5)}[kind]
        if record["size"] != expected_size:
            problems.append(f"{folder.name}: size {record['size']} at {p} ranks")
    for figure in ("time", "efficiency", "phases"):
        png = folder / "plots" / f"{records[0]['command']}_{kind}_mpirun_{figure}.png"
        if not png.exists() or png.stat().st_size < 5000:
            problems.append(f"{folder.name}: {png.name} missing or too small")


KOTML, SOURCE = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
problems = []
with tempfile.TemporaryDirectory() as work:
    work = pathlib.Path(work)
    study = [sys.executable, SOURCE / "perf" / "scaling" / "study.py", "--kotml", KOTML, "--ranks", "1,2"]
    run([*study, "--command", "train", "--kind", "strong", "--size", "8", "--cells-per-donor", "30", "--epochs", "2",
         "--out", work / "train"], work)
    run([*study, "--command", "apsp", "--kind", "weak", "--per-rank", "150", "--out", work / "apsp"], work)
    check_study(work / "train", "strong", problems)
    run([*study, "--command", "apsp", "--kind", "weak", "--weak-growth", "work", "--per-rank", "150", "--out",
         work / "apsp_work"], work)
    check_study(work / "apsp", "weak", problems)
    # Batches of fixed size: the work grows as the donors, so growth by work is refused.
    refused = subprocess.run([str(a) for a in [*study, "--command", "train-batches", "--kind", "weak",
                                                "--weak-growth", "work", "--per-rank", "8", "--out",
                                                work / "batches"]], capture_output=True, text=True)
    if refused.returncode != 2 or "--weak-growth work is for" not in refused.stderr:
        problems.append(f"train-batches with --weak-growth work: exit {refused.returncode}, {refused.stderr!r}")
    # Recorded iterations belong to sampled simulated runs.
    refused = subprocess.run([str(a) for a in [*study, "--command", "map", "--kind", "weak", "--per-rank", "100",
                                                "--smpi-recorded", "3", "--out", work / "map"]],
                             capture_output=True, text=True)
    if refused.returncode != 2 or "--smpi-recorded takes" not in refused.stderr:
        problems.append(f"--smpi-recorded without --smpi-samples: exit {refused.returncode}, {refused.stderr!r}")
    # Mixed precision is gw's option.
    refused = subprocess.run([str(a) for a in [*study, "--command", "apsp", "--kind", "weak", "--per-rank", "100",
                                                "--mixed-precision", "--out", work / "apsp_mixed"]],
                             capture_output=True, text=True)
    if refused.returncode != 2 or "--mixed-precision is for gw" not in refused.stderr:
        problems.append(f"apsp with --mixed-precision: exit {refused.returncode}, {refused.stderr!r}")
    check_study(work / "apsp_work", "weak-work", problems)
for problem in problems:
    print("FAILED:", problem)
print("passed" if not problems else f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
