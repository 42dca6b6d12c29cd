#!/usr/bin/env python3
"""Every JSON document kotml writes, checked against docs/schemas.

    run_schema_test.py KOTML SOURCE_DIR

Checks that each docs/schemas/*.schema.json is a valid JSON Schema (draft
2020-12) and not vacuous (a document with a required member removed, or with a
member kotml never writes, is rejected). Then, in a temporary folder, runs
small one-rank kotml jobs (simulate, train, train-test, test, distances,
knn-graph, apsp, gw, ot EMD and Sinkhorn, map on tests/map/fixtures) and
collects every JSON document they write: JSON lines on stdout, *.json files,
and JSON in HDF5 string attributes and string datasets of every HDF5 file in
the folder. Each must be strict JSON (no NaN or Infinity tokens, valid UTF-8),
be claimed by a schema (an unknown JSON document fails the test, so a new one
cannot go undocumented) and validate against it. Every schema file must
validate at least one document, so none can rot. A few documents that hold
the same data in two places are compared.

Exits 0 when all pass, 1 on a failure, 77 (skipped) when jsonschema or h5py
cannot be imported.
"""

import json
import pathlib
import subprocess
import sys
import tempfile

SCHEMA_DIR = pathlib.Path("docs") / "schemas"

# Where each JSON document lives, and its schema (file name without .schema.json).
# HDF5 locations are (object, attribute) for attributes and (dataset, None) for
# string datasets. The root's "configuration" holds two kinds; the command that
# wrote the file decides.
H5_DOCUMENTS = {
    ("/", "config"): lambda command: "run-config",
    ("metrics/summary_json", None): lambda command: "evaluation-summary",
    ("/", "kotml_config"): lambda command: {"knn-graph": "knn-graph-config", "apsp": "apsp-config",
                                            "gw": "gw-config"}.get(command),
    ("/", "configuration"): lambda command: {"ot": "ot-summary", "map": "map-configuration"}.get(command),
}
# *.json files by the end of their name (the --timers FILE of distances is named by the job).
FILE_DOCUMENTS = {"summary.json": "evaluation-summary", "similar_clusters.json": "similar-clusters",
                  "timers.json": "timers"}
STDOUT_DOCUMENTS = {"ot": "ot-summary"}


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from python_driver import SKIP, cannot_import, conclude, log, run_driver  # noqa: E402


def strict_json(text, where):
    """Parses text as strict JSON: NaN, Infinity and -Infinity are not JSON."""
    def refuse(token):
        raise ValueError(f"{where}: bare {token} token (not valid JSON)")
    return json.loads(text, parse_constant=refuse)


