"""What the Python-driven ctests (tests/*/run_*_test.py) share: their entry
point `run_driver(main, doc)`, called as `SCRIPT KOTML SOURCE_DIR`, and the end
of a run, `conclude`. Exit 0 passed, 1 failed, 77 skipped (the scripts exit 77
themselves when a module is missing)."""
import importlib.util
import pathlib
import shutil
import sys

SKIP = 77


def log(message):
    print(message, flush=True)


def cannot_import(modules, packages):
    """True (after saying why the test is skipped) when this Python lacks one of
    the modules; `packages` are Debian's names for them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        log(f"skipped: {sys.executable} cannot import {', '.join(missing)} (install {packages})")
    return bool(missing)


def conclude(problems, work, summary):
    """Prints each problem; keeps the outputs for a failed run, removes them
    after a passed one. Returns the exit code."""
    for problem in problems:
        log("FAILED " + problem)
    if problems:
        log(f"{len(problems)} problem(s); outputs kept in {work}")
        return 1
    log(summary)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def run_driver(main, doc):
    """sys.exit(main(kotml, source_dir)); a failed assertion is a failed test."""
    if len(sys.argv) != 3:
        sys.exit(doc)
    try:
        sys.exit(main(pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()))
    except AssertionError as error:
        log(f"FAILED {error}")
        sys.exit(1)
