// kotml train-test: GGML-OT's train_test. For each stratified donor split,
// train A on the training donors, compute the OT distances over training and
// test donors under A, and score them (kNN accuracy, NMI, ARI, VI); print the
// mean ± SD table and write metrics.csv, summary.json and results.h5.

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "cohort_options.hpp"
#include "kotml/data/cohort_reader.hpp"
#include "kotml/eval/protocol.hpp"
#include "protocol_options.hpp"
#include "kotml/eval/summary.hpp"
#include "cohort_input.hpp"
#include "kotml/study/results.hpp"
#include "run_config.hpp"
#include "train_options.hpp"
#include "kotml/study/train_test.hpp"
#include "kotml/learn/trainer.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

std::string setup_name(const learn::TrainOptions& o) {
  if (o.ot.exact()) return "ggml (emd)";
  char text[64];
  std::snprintf(text, sizeof text, "ggml (sinkhorn %g)", o.ot.entropic_reg);
  return text;
}

}  // namespace

Subcommand train_test_subcommand() {
  Subcommand sub;
  sub.name = "train-test";
  sub.summary = "train and evaluate the metric on stratified donor splits (kNN, NMI, ARI, VI, epoch time)";
  sub.usage = "[mpirun -np N] kotml train-test INPUT.h5ad|--builtin toy2d [--out DIR] [options]";
  sub.example = "mpirun -np 4 kotml train-test cohort.h5ad --patient-col donor --label-col status --n-splits 5 --out run";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    data::declare_cohort_options(groups, &positional);
    learn::declare_builtin_option(groups);
    learn::declare_train_options(groups);
    eval::declare_protocol_options(groups);
    groups.output.add_options()
        ("out", po::value<std::string>()->default_value(""),
         "output folder: metrics.csv, summary.json, results.h5 (optional)")
        ("write-h5ad", po::value<std::string>()->default_value(""),
         "also write a copy of the input annotated with the best split's metric")
        ("top-genes", po::value<std::int64_t>()->default_value(20), "genes listed per component in results.h5");
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const auto cohort_options = learn::cohort_options_or_builtin(vm);
    auto options = learn::train_options_from(vm);
    const auto protocol = eval::protocol_options_from(vm);
    const std::string out = vm["out"].as<std::string>();
    const std::string h5ad = vm["write-h5ad"].as<std::string>();
    const auto top = positive<std::int64_t>(vm, "top-genes");
    if ((options.checkpoint_every > 0 || vm["restart"].as<bool>()) && out.empty() && options.checkpoint_path.empty())
      throw Error::option("checkpoint", "checkpoints need --out or --checkpoint");
    if (options.checkpoint_path.empty() && !out.empty()) options.checkpoint_path = out + "/checkpoint.h5";
    if (!h5ad.empty() && cohort_options.builtin != data::BuiltinCohort::none)
      throw Error::option("write-h5ad", "needs an --input .h5ad to copy");
    std::vector<OutputFile> outputs = out.empty() ? std::vector<OutputFile>{} : evaluation_outputs(out);
    outputs.push_back({"write-h5ad", h5ad});
    if (!options.checkpoint_path.empty())
      outputs.push_back({"checkpoint", study::split_checkpoint(options.checkpoint_path, 0), true});
    check_outputs(comm, {cohort_options.input}, outputs, out.empty() ? "" : "out", out);

    std::optional<data::CohortReader> reader;
    timers::timed("read", [&] { reader.emplace(cohort_options, comm); });
    const auto& cohort = reader->cohort();
    const auto splits = eval::protocol_splits(cohort, protocol);
    std::int64_t smallest_train = cohort.n_donors();
    for (const auto& s : splits) smallest_train = std::min<std::int64_t>(smallest_train, static_cast<std::int64_t>(s.train.size()));
    options.fit_to_features(cohort.dim);
    options.validate(cohort.dim, smallest_train, cohort.n_classes());
    if (!out.empty()) learn::prepare_output_dir(out, comm);
    log::out() << data::describe(cohort);

    study::TrainTestOptions protocol_options;
    protocol_options.train = options;
    protocol_options.knn_k = protocol.knn_k;
    protocol_options.restart = vm["restart"].as<bool>();
    const auto outcome = study::train_test(*reader, splits, protocol_options, comm, [](const eval::SplitRecord& r) {
      char line[200];
      std::snprintf(line, sizeof line, "split %d: %lld epochs, knn_acc %.3f, mi %.3f, ari %.3f, vi %.3f, %.4f s per epoch\n",
                    r.split, static_cast<long long>(r.epochs.value_or(0)), r.knn_acc, r.mi, r.ari, r.vi,
                    r.epoch_time_s.value_or(0.0));
      log::out() << line << std::flush;
    });

    study::RunRecord run;
    run.subcommand = "train-test";
    run.config = learn::effective_config(vm, "train-test", comm.size());
    run.config["options"]["n-comps"] = options.n_comps;  // after fit_to_features
    run.top_genes = top;
    run.metrics = outcome.metrics;
    run.splits = outcome.splits;
    const auto summary = eval::summarize(run.metrics, comm.size());
    log::out() << "\n" << eval::markdown_table({{setup_name(options), summary}}) << std::flush;
    // GGML-OT's "best" metric: the split with the highest kNN accuracy (first on ties).
    run.a = run.splits[outcome.best].a;
    run.history = run.splits[outcome.best].history;
    run.summary = eval::summary_json(summary);
    timers::timed("write", [&] {
      comm.phase([&] {
        if (!comm.is_root()) return;
        if (!out.empty()) {
          write_text_atomically(out + "/metrics.csv", eval::metrics_csv(run.metrics));
          write_text_atomically(out + "/summary.json", json_text(run.summary, 2) + "\n");
          study::write_results(out + "/results.h5", cohort, run);
        }
        if (!h5ad.empty()) study::write_annotated_h5ad(h5ad, cohort, run.a);
      });
    });
    if (!out.empty()) log::out() << "wrote " << out << "/{metrics.csv, summary.json, results.h5, timers.json}\n";
    report_timers(comm, "train-test", out.empty() ? "" : out + "/timers.json");
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