class Collector:
    def __init__(self, kotml, work):
        self.kotml = kotml
        self.work = work
        self.documents = []  # (where, schema name, document)
        self.problems = []
        self.writer = {}     # output path (relative) -> kotml subcommand that wrote it

    def problem(self, text):
        self.problems.append(text)  # printed by conclude()

    def add(self, where, schema, text):
        try:
            document = strict_json(text, where)
        except ValueError as error:
            self.problem(f"{where}: not strict JSON: {error}")
            return None
        if schema is None:
            self.problem(f"{where}: a JSON document that no schema in docs/schemas describes")
            return None
        self.documents.append((where, schema, document))
        return document

    def run(self, args, outputs=(), pretty=False):
        """Runs kotml (one rank); its stdout's JSON is collected."""
        command = args[0]
        shown = " ".join(str(a) for a in args)
        log("$ kotml " + shown)
        result = subprocess.run([str(self.kotml)] + [str(a) for a in args], cwd=self.work, capture_output=True)
        if result.returncode != 0:
            log(result.stdout.decode(errors="replace"))
            log(result.stderr.decode(errors="replace"))
            raise AssertionError(f"kotml {command} exited with {result.returncode}")
        for path in outputs:
            self.writer[str(path)] = command
        try:
            out = result.stdout.decode("utf-8")
        except UnicodeDecodeError:
            self.problem(f"stdout of kotml {shown}: not UTF-8")
            return None
        where = f"stdout of kotml {shown}"
        if command in STDOUT_DOCUMENTS:
            lines = out.splitlines()
            if pretty:
                if len(lines) < 3:
                    self.problem(f"{where}: --pretty printed {len(lines)} line(s), not an indented document")
            elif len(lines) != 1 or not out.endswith("\n"):
                self.problem(f"{where}: {len(lines)} lines; one JSON line expected")
            return self.add(where, STDOUT_DOCUMENTS[command], out)
        # Other subcommands print text; a JSON line among it would be undocumented.
        for number, line in enumerate(out.splitlines(), 1):
            if line.lstrip().startswith(("{", "[")):
                try:
                    strict_json(line, where)
                except ValueError:
                    continue
                self.add(f"{where}, line {number}", None, line)
        return out

    def sweep_files(self):
        """Every *.json file under the work folder, and every HDF5 file's JSON strings."""
        import h5py

        for path in sorted(self.work.rglob("*.json")):
            relative = path.relative_to(self.work)
            try:
                text = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                self.problem(f"{relative}: not UTF-8")
                continue
            schema = next((s for end, s in FILE_DOCUMENTS.items() if path.name.endswith(end)), None)
            self.add(str(relative), schema, text)
        for path in sorted(self.work.rglob("*")):
            if not path.is_file() or not h5py.is_hdf5(path):
                continue
            relative = str(path.relative_to(self.work))
            command = self.writer.get(relative)
            with h5py.File(path, "r") as h5:
                objects = [("/", h5)]
                h5.visititems(lambda name, obj: objects.append((name, obj)))
                for name, obj in objects:
                    for attribute, value in obj.attrs.items():
                        self.sweep_value(relative, command, (name, attribute), value)
                    if isinstance(obj, h5py.Dataset) and obj.shape == () and h5py.check_string_dtype(obj.dtype):
                        self.sweep_value(relative, command, (name, None), obj[()])

    def sweep_value(self, relative, command, location, value):
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                self.problem(f"{relative}:{location}: not UTF-8")
                return
        if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
            return
        where = f"{relative}:{location[0]}" + (f" attribute {location[1]}" if location[1] else "")
        schema = H5_DOCUMENTS[location](command) if location in H5_DOCUMENTS else None
        self.add(where, schema, value)

    def find(self, where):
        return next((document for w, _, document in self.documents if w == where), None)


def load_schemas(source_dir):
    from jsonschema import Draft202012Validator

    schemas = {}
    for path in sorted((source_dir / SCHEMA_DIR).glob("*.schema.json")):
        schema = strict_json(path.read_text(encoding="utf-8"), str(path))
        Draft202012Validator.check_schema(schema)
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            raise AssertionError(f"{path.name}: $schema must name draft 2020-12")
        schemas[path.name[: -len(".schema.json")]] = Draft202012Validator(schema)
    if not schemas:
        raise AssertionError(f"no schemas in {source_dir / SCHEMA_DIR}")
    return schemas


def not_vacuous(name, validator, document):
    """Problems when the schema accepts a damaged copy of a valid document."""
    problems = []
    if not isinstance(document, dict):
        return problems
    extra = dict(document, not_written_by_kotml=1)
    if validator.is_valid(extra):
        problems.append(f"schema {name} accepts a member kotml never writes")
    for key in validator.schema.get("required", []):
        if key in document:
            fewer = {k: v for k, v in document.items() if k != key}
            if validator.is_valid(fewer):
                problems.append(f"schema {name} accepts a document without its required '{key}'")
            break
    return problems


def write_points(path, n, m):
    import h5py
    import numpy as np

    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as h5:
        h5["x"] = rng.normal(size=(n, 3))
        h5["y"] = rng.normal(size=(m, 3)) + 0.5


