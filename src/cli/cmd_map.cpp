// kotml map: pairOT's query→reference cell-type cluster mapping (map/pipeline.hpp)
// from two .h5ad files of raw counts, with the entropic problem solved on the
// tiled Sinkhorn across ranks. Outputs in --out DIR (map/outputs.hpp), a markdown
// summary on stdout, progress on stderr.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "double_option.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/version.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/map/outputs.hpp"
#include "kotml/map/pipeline.hpp"
#include "options.hpp"
#include "sinkhorn_options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

map::MapOptions map_options(const po::variables_map& vm) {
  map::MapOptions o;
  const std::string layer = option<std::string>(vm, "layer");
  o.query = {option<std::string>(vm, "query"), layer, option<std::string>(vm, "query-label-col"),
             option<std::string>(vm, "query-sample-col")};
  o.reference = {option<std::string>(vm, "reference"), layer, option<std::string>(vm, "ref-label-col"),
                 option<std::string>(vm, "ref-sample-col")};
  o.allow_non_integer = vm["allow-non-integer"].as<bool>();
  o.de.n_samples_auroc = option<std::int64_t>(vm, "n-samples-auroc");
  o.hvg.n_top_genes = option<std::int64_t>(vm, "n-top-genes");
  o.hvg.n_samples = option<std::int64_t>(vm, "n-samples-hvg");
  o.official_genes = option<std::string>(vm, "official-genes");
  o.filtered_genes = option<std::string>(vm, "filtered-genes");
  o.label.thresholds.log_fc = option<double>(vm, "logfc-threshold");
  o.label.thresholds.auroc = option<double>(vm, "auroc-threshold");
  o.label.thresholds.adj_p_value = option<double>(vm, "adj-pval-threshold");
  o.label.query.n_genes_ova = option<std::int64_t>(vm, "n-genes-ova");
  o.label.query.n_genes_ava = option<std::int64_t>(vm, "n-genes-ava");
  o.label.query.overlap_threshold = o.label.reference.overlap_threshold = option<double>(vm, "overlap-threshold");
  o.label.distance.q_norm = in_range<double>(vm, "q-norm", 0.0, 1.0);
  o.use_rep = option<std::string>(vm, "use-rep");
  o.lambda_feature = option<double>(vm, "lambda-feature");
  o.lambda_label = option<double>(vm, "lambda-label");
  o.marginals = map::parse_marginal_kind(option<std::string>(vm, "marginals"));
  o.sinkhorn = sinkhorn_options(vm);
  o.double_precision = one_of(vm, "precision", {"double", "float"}) == "double";
  o.distance_samples = option<std::int64_t>(vm, "distance-samples");
  o.seed = static_cast<std::uint64_t>(non_negative<std::int64_t>(vm, "seed"));
  o.de.seed = o.hvg.seed = o.seed;
  o.similar.threshold_mapping = option<double>(vm, "threshold-mapping");
  o.similar.threshold_distance = option<double>(vm, "threshold-distance");
  o.similar.n_top = option<std::int64_t>(vm, "n-top");
  o.validate();
  return o;
}

nlohmann::ordered_json configuration(const map::MapOptions& o, const map::MapInput& q, const map::MapInput& r,
                                     const map::MapPreprocessing& pre, const map::MapResult& result, int ranks) {
  nlohmann::ordered_json c;
  c["query"] = {{"path", o.query.path},          {"element", q.element},
                {"label_col", o.query.label_column}, {"sample_col", o.query.sample_column},
                {"cells", q.n_cells()},          {"clusters", q.n_clusters()}};
  c["reference"] = {{"path", o.reference.path},          {"element", r.element},
                    {"label_col", o.reference.label_column}, {"sample_col", o.reference.sample_column},
                    {"cells", r.n_cells()},              {"clusters", r.n_clusters()}};
  c["shared_genes"] = pre.genes.names.size();
  c["features"] = o.use_rep.empty() ? "rank" : "obsm/" + o.use_rep;
  c["n_top_genes"] = o.hvg.n_top_genes;
  c["n_samples_hvg"] = o.hvg.n_samples;
  c["n_samples_auroc"] = o.de.n_samples_auroc;
  c["gene_filtering"] = pre.gene_filtering;
  c["logfc_threshold"] = o.label.thresholds.log_fc;
  c["auroc_threshold"] = o.label.thresholds.auroc;
  c["adj_pval_threshold"] = o.label.thresholds.adj_p_value;
  c["n_genes_ova"] = o.label.query.n_genes_ova;
  c["n_genes_ava"] = o.label.query.n_genes_ava;
  c["overlap_threshold"] = o.label.query.overlap_threshold;
  c["q_norm"] = o.label.distance.q_norm;
  c["lambda_feature"] = o.lambda_feature;
  c["lambda_label"] = o.lambda_label;
  c["marginals"] = o.marginals == map::MarginalKind::balanced ? "balanced" : "uniform";
  c["epsilon"] = result.report.epsilon;
  c["relative_epsilon"] = o.sinkhorn.relative_epsilon;
  c["tau_a"] = o.sinkhorn.tau_a;
  c["tau_b"] = o.sinkhorn.tau_b;
  c["threshold"] = o.sinkhorn.threshold;
  c["inner_iterations"] = o.sinkhorn.inner_iterations;
  c["max_iterations"] = o.sinkhorn.max_iterations;
  c["updates"] = ot::updates_name(o.sinkhorn.updates);
  c["precision"] = o.double_precision ? "double" : "float";
  c["iterations"] = result.report.iterations;
  c["converged"] = result.report.converged;
  c["error"] = result.report.errors.empty() ? 0.0 : result.report.errors.back();
  c["cost_storage"] = result.report.stored ? "stored" : "online";
  c["stored_bytes"] = result.report.stored_bytes;
  c["cost_memory"] = result.report.cost_memory;
  c["sinkhorn_domain"] = result.report.scaling_domain ? "scaling" : "log";
  c["scaling_fallback"] = result.report.scaling_fallback;
  c["joint_passes"] = result.report.joint_passes;
  c["strip_bytes"] = result.report.strip_bytes;
  c["distance_samples"] = o.distance_samples;
  c["seed"] = o.seed;
  c["similar"] = {{"threshold_mapping", o.similar.threshold_mapping},
                  {"threshold_distance", o.similar.threshold_distance},
                  {"n_top", o.similar.n_top}};
  c["ranks"] = ranks;
  c["seconds"] = {{"genes", pre.seconds_genes},       {"de", pre.seconds_de},
                  {"hvg", pre.seconds_hvg},           {"label_distance", pre.seconds_label},
                  {"solve", result.seconds_solve},    {"mapping", result.seconds_mapping},
                  {"distance", result.seconds_distance}, {"transfer", result.seconds_transfer}};
  c["kotml_version"] = std::string(kotml::version_string);
  return c;
}

