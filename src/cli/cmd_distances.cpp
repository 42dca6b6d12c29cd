// kotml distances: the full donor × donor OT matrix under a ground metric, the
// pairs spread over MPI ranks, written to HDF5 with the donors, their labels
// and a 2-D classical MDS embedding.

#include <optional>
#include <string>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/version.hpp"
#include "cohort_options.hpp"
#include "kotml/data/cohort_reader.hpp"
#include "kotml/eval/distance_matrix.hpp"
#include "kotml/stage/donor_store.hpp"
#include "kotml/eval/mds.hpp"
#include "metric_options.hpp"
#include "kotml/io/hdf5.hpp"
#include "cohort_input.hpp"
#include "kotml/study/results.hpp"
#include "run_config.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {

Subcommand distances_subcommand() {
  Subcommand sub;
  sub.name = "distances";
  sub.summary = "donor x donor OT distance matrix under a ground metric, with a 2-D MDS embedding";
  sub.usage = "[mpirun -np N] kotml distances INPUT.h5ad -o OUT.h5 [--metric learned --model results.h5]";
  sub.example = "mpirun -np 4 kotml distances cohort.h5ad --patient-col donor --label-col status --metric learned --model run/results.h5 -o distances.h5";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    data::declare_cohort_options(groups, &positional);
    learn::declare_builtin_option(groups);
    eval::declare_metric_options(groups);
    groups.output.add_options()
        ("output,o", po::value<std::string>()->required(), "output HDF5: /distances, /donors, /labels, /classes, /mds")
        ("mds-components", po::value<int>()->default_value(2), "dimensions of the classical MDS embedding");
    declare_timers_option(groups.output);
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const auto cohort_options = learn::cohort_options_or_builtin(vm);
    const auto settings = eval::ot_settings_from(vm);
    const std::string output = vm["output"].as<std::string>();
    const int mds_components = positive<int>(vm, "mds-components");
    eval::GroundMetric metric;
    metric.kind = eval::parse_metric_kind(vm["metric"].as<std::string>());
    metric.squared = vm["squared"].as<bool>();
    const std::string model = vm["model"].as<std::string>();
    const std::string timers_json = vm["timers"].as<std::string>();
    check_outputs(comm, {cohort_options.input, model}, {{"output", output}, {"timers", timers_json}});
    if (metric.kind == eval::GroundMetric::Kind::learned) {
      if (model.empty()) throw Error::option("model", "--metric learned needs the results.h5 of a training run");
      comm.phase([&] { metric.a = study::read_metric(model); });
    } else if (!model.empty()) {
      throw Error::option("model", "applies to --metric learned only");
    }
    std::optional<data::CohortReader> reader;
    timers::timed("read", [&] { reader.emplace(cohort_options, comm); });
    const auto& cohort = reader->cohort();
    if (metric.kind == eval::GroundMetric::Kind::learned && static_cast<std::int64_t>(metric.a.extent(1)) != cohort.dim)
      throw Error(model, "A", "the metric has " + std::to_string(metric.a.extent(1)) + " columns but the cohort has " +
                                  std::to_string(cohort.dim) + " features");
    if (mds_components > cohort.n_donors())
      throw Error::option("mds-components", "exceeds the " + std::to_string(cohort.n_donors()) + " donors");
    std::vector<GlobalId> donors;
    for (GlobalId u = 0; u < cohort.n_donors(); ++u) donors.push_back(u);
    settings.check_emd_size(cohort, donors);
    timers::timed("read", [&] { reader->hold(eval::distance_donors_to_hold(cohort, donors, comm.size(), comm.rank())); });
    const auto store = timers::timed(
        "stage", [&] { return stage::DonorStore(reader->cohort_for_staging(), stage::DonorStore::take_points); });
    const auto d = timers::timed("distances", [&] { return eval::distance_matrix(store, metric, settings, donors, comm); });
    const auto config = learn::effective_config(vm, "distances", comm.size());
    timers::timed("mds and write", [&] {
      comm.phase([&] {
        if (!comm.is_root()) return;
        const auto mds = eval::classical_mds(d, mds_components);
        const auto n = static_cast<std::int64_t>(donors.size());
        AtomicFile target(output);
        {
          auto file = io::h5::File::create(target);
          file.write("distances", std::vector<double>(d.data(), d.data() + d.size()), {n, n});
          file.write_strings("donors", cohort.donor_ids());
          const auto labels = cohort.labels();
          file.write("labels", std::vector<std::int32_t>(labels.begin(), labels.end()));
          file.write_strings("classes", cohort.classes);
          file.write("mds", std::vector<double>(mds.embedding.data(), mds.embedding.data() + mds.embedding.size()),
                     {n, static_cast<std::int64_t>(mds_components)});
          file.write("mds_eigenvalues", mds.eigenvalues);
          file.write_string_attribute("/", "metric", metric.name());
          file.write_string_attribute("/", "config", json_text(config));
          file.write_string_attribute("/", "kotml_version", version_string);
          file.write_string_attribute("/", "git_hash", git_hash);
          file.close();
        }
        target.commit();
      });
    });
    log::out() << "distances: " << donors.size() << " donors, " << donors.size() * (donors.size() - 1) / 2
               << " pairs under the " << metric.name() << " metric on " << comm.size() << " rank(s)\nwrote "
               << output << "\n";
    report_timers(comm, "distances", timers_json);
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