def run_jobs(c, fixtures):
    """Small one-rank runs of every subcommand that writes JSON."""
    c.run(["simulate", "--kind", "scrna", "--n-genes", "60", "--n-types", "3", "--donors-per-class", "4",
           "--cells-per-donor", "40", "-o", "cohort.h5ad"], ["cohort.h5ad"])
    cohort = ["--input", "cohort.h5ad", "--n-cells", "30", "--normalize"]
    c.run(["train", *cohort, "--epochs", "2", "--out", "tr"], ["tr/results.h5"])
    c.run(["train-test", *cohort, "--epochs", "3", "--n-splits", "2", "--knn-k", "3", "--test-size", "0.4",
           "--out", "tt"],
          ["tt/results.h5"])
    (c.work / "test.ini").write_text("[test]\nn-splits = 2\nknn-k = 3\n")
    c.run(["test", *cohort, "--metric", "euclidean", "--config", "test.ini", "--out", "te"], ["te/results.h5"])
    c.run(["distances", "cohort.h5ad", "--n-cells", "30", "--normalize", "--metric", "learned", "--model",
           "tt/results.h5", "-o", "dist.h5", "--timers", "dist_timers.json"], ["dist.h5"])
    c.run(["distances", "--builtin", "gmm", "--metric", "cosine", "-o", "dist_builtin.h5"], ["dist_builtin.h5"])

    write_points(c.work / "points.h5", 48, 48)
    c.run(["knn-graph", "points.h5", "-o", "graph.h5", "--k", "5"], ["graph.h5"])
    c.run(["apsp", "graph.h5", "-o", "apsp_graph.h5", "--timers", "apsp_timers.json"], ["apsp_graph.h5"])
    c.run(["apsp", "points.h5", "-o", "apsp_cloud.h5", "--landmarks", "6", "--k", "5", "--precision", "float64"],
          ["apsp_cloud.h5"])
    gw = ["--k", "5", "--M", "10", "--max-iter", "20", "--min-iter", "5", "--epsilon", "0.01"]
    c.run(["gw", "points.h5", "-o", "gw.h5", *gw, "--plan", "topk"], ["gw.h5"])
    c.run(["gw", "points.h5", "-o", "gw_paired.h5", *gw, "--mode", "precomputed", "--paired", "--plan", "dense",
           "--timers", "gw_timers.json"],
          ["gw_paired.h5"])

    c.run(["ot", "--input", "points.h5"])
    c.run(["ot", "--input", "points.h5", "--solver", "emd", "--cost", "sqeuclidean", "--plan", "emd_plan.h5",
           "--pretty"], ["emd_plan.h5"], pretty=True)
    c.run(["ot", "--input", "points.h5", "--solver", "emd", "--max-iter", "3"])
    c.run(["ot", "--input", "points.h5", "--solver", "sinkhorn"])
    c.run(["ot", "--input", "points.h5", "--solver", "sinkhorn", "--cost", "cosine", "-o", "potentials.h5",
           "--plan", "sinkhorn_plan.h5", "--timers", "ot_timers.json"], ["potentials.h5", "sinkhorn_plan.h5"])
    c.run(["ot", "--input", "points.h5", "--solver", "sinkhorn", "--precision", "float", "--online", "--tau-a",
           "0.9", "--relative-epsilon", "--updates", "symmetric", "--max-iter", "10", "--pretty"], pretty=True)

    sides = ["--query-label-col", "cell_type", "--ref-label-col", "cell_type", "--query-sample-col", "sample",
             "--ref-sample-col", "sample", "--n-top-genes", "200", "--allow-non-integer", "--quiet"]
    query, reference = fixtures / "labels_sim_query.h5ad", fixtures / "labels_sim_reference.h5ad"
    c.run(["map", query, reference, "--out", "map", *sides], ["map/map.h5"])
    c.run(["map", query, reference, "--out", "map_top", *sides, "--n-top", "2"], ["map_top/map.h5"])


# Documents the jobs above must have produced (a job that stops writing one fails).
EXPECTED = {
    "tr/results.h5:/ attribute config": "run-config",
    "tt/results.h5:/ attribute config": "run-config",
    "te/results.h5:/ attribute config": "run-config",
    "dist.h5:/ attribute config": "run-config",
    "dist_builtin.h5:/ attribute config": "run-config",
    "tt/summary.json": "evaluation-summary",
    "te/summary.json": "evaluation-summary",
    "tt/results.h5:metrics/summary_json": "evaluation-summary",
    "te/results.h5:metrics/summary_json": "evaluation-summary",
    "graph.h5:/ attribute kotml_config": "knn-graph-config",
    "apsp_graph.h5:/ attribute kotml_config": "apsp-config",
    "apsp_cloud.h5:/ attribute kotml_config": "apsp-config",
    "gw.h5:/ attribute kotml_config": "gw-config",
    "gw_paired.h5:/ attribute kotml_config": "gw-config",
    "potentials.h5:/ attribute configuration": "ot-summary",
    "map/map.h5:/ attribute configuration": "map-configuration",
    "map_top/map.h5:/ attribute configuration": "map-configuration",
    "map/similar_clusters.json": "similar-clusters",
    "map_top/similar_clusters.json": "similar-clusters",
    "tr/timers.json": "timers",
    "tt/timers.json": "timers",
    "te/timers.json": "timers",
    "dist_timers.json": "timers",
    "apsp_timers.json": "timers",
    "gw_timers.json": "timers",
    "ot_timers.json": "timers",
    "map/timers.json": "timers",
}