/// The query file with the label transfer in obs (kotml_map_label, kotml_map_score).
void write_annotated_query(const std::string& path, const map::MapInput& query, const map::MapInput& reference,
                           const map::MapResult& result) {
  io::Column label;
  label.name = "kotml_map_label";
  label.kind = io::ColumnKind::categorical;
  label.categories = reference.clusters.names;
  label.codes = result.transfer_label;
  io::Column score;
  score.name = "kotml_map_score";
  score.kind = io::ColumnKind::numeric;
  score.dtype = "float64";
  score.numbers = result.transfer_score;
  io::copy_with_obs_columns(query.path, path, {label, score});
}

int run_map(const po::variables_map& vm, const dist::Comm& comm) {
  const auto options = map_options(vm);
  const std::string out = option<std::string>(vm, "out");
  const std::string h5ad = option<std::string>(vm, "write-h5ad");
  const std::vector<std::string> inputs{options.query.path, options.reference.path};
  auto outputs =
      out_folder_files(out, {"map.h5", "mapping.csv", "distance.csv", "similar_clusters.json", "timers.json"});
  outputs.push_back({"write-h5ad", h5ad});
  check_outputs(comm, inputs, outputs, "out", out);
  // A map runs minutes between phases: it reports each phase unless --quiet.
  if (log::progress_mode() != log::ProgressMode::quiet) log::set_verbose(true);

  map::MapInput query, reference;
  std::optional<timers::Scope> timed(std::in_place, "read");
  // Each rank reads its own cells: the query's solver rows, an even block of
  // the reference (the block whose features it computes).
  query = map::read_map_input(comm, options.query, "query", options.allow_non_integer, [&](std::int64_t cells) {
    const auto rows = ot::RowBlock::of(cells, comm.size(), comm.rank());
    return dist::Block{rows.begin, rows.begin + rows.count};
  });
  reference = map::read_map_input(comm, options.reference, "reference", options.allow_non_integer,
                                  [&](std::int64_t cells) { return dist::block_of(cells, comm.size(), comm.rank()); });
  for (const auto* side : {&query, &reference})
    for (const auto& w : side->warnings) log::warn(w);
  log::info("map: " + std::to_string(query.n_cells()) + " query cells, " + std::to_string(reference.n_cells()) +
            " reference cells, " + std::to_string(comm.size()) + " rank(s)");
  comm.phase([&] {
    if (comm.is_root()) make_directories(out);
  });

  timed.emplace("preprocess");
  const auto pre = map::preprocess(comm, query, reference, options);
  for (const auto& w : pre.warnings) log::warn(w);
  for (const auto* de : {&pre.query_de, &pre.reference_de})
    for (const auto& w : de->warnings) log::warn(w);
  timed.reset();
  const auto result = map::solve_and_aggregate(comm, query, reference, pre, options);

  const auto config = configuration(options, query, reference, pre, result, comm.size());
  timers::timed("write", [&] {
    comm.phase([&] {
      if (!comm.is_root()) return;
      map::write_map_outputs(out, query, reference, pre, result, options.similar, config);
      if (!h5ad.empty()) write_annotated_query(h5ad, query, reference, result);
    });
  });
  if (!result.report.converged)
    log::warn("the Sinkhorn iterations stopped at --max-iter " + std::to_string(options.sinkhorn.max_iterations) +
              " before the error fell below --threshold; the outputs are those of the last iterate");
  log::out() << map::markdown_summary(query, reference, pre, result);
  log::out() << "\nwrote " << out << "/{mapping.csv,distance.csv,similar_clusters.json,map.h5}"
             << (h5ad.empty() ? "" : " and " + h5ad) << "\n";
  report_timers(comm, "map", out + "/timers.json");
  return 0;
}

}  // namespace

