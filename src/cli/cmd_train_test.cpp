// kotml train-test: GGML-OT's train_test. For each stratified donor split,
// train A on the training donors, compute the OT distances over training and
// test donors under A, and score them (kNN accuracy, NMI, ARI, VI); print the
// mean ± SD table and write metrics.csv, summary.json and results.h5.

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <optional>
#include <string>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/data/cohort_options.hpp"
#include "kotml/data/cohort_reader.hpp"
#include "kotml/eval/donor_store.hpp"
#include "kotml/eval/protocol.hpp"
#include "kotml/eval/protocol_cli.hpp"
#include "kotml/eval/summary.hpp"
#include "kotml/learn/cli_support.hpp"
#include "kotml/learn/loss.hpp"
#include "kotml/learn/results.hpp"
#include "kotml/learn/run_config.hpp"
#include "kotml/learn/train_options_cli.hpp"
#include "kotml/learn/trainer.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

/// "split 3/5 (ETA 2:10)": the epoch progress line's context, with the
/// ETA of the splits from the mean time of those done.
std::string split_progress_text(int split, int n_splits, double seconds_so_far) {
  std::string text = "split " + std::to_string(split + 1) + "/" + std::to_string(n_splits);
  if (split > 0) text += " (ETA " + log::clock_text(seconds_so_far / split * (n_splits - split)) + ")";
  return text;
}

std::string split_checkpoint(const std::string& base, int split) {
  const std::filesystem::path p(base);
  return (p.parent_path() / (p.stem().string() + "_split" + std::to_string(split) + p.extension().string())).string();
}

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
      outputs.push_back({"checkpoint", split_checkpoint(options.checkpoint_path, 0), true});
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

    learn::RunRecord run;
    run.subcommand = "train-test";
    run.config = learn::effective_config(vm, "train-test", comm.size());
    run.config["options"]["n-comps"] = options.n_comps;  // after fit_to_features
    run.top_genes = top;
    const auto n_splits = static_cast<int>(splits.size());
    Kokkos::Timer splits_timer;
    for (int s = 0; s < n_splits; ++s) {
      const auto& split = splits[static_cast<std::size_t>(s)];
      const log::ProgressContext progress_context(split_progress_text(s, n_splits, splits_timer.seconds()));
      learn::TrainOptions split_options(options);
      if (!options.checkpoint_path.empty()) {
        split_options.checkpoint_path = split_checkpoint(options.checkpoint_path, s);
        if (vm["restart"].as<bool>() && std::filesystem::exists(split_options.checkpoint_path))
          split_options.restart_from = split_options.checkpoint_path;
      }
      // This rank holds the donors of its training pairs and of its
      // evaluation pairs of this split, and no others.
      timers::timed("read", [&] {
        reader->hold(learn::merged(learn::donors_to_hold(cohort, split.train, options, comm.size(), comm.rank()),
                                   eval::distance_donors_to_hold(cohort, eval::split_donors(split), comm.size(),
                                                                 comm.rank())));
      });
      const auto store = timers::timed("stage", [&] { return eval::DonorStore(cohort); });
      const auto trained = learn::train(cohort, store, split.train, split_options, comm);
      eval::GroundMetric metric;
      metric.kind = eval::GroundMetric::Kind::learned;
      metric.squared = options.squared;
      metric.a = trained.a;
      const auto scores = timers::timed(
          "evaluate", [&] { return eval::score_split(cohort, store, metric, options.ot, split, protocol.knn_k, comm); });
      eval::SplitRecord record;
      record.split = s;
      record.n_train = static_cast<std::int64_t>(split.train.size());
      record.n_test = static_cast<std::int64_t>(split.test.size());
      record.knn_acc = scores.knn_acc;
      record.mi = scores.mi;
      record.ari = scores.ari;
      record.vi = scores.vi;
      record.epoch_time_s = trained.epoch_time_s;
      record.epoch_cpu_s = trained.epoch_cpu_s;
      {
        std::vector<int> labels;
        for (auto u : eval::split_donors(split)) labels.push_back(cohort.donors[static_cast<std::size_t>(u)].label);
        record.test_loss =
            learn::hinge_loss_of_block(scores.distances, labels, record.n_train, options.alpha);
      }
      record.epochs = trained.epochs_run;
      run.metrics.push_back(record);
      learn::SplitOutcome outcome{trained.a, trained.history, {}, {}};
      for (auto u : split.train) outcome.train_donors.push_back(cohort.donors[static_cast<std::size_t>(u)].id);
      for (auto u : split.test) outcome.test_donors.push_back(cohort.donors[static_cast<std::size_t>(u)].id);
      run.splits.push_back(std::move(outcome));
      char line[200];
      std::snprintf(line, sizeof line,
                    "split %d: %lld epochs, knn_acc %.3f, mi %.3f, ari %.3f, vi %.3f, %.4f s per epoch\n", s,
                    static_cast<long long>(trained.epochs_run), scores.knn_acc, scores.mi, scores.ari, scores.vi,
                    trained.epoch_time_s);
      log::out() << line << std::flush;
    }
    const auto summary = eval::summarize(run.metrics, comm.size());
    log::out() << "\n" << eval::markdown_table({{setup_name(options), summary}}) << std::flush;
    // GGML-OT's "best" metric: the split with the highest kNN accuracy (first on ties).
    std::size_t best = 0;
    for (std::size_t s = 1; s < run.metrics.size(); ++s)
      if (run.metrics[s].knn_acc > run.metrics[best].knn_acc) best = s;
    run.a = run.splits[best].a;
    run.history = run.splits[best].history;
    run.summary = eval::summary_json(summary);
    timers::timed("write", [&] {
      comm.phase([&] {
        if (!comm.is_root()) return;
        if (!out.empty()) {
          write_text_atomically(out + "/metrics.csv", eval::metrics_csv(run.metrics));
          write_text_atomically(out + "/summary.json", json_text(run.summary, 2) + "\n");
          learn::write_results(out + "/results.h5", cohort, run);
        }
        if (!h5ad.empty()) learn::write_annotated_h5ad(h5ad, cohort, run.a);
      });
    });
    if (!out.empty()) log::out() << "wrote " << out << "/{metrics.csv, summary.json, results.h5, timers.json}\n";
    report_timers(comm, "train-test", out.empty() ? "" : out + "/timers.json");
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