def cross_checks(c):
    """The same data written in two places must agree."""
    problems = []
    for folder in ("tt", "te"):
        if c.find(f"{folder}/summary.json") != c.find(f"{folder}/results.h5:metrics/summary_json"):
            problems.append(f"{folder}: summary.json and results.h5's metrics/summary_json differ")
    stdout = [d for w, _, d in c.documents if w.startswith("stdout of kotml ot") and "-o potentials.h5" in w]
    if not stdout or stdout[0] != c.find("potentials.h5:/ attribute configuration"):
        problems.append("ot -o: the file's configuration differs from the summary printed on stdout")
    for folder in ("map", "map_top"):
        configuration = c.find(f"{folder}/map.h5:/ attribute configuration") or {}
        similar = c.find(f"{folder}/similar_clusters.json") or {}
        rule = configuration.get("similar", {})
        for key in ("threshold_mapping", "threshold_distance"):
            if similar.get(key) != rule.get(key):
                problems.append(f"{folder}: {key} differs between similar_clusters.json and map.h5")
        if similar.get("n_top", -1) != rule.get("n_top"):
            problems.append(f"{folder}: n_top differs between similar_clusters.json and map.h5")
        for method in ("mean", "jensen_shannon"):
            for query, entries in similar.get(method, {}).items():
                for entry in entries:
                    if entry["mapping"] < similar["threshold_mapping"] or \
                            entry["distance"] > similar["threshold_distance"]:
                        problems.append(f"{folder}: {method} {query} -> {entry['reference']} breaks the thresholds")
    forms = {(d.get("solver"), d.get("status")) for _, s, d in c.documents if s == "ot-summary"}
    for form in (("emd", "optimal"), ("emd", "max_iter"), ("sinkhorn", "optimal"), ("sinkhorn", "max_iter")):
        if form not in forms:
            problems.append(f"no ot summary of solver {form[0]} with status {form[1]} was checked")
    return problems


def main(kotml, source_dir):
    if cannot_import(("jsonschema", "h5py", "numpy"), "python3-jsonschema python3-h5py python3-numpy"):
        return SKIP
    # The checker itself: Python's json module reads NaN and Infinity unless told not to.
    for token in ("NaN", "Infinity", "-Infinity"):
        try:
            strict_json('{"x": %s}' % token, "self-check")
            raise AssertionError(f"the test's strict JSON reader accepted a bare {token}")
        except ValueError:
            pass
    schemas = load_schemas(source_dir)
    log(f"{len(schemas)} schemas valid under draft 2020-12: {', '.join(sorted(schemas))}")

    work = pathlib.Path(tempfile.mkdtemp(prefix="kotml_schema_test_"))
    log(f"working in {work}")
    c = Collector(kotml, work)
    run_jobs(c, source_dir / "tests" / "map" / "fixtures")
    c.sweep_files()

    used, damaged = set(), set()
    for where, name, document in c.documents:
        validator = schemas.get(name)
        if validator is None:
            c.problem(f"{where}: schema {name}.schema.json is missing")
            continue
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        for error in errors:
            path = "/".join(str(p) for p in error.absolute_path) or "(root)"
            c.problem(f"{where} against {name}: at {path}: {error.message}")
        if not errors:
            used.add(name)
            log(f"ok {where} ({name})")
            if name not in damaged:
                damaged.add(name)
                for text in not_vacuous(name, validator, document):
                    c.problem(text)
    for name in sorted(set(schemas) - used):
        c.problem(f"schema {name}.schema.json validated no document: it documents nothing kotml writes")
    found = {where: name for where, name, _ in c.documents}
    for where, name in EXPECTED.items():
        if found.get(where) != name:
            c.problem(f"{where}: expected a {name} document, found {found.get(where) or 'none'}")
    for text in cross_checks(c):
        c.problem(text)

    return conclude(c.problems, work, f"{len(c.documents)} JSON documents valid against {len(used)} schemas")


if __name__ == "__main__":
    run_driver(main, __doc__)
