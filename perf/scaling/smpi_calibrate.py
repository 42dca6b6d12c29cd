#!/usr/bin/env python3
"""Calibrates smpi/host-speed for one kotml command and validates SMPI against real runs.

    perf/scaling/smpi_calibrate.py --platform FILE [--ranks 1,2] [--repeats 3] [--json OUT] -- KOTML-ARGS...

1. Runs KOTML-ARGS for real (mpirun with the Open MPI build, build/release/src/kotml) at each
   rank count, --repeats times.
2. Runs it under SMPI (perf/scaling/smpi_run.sh, build/smpi/src/kotml) on 1 rank with
   smpi/host-speed = 1Gf, the nominal speed of the platforms' hosts, --repeats times.
   SMPI charges a computation block of t seconds of this machine's CPU time as
   t * host_speed / 1Gf simulated seconds, so the calibrated
       host_speed = 1Gf * T_real(1) / T_smpi(1, 1Gf)
   makes the simulated 1-rank time equal the measured one.
3. Runs it under SMPI with that host speed at each rank count, and reports the residuals
   (T_smpi - T_real) / T_real of the total and of each outermost phase (kotml's timers:
   the maximum over ranks; the fastest of the repeats, as perf/scaling/study.py keeps, or
   with --statistic median the medians).

The command must not name --out or --timers: the script adds --out (train, train-test, test,
map) or --timers (apsp, distances, gw, ot) in a scratch folder. Real runs use the
machine's cores (mpirun --oversubscribe when the ranks exceed them): a loaded machine
lengthens them, while SMPI charges CPU time and does not see the load. On a machine shared
with another session, the kernel's autogroups give each session an equal share whatever the
nice values, so a 2-rank run on 2 cores beside another session's build gets about 1.2
cores; run the script in its own session with a raised autogroup priority (as root):

    setsid sh -c 'echo -10 > /proc/$$/autogroup; exec perf/scaling/smpi_calibrate.py ...'
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT_COMMANDS = {"train", "train-test", "test", "map"}
TIMERS_COMMANDS = {"apsp", "distances", "gw", "ot"}


def output_args(kotml_args, folder):
    """kotml_args plus the option that makes the command write its timers; the timers path."""
    command = kotml_args[0]
    if any(a in ("--out", "--timers") or a.startswith(("--out=", "--timers=")) for a in kotml_args):
        sys.exit("smpi_calibrate.py: leave --out and --timers to the script")
    if command in OUT_COMMANDS:
        return kotml_args + ["--out", folder], os.path.join(folder, "timers.json")
    if command in TIMERS_COMMANDS:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "timers.json")
        return kotml_args + ["--timers", path], path
    sys.exit(f"smpi_calibrate.py: kotml {command} writes no timers")


def summary(timers):
    """Total and outermost phases, each the maximum over ranks."""
    phases = {p["name"]: p["seconds"]["max"] for p in timers["phases"] if p["depth"] == 0}
    return {"total": timers["total_seconds"]["max"], "phases": phases}


def real_run(kotml, ranks, args, scratch, tag):
    folder = os.path.join(scratch, tag)
    full, timers = output_args(args, folder)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", kotml] + full
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"real run failed ({done.returncode}): {' '.join(cmd)}\n{done.stdout[-3000:]}")
    with open(timers) as f:
        return summary(json.load(f))


def smpi_run(kotml, ranks, platform, host_speed, args, scratch, tag):
    folder = os.path.join(scratch, tag)
    full, _ = output_args(args, folder)
    record = os.path.join(scratch, tag + ".json")
    cmd = [os.path.join(HERE, "smpi_run.sh"), "--ranks", str(ranks), "--platform", platform,
           "--host-speed", f"{host_speed:.6g}", "--kotml", kotml, "--json", record, "--"] + full
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(record) as f:
        rec = json.load(f)
    if done.returncode != 0 or rec["timers"] is None:
        log = open(record[:-5] + ".log").read()
        sys.exit(f"SMPI run failed ({done.returncode}): {' '.join(cmd)}\n{log[-3000:]}")
    s = summary(rec["timers"])
    s["simulated_time_s"] = rec["simulated_time_s"]
    s["simulation_wall_s"] = rec["simulation_wall_s"]
    return s


STATISTIC = "min"


def median_summary(runs):
    """The fastest run (STATISTIC min) or the medians of the total and of each phase."""
    if STATISTIC == "min":
        best = min(runs, key=lambda r: r["total"])
        out = {"total": best["total"], "phases": dict(best["phases"])}
        if "simulation_wall_s" in best:
            out["simulation_wall_s"] = best["simulation_wall_s"]
    else:
        out = {"total": statistics.median(r["total"] for r in runs),
               "phases": {name: statistics.median(r["phases"].get(name, 0.0) for r in runs)
                          for name in runs[0]["phases"]}}
        if "simulation_wall_s" in runs[0]:
            out["simulation_wall_s"] = statistics.median(r["simulation_wall_s"] for r in runs)
    out["totals"] = [r["total"] for r in runs]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", required=True)
    ap.add_argument("--ranks", default="1,2", help="rank counts to validate at (default 1,2)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--real-kotml", default=os.path.join(ROOT, "build/release/src/kotml"))
    ap.add_argument("--smpi-kotml", default=os.path.join(ROOT, "build/smpi/src/kotml"))
    ap.add_argument("--statistic", choices=["min", "median"], default="min",
                    help="of the repeats: the fastest run (default) or the medians")
    ap.add_argument("--json", help="write the calibration and the residuals here")
    ap.add_argument("kotml_args", nargs=argparse.REMAINDER)
    opt = ap.parse_args()
    args = opt.kotml_args[1:] if opt.kotml_args[:1] == ["--"] else opt.kotml_args
    if not args:
        ap.error("no kotml arguments after --")
    ranks = [int(r) for r in opt.ranks.split(",")]
    global STATISTIC
    STATISTIC = opt.statistic
    nominal = 1e9  # the platforms' host speed (1Gf)

    scratch = tempfile.mkdtemp(prefix="kotml-calibrate.")
    try:
        real = {}
        for p in ranks:
            real[p] = median_summary([real_run(opt.real_kotml, p, args, scratch, f"real{p}_{i}")
                                      for i in range(opt.repeats)])
            print(f"real  {p:4d} ranks: total {real[p]['total']:.4f} s (runs {real[p]['totals']})", flush=True)
        if 1 not in real:
            real[1] = median_summary([real_run(opt.real_kotml, 1, args, scratch, f"real1_{i}")
                                      for i in range(opt.repeats)])
        base = median_summary([smpi_run(opt.smpi_kotml, 1, opt.platform, nominal, args, scratch, f"base_{i}")
                               for i in range(opt.repeats)])
        host_speed = nominal * real[1]["total"] / base["total"]
        print(f"smpi     1 rank at 1Gf: total {base['total']:.4f} s -> host speed {host_speed:.4g} flop/s",
              flush=True)
        sim, residuals = {}, {}
        for p in ranks:
            sim[p] = median_summary([smpi_run(opt.smpi_kotml, p, opt.platform, host_speed, args, scratch,
                                              f"smpi{p}_{i}") for i in range(opt.repeats)])
            res = {"total": sim[p]["total"] / real[p]["total"] - 1.0}
            for name, t in real[p]["phases"].items():
                if t >= 0.01 * real[p]["total"] and name in sim[p]["phases"]:
                    res[name] = sim[p]["phases"][name] / t - 1.0
            residuals[p] = res
            print(f"smpi  {p:4d} ranks: total {sim[p]['total']:.4f} s, residual {100 * res['total']:+.1f}% "
                  f"(phases: " + ", ".join(f"{k} {100 * v:+.1f}%" for k, v in res.items() if k != "total") + ")",
                  flush=True)
        record = {"command": args, "platform": os.path.abspath(opt.platform), "repeats": opt.repeats,
                  "statistic": opt.statistic,
                  "host_speed": host_speed, "smpi_1rank_at_1Gf": base,
                  "real": {str(p): v for p, v in real.items()}, "smpi": {str(p): v for p, v in sim.items()},
                  "residuals": {str(p): v for p, v in residuals.items()},
                  "loadavg": os.getloadavg()}
        if opt.json:
            with open(opt.json, "w") as f:
                json.dump(record, f, indent=2)
                f.write("\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
