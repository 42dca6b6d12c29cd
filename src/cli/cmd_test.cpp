// kotml test: GGML-OT's test(): the train/test protocol with a fixed ground
// metric (a learned A from a results.h5, or the Euclidean or cosine cost on
// the raw features): kNN accuracy and clustering scores per split, no training.

#include <cstdio>
#include <optional>
#include <string>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "cohort_options.hpp"
#include "kotml/data/cohort_reader.hpp"
#include "kotml/stage/donor_store.hpp"
#include "metric_options.hpp"
#include "kotml/eval/protocol.hpp"
#include "protocol_options.hpp"
#include "kotml/eval/summary.hpp"
#include "cohort_input.hpp"
#include "kotml/study/results.hpp"
#include "run_config.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {

Subcommand test_subcommand() {
  Subcommand sub;
  sub.name = "test";
  sub.summary = "evaluate a fixed ground metric (learned, euclidean, cosine) on stratified donor splits";
  sub.usage = "[mpirun -np N] kotml test INPUT.h5ad --metric learned --model results.h5 [--out DIR]";
  sub.example = "mpirun -np 4 kotml test cohort.h5ad --metric learned --model run/results.h5 --out eval";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    data::declare_cohort_options(groups, &positional);
    learn::declare_builtin_option(groups);
    eval::declare_metric_options(groups);
    eval::declare_protocol_options(groups);
    groups.output.add_options()
        ("out", po::value<std::string>()->default_value(""),
                       "output folder: metrics.csv, summary.json, results.h5 (optional)");
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const auto cohort_options = learn::cohort_options_or_builtin(vm);
    const auto protocol = eval::protocol_options_from(vm);
    const auto settings = eval::ot_settings_from(vm);
    const std::string out = vm["out"].as<std::string>();
    eval::GroundMetric metric;
    metric.kind = eval::parse_metric_kind(vm["metric"].as<std::string>());
    metric.squared = vm["squared"].as<bool>();
    const std::string model = vm["model"].as<std::string>();
    if (!out.empty())
      check_outputs(comm, {cohort_options.input, model}, evaluation_outputs(out), "out", out);
    if (metric.kind == eval::GroundMetric::Kind::learned) {
      if (model.empty()) throw Error::option("model", "--metric learned needs the results.h5 of a training run");
      comm.phase([&] { metric.a = study::read_metric(model); });
    } else if (!model.empty()) {
      throw Error::option("model", "applies to --metric learned only");
    } else if (metric.squared) {
      throw Error::option("squared", "applies to --metric learned only");
    }
    std::optional<data::CohortReader> reader;
    timers::timed("read", [&] { reader.emplace(cohort_options, comm); });
    const auto& cohort = reader->cohort();
    if (metric.kind == eval::GroundMetric::Kind::learned && static_cast<std::int64_t>(metric.a.extent(1)) != cohort.dim)
      throw Error(model, "A", "the metric has " + std::to_string(metric.a.extent(1)) + " columns but the cohort has " +
                                  std::to_string(cohort.dim) + " features");
    const auto splits = eval::protocol_splits(cohort, protocol);
    if (!out.empty()) learn::prepare_output_dir(out, comm);
    log::out() << data::describe(cohort);
    study::RunRecord run;
    run.subcommand = "test";
    run.config = learn::effective_config(vm, "test", comm.size());
    for (int s = 0; s < static_cast<int>(splits.size()); ++s) {
      const auto& split = splits[static_cast<std::size_t>(s)];
      // Each split's pairs are placed afresh: this rank holds only their donors.
      timers::timed("read", [&] {
        reader->hold(eval::distance_donors_to_hold(cohort, eval::split_donors(split), comm.size(), comm.rank()));
      });
      const auto store = timers::timed(
          "stage", [&] { return stage::DonorStore(reader->cohort_for_staging(), stage::DonorStore::take_points); });
      const auto scores = timers::timed(
          "evaluate", [&] { return eval::score_split(cohort, store, metric, settings, split, protocol.knn_k, comm); });
      auto record = eval::split_record(s, split, scores);
      run.metrics.push_back(record);
      char line[160];
      std::snprintf(line, sizeof line, "split %d: knn_acc %.3f, mi %.3f, ari %.3f, vi %.3f\n", s, scores.knn_acc,
                    scores.mi, scores.ari, scores.vi);
      log::out() << line << std::flush;
    }
    const auto summary = eval::summarize(run.metrics, comm.size());
    log::out() << "\n" << eval::markdown_table({{metric.name(), summary}}) << std::flush;
    run.summary = eval::summary_json(summary);
    if (metric.kind == eval::GroundMetric::Kind::learned) run.a = metric.a;
    timers::timed("write", [&] {
      comm.phase([&] {
        if (!comm.is_root() || out.empty()) return;
        write_text_atomically(out + "/metrics.csv", eval::metrics_csv(run.metrics));
        write_text_atomically(out + "/summary.json", json_text(run.summary, 2) + "\n");
        study::write_results(out + "/results.h5", cohort, run);
      });
    });
    if (!out.empty()) log::out() << "wrote " << out << "/{metrics.csv, summary.json, results.h5, timers.json}\n";
    report_timers(comm, "test", out.empty() ? "" : out + "/timers.json");
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
