// kotml train: learn the ground metric A on every donor of a cohort
// (GGML-OT's train()), over as many MPI ranks as the job has.

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "cohort_options.hpp"
#include "kotml/data/cohort_reader.hpp"
#include "kotml/stage/donor_store.hpp"
#include "cohort_input.hpp"
#include "kotml/study/results.hpp"
#include "run_config.hpp"
#include "train_options.hpp"
#include "kotml/learn/trainer.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

std::string describe_top_genes(const data::Cohort& cohort, const learn::MetricMatrix& a, std::int64_t top) {
  const auto genes = study::loading_gene_names(cohort);
  const auto n_genes = static_cast<std::int64_t>(genes.size());
  const auto k = static_cast<std::int64_t>(a.extent(0));
  const auto shown = std::min<std::int64_t>(top, n_genes);
  const auto index = learn::top_genes(study::metric_loadings(cohort, a), n_genes, k, shown);
  std::ostringstream out;
  for (std::int64_t c = 0; c < k; ++c) {
    out << "  component " << c + 1 << ":";
    for (std::int64_t r = 0; r < shown; ++r) out << ' ' << genes[static_cast<std::size_t>(index[static_cast<std::size_t>(c * shown + r)])];
    out << '\n';
  }
  return out.str();
}

}  // namespace

Subcommand train_subcommand() {
  Subcommand sub;
  sub.name = "train";
  sub.summary = "learn a global ground metric A (GGML) on all donors; mpirun splits the OT pairs";
  sub.usage = "[mpirun -np N] kotml train INPUT.h5ad --out DIR [options]";
  sub.example = "mpirun -np 4 kotml train cohort.h5ad --patient-col donor --label-col status --epochs 30 --out run";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    data::declare_cohort_options(groups, &positional);
    learn::declare_builtin_option(groups);
    learn::declare_train_options(groups);
    groups.output.add_options()
        ("out", po::value<std::string>()->required(), "output folder: results.h5 (and checkpoint.h5)")
        ("write-h5ad", po::value<std::string>()->default_value(""),
         "also write a copy of the input with uns/varm W_ggml and obsm X_ggml")
        ("top-genes", po::value<std::int64_t>()->default_value(20), "genes listed per component");
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const auto cohort_options = learn::cohort_options_or_builtin(vm);
    auto options = learn::train_options_from(vm);
    const std::string out = vm["out"].as<std::string>();
    const std::string h5ad = vm["write-h5ad"].as<std::string>();
    const auto top = positive<std::int64_t>(vm, "top-genes");
    if (options.checkpoint_path.empty()) options.checkpoint_path = out + "/checkpoint.h5";
    if (vm["restart"].as<bool>()) {
      options.restart_from = options.checkpoint_path;
      if (!std::filesystem::exists(options.restart_from))
        throw Error(options.restart_from, "", "--restart: no checkpoint to continue from");
    }
    if (!h5ad.empty() && cohort_options.builtin != data::BuiltinCohort::none)
      throw Error::option("write-h5ad", "needs an --input .h5ad to copy");
    check_outputs(comm, {cohort_options.input},
                  {{"out", out + "/results.h5", true},
                   {"out", out + "/timers.json", true},
                   {"checkpoint", options.checkpoint_path, true},
                   {"write-h5ad", h5ad}},
                  "out", out);

    std::optional<data::CohortReader> reader;
    timers::timed("read", [&] { reader.emplace(cohort_options, comm); });
    const auto& cohort = reader->cohort();
    std::vector<GlobalId> donors;
    for (GlobalId u = 0; u < cohort.n_donors(); ++u) donors.push_back(u);
    options.fit_to_features(cohort.dim);
    options.validate(cohort.dim, cohort.n_donors(), cohort.n_classes());
    learn::prepare_output_dir(out, comm);
    log::out() << data::describe(cohort);
    const auto result = learn::train(*reader, donors, options, comm);

    const auto& last = result.history.back();
    log::out() << "trained " << result.epochs_run << " epoch(s)" << (result.converged ? " (converged)" : "")
               << ": loss " << last.loss << ", gradient norm " << last.grad_norm << ", "
               << result.epoch_time_s << " s per epoch on " << comm.size() << " rank(s)\n"
               << "top genes by |loading|:\n"
               << describe_top_genes(cohort, result.a, std::min<std::int64_t>(top, 10));
    study::RunRecord run;
    run.subcommand = "train";
    run.config = learn::effective_config(vm, "train", comm.size());
    run.config["options"]["n-comps"] = options.n_comps;  // after fit_to_features
    run.a = result.a;
    run.history = result.history;
    run.top_genes = top;
    timers::timed("write", [&] {
      comm.phase([&] {
        if (!comm.is_root()) return;
        study::write_results(out + "/results.h5", cohort, run);
        if (!h5ad.empty()) study::write_annotated_h5ad(h5ad, cohort, result.a);
      });
    });
    log::out() << "wrote " << out << "/results.h5" << (h5ad.empty() ? "" : " and " + h5ad) << "\n";
    report_timers(comm, "train", out + "/timers.json");
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