Subcommand map_subcommand() {
  Subcommand sub;
  sub.name = "map";
  sub.summary = "map query cell-type clusters onto a reference's (pairOT: DE label distance + entropic OT)";
  sub.usage =
      "[mpirun -np N] kotml map QUERY.h5ad REFERENCE.h5ad --out DIR --query-label-col C --ref-label-col C\n"
      "                 --query-sample-col S --ref-sample-col S [options]";
  sub.example =
      "mpirun -np 4 kotml map query.h5ad atlas.h5ad --out mapped --query-label-col cell_type "
      "--ref-label-col cell_type --query-sample-col donor --ref-sample-col donor";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    groups.input.add_options()
        ("query", po::value<std::string>()->required(), "query .h5ad with raw counts")
        ("reference", po::value<std::string>()->required(), "reference .h5ad with raw counts")
        ("query-label-col", po::value<std::string>()->required(), "obs column of the query's clusters")
        ("ref-label-col", po::value<std::string>()->required(), "obs column of the reference's clusters")
        ("query-sample-col", po::value<std::string>()->required(), "obs column of the query's samples (donors)")
        ("ref-sample-col", po::value<std::string>()->required(), "obs column of the reference's samples")
        ("layer", po::value<std::string>()->default_value(""), "read the counts from this layer of both files")
        ("allow-non-integer", po::bool_switch(), "accept non-integer counts with a warning")
        ("official-genes", po::value<std::string>()->default_value(""),
         "CSV (feature_name column) of official gene symbols; with --filtered-genes, markers are restricted "
         "to official, unfiltered genes (pairOT's gene_filtering, on there by default with its HGNC lists)")
        ("filtered-genes", po::value<std::string>()->default_value(""),
         "CSV (feature_name column) of genes never used as markers (mitochondrial, ribosomal, ...)")
        ("use-rep", po::value<std::string>()->default_value(""),
         "cosine on obsm[KEY] of both files instead of the rank features over the HVGs");
    groups.model.add_options()
        ("n-top-genes", po::value<std::int64_t>()->default_value(500), "highly variable genes (pairOT: 500)")
        ("n-samples-hvg", po::value<std::int64_t>()->default_value(100000),
         "cells per file for the HVG selection (0: every cell)")
        ("n-samples-auroc", po::value<std::int64_t>()->default_value(10000),
         "cells per cluster for the AUROC (seeded downsampling)")
        ("logfc-threshold", kotml::double_option(1.0), "marker filter: logFC ≥ this")
        ("auroc-threshold", kotml::double_option(0.6), "marker filter: AUROC ≥ this")
        ("adj-pval-threshold", kotml::double_option(0.05), "marker filter: BH-adjusted p ≤ this")
        ("n-genes-ova", po::value<std::int64_t>()->default_value(10), "query markers from the one-vs-all table")
        ("n-genes-ava", po::value<std::int64_t>()->default_value(3), "query markers per refining all-vs-all table")
        ("overlap-threshold", kotml::double_option(0.3), "scaled Jaccard for all-vs-all refinement")
        ("q-norm", kotml::double_option(0.33), "label distance normalised by this quantile, then clipped to 1")
        ("lambda-feature", kotml::double_option(0.5), "λ_f: weight of ½(1 − cos)")
        ("lambda-label", kotml::double_option(1.5), "λ_l: weight of the label distance")
        ("marginals", po::value<std::string>()->default_value("balanced"),
         "balanced (every cluster carries the same mass) or uniform")
        ("distance-samples", po::value<std::int64_t>()->default_value(10000),
         "cells per cluster for the block distances (seeded)")
        ("seed", po::value<std::int64_t>()->default_value(0), "seed of every sample drawn");
    groups.solver.add_options()
        ("max-iter", po::value<std::int64_t>(), "Sinkhorn iteration limit (default 2000)");
    groups.output.add_options()
        ("out", po::value<std::string>()->required(),
         "output folder: mapping.csv, distance.csv, similar_clusters.json, map.h5")
        ("threshold-mapping", kotml::double_option(0.25), "similar clusters: mapping ≥ this")
        ("threshold-distance", kotml::double_option(1.0), "similar clusters: distance ≤ this")
        ("n-top", po::value<std::int64_t>()->default_value(-1), "similar clusters: at most this many (-1: all)")
        ("write-h5ad", po::value<std::string>()->default_value(""),
         "write a copy of the query with obs['kotml_map_label'] and obs['kotml_map_score']");
    declare_sinkhorn_options(groups, "float");
    positional.add("query", 1).add("reference", 1);
  };
  sub.run = run_map;
  return sub;
}

}  // namespace kotml::cli
