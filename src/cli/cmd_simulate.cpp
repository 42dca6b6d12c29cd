// kotml simulate --kind toy2d|gmm|scrna -o OUT.h5ad: the built-in synthetic
// cohorts (see kotml/data/simulate.hpp). Rank 0 simulates and writes.

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/data/simulate.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

/// Sets target from the option when the user gave it (defaults differ by kind).
template <class T>
void take(const po::variables_map& vm, const std::string& name, T& target) {
  if (vm.count(name)) target = vm[name].as<T>();
}

void reject_foreign(const po::variables_map& vm, const std::string& kind,
                    std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (vm.count(name)) throw Error::option(name, "does not apply to --kind " + kind);
}

/// Cells and a lower bound of the bytes a simulation holds at once: the three
/// string obs columns (about 100 bytes a cell) and, for dense kinds, the float
/// features. In long double, so that absurd sizes do not overflow.
struct SimulationSize {
  long double cells = 0, bytes = 0;
};

SimulationSize toy2d_lower_bound(const data::Toy2dOptions& o) {
  const long double cells = static_cast<long double>(o.class_means.size()) * o.offsets.size() * 3 * o.cells_per_mode;
  return {cells, cells * (100.0L + 4.0L * (1 + o.noise_dims))};
}

SimulationSize gmm_lower_bound(const data::GmmOptions& o) {
  const long double cells = static_cast<long double>(o.n_patients) * o.n_samples;
  return {cells, cells * (100.0L + 4.0L * o.n_dim)};
}

SimulationSize scrna_lower_bound(const data::ScrnaOptions& o) {
  const long double cells = static_cast<long double>(o.n_classes) * o.donors_per_class * o.cells_per_donor;
  return {cells, cells * 100.0L};
}

/// Refuses, before allocating, a simulation that cannot fit this machine's
/// memory (it used to run until the allocation failed, or the OOM killer came).
void check_fits_in_memory(const SimulationSize& size) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const long double memory = static_cast<long double>(pages) * page;
  if (size.bytes <= memory && size.cells < static_cast<long double>(std::numeric_limits<std::int32_t>::max()))
    return;
  std::ostringstream why;
  why.precision(3);
  why << "the simulated data would have " << static_cast<double>(size.cells) << " cells and need at least "
      << static_cast<double>(size.bytes / 1e9L) << " GB; this machine has " << static_cast<double>(memory / 1e9L)
      << " GB (and a cohort is limited to 2^31 cells): ask for fewer cells or donors";
  throw Error("", "simulate", why.str());
}

}  // namespace

Subcommand simulate_subcommand() {
  Subcommand sub;
  sub.name = "simulate";
  sub.summary = "write a synthetic cohort: toy2d or gmm (GGML-OT's benchmarks) or scrna (NB counts)";
  sub.usage = "kotml simulate --kind toy2d|gmm|scrna -o OUT.h5ad [--seed S] [sizes]";
  sub.example = "kotml simulate --kind scrna -o scrna.h5ad --donors-per-class 20";
  sub.declare = [](OptionGroups& groups, po::positional_options_description&) {
    groups.model.add_options()
        ("kind", po::value<std::string>()->required(), "toy2d, gmm or scrna")
        ("seed", po::value<std::uint64_t>()->default_value(42), "seed of every random stream")
        // toy2d
        ("cells-per-mode", po::value<std::int64_t>(), "toy2d: cells per mode and donor (100)")
        ("noise-scale", po::value<double>(), "toy2d: y multiplier (10)")
        ("noise-dims", po::value<std::int64_t>(), "toy2d: nuisance y columns (1)")
        ("varying-size", po::bool_switch(), "toy2d: donor sizes drawn from 20 .. cells-per-mode - 1")
        // gmm and scrna
        ("cells-per-donor", po::value<std::int64_t>(), "gmm: cells per donor (250); scrna: (500)")
        ("n-donors", po::value<std::int64_t>(), "gmm: donors, even (6)")
        ("n-dim", po::value<std::int64_t>(), "gmm: dimensions (10)")
        ("n-modes", po::value<std::int64_t>(), "gmm: mixture modes per donor, 2 signal + noise (10)")
        ("signal-mean-shift", po::value<double>(), "gmm: class shift of the signal archetypes (1)")
        ("signal-mass-ratio", po::value<double>(), "gmm: fraction of cells in signal modes (0.2)")
        ("global-rotation", po::value<double>(), "gmm: rotation of the signal plane in degrees (30)")
        // scrna
        ("n-classes", po::value<std::int64_t>(), "scrna: classes (2)")
        ("donors-per-class", po::value<std::int64_t>(), "scrna: donors per class (10)")
        ("n-genes", po::value<std::int64_t>(), "scrna: genes (1000)")
        ("n-types", po::value<std::int64_t>(), "scrna: cell types (6)")
        ("n-planted-genes", po::value<std::int64_t>(), "scrna: genes carrying the class effect (10)")
        ("n-planted-types", po::value<std::int64_t>(), "scrna: cell types carrying it (2)")
        ("planted-log-fold", po::value<double>(), "scrna: class effect, log scale, last class (1.0)")
        ("proportion-shift", po::value<double>(), "scrna: log-shift of one type's share per class (0.7)")
        ("library-size", po::value<double>(), "scrna: median counts per cell (2000)")
        ("nb-dispersion", po::value<double>(), "scrna: NB dispersion phi, var = mu + phi mu^2 (0.2)")
        ("donor-log-sd", po::value<double>(), "scrna: donor-level gene noise, log scale (0.1)");
    groups.output.add_options()
        ("output,o", po::value<std::string>()->required(), "output .h5ad (written atomically)");
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const std::string kind = one_of(vm, "kind", {"toy2d", "gmm", "scrna"});
    const std::string output = vm["output"].as<std::string>();
    check_outputs(comm, {}, {{"output", output}});
    const auto seed = vm["seed"].as<std::uint64_t>();
    const std::initializer_list<const char*> toy2d_only = {"cells-per-mode", "noise-scale", "noise-dims"};
    const std::initializer_list<const char*> gmm_only = {"n-donors", "n-dim", "n-modes", "signal-mean-shift",
                                                         "signal-mass-ratio", "global-rotation"};
    const std::initializer_list<const char*> scrna_only = {
        "n-classes", "n-genes", "n-types", "n-planted-genes", "n-planted-types", "planted-log-fold",
        "proportion-shift", "library-size", "nb-dispersion", "donor-log-sd", "donors-per-class"};

    data::Toy2dOptions toy;
    data::GmmOptions gmm;
    data::ScrnaOptions scrna;
    if (kind == "toy2d") {
      reject_foreign(vm, kind, gmm_only);
      reject_foreign(vm, kind, scrna_only);
      reject_foreign(vm, kind, {"cells-per-donor"});
      toy.seed = seed;
      take(vm, "cells-per-mode", toy.cells_per_mode);
      take(vm, "noise-scale", toy.noise_scale);
      take(vm, "noise-dims", toy.noise_dims);
      toy.varying_size = vm["varying-size"].as<bool>();
      toy.validate();
    } else if (kind == "gmm") {
      reject_foreign(vm, kind, toy2d_only);
      reject_foreign(vm, kind, scrna_only);
      gmm.seed = seed;
      take(vm, "cells-per-donor", gmm.n_samples);
      take(vm, "n-donors", gmm.n_patients);
      take(vm, "n-dim", gmm.n_dim);
      take(vm, "n-modes", gmm.n_modes);
      take(vm, "signal-mean-shift", gmm.signal_mean_shift);
      take(vm, "signal-mass-ratio", gmm.signal_mass_ratio);
      take(vm, "global-rotation", gmm.global_rotation);
      gmm.validate();
    } else {
      reject_foreign(vm, kind, toy2d_only);
      reject_foreign(vm, kind, gmm_only);
      scrna.seed = seed;
      take(vm, "cells-per-donor", scrna.cells_per_donor);
      take(vm, "n-classes", scrna.n_classes);
      take(vm, "donors-per-class", scrna.donors_per_class);
      take(vm, "n-genes", scrna.n_genes);
      take(vm, "n-types", scrna.n_types);
      take(vm, "n-planted-genes", scrna.n_planted_genes);
      take(vm, "n-planted-types", scrna.n_planted_types);
      take(vm, "planted-log-fold", scrna.planted_log_fold);
      take(vm, "proportion-shift", scrna.proportion_shift);
      take(vm, "library-size", scrna.library_size);
      take(vm, "nb-dispersion", scrna.nb_dispersion);
      take(vm, "donor-log-sd", scrna.donor_log_sd);
      scrna.validate();
    }
    if (kind != "toy2d" && vm["varying-size"].as<bool>())
      throw Error::option("varying-size", "does not apply to --kind " + kind);

    check_fits_in_memory(kind == "toy2d" ? toy2d_lower_bound(toy)
                         : kind == "gmm"  ? gmm_lower_bound(gmm)
                                          : scrna_lower_bound(scrna));

    std::string summary;
    comm.phase([&] {
      if (!comm.is_root()) return;
      const data::SimulatedData sim = kind == "toy2d" ? data::simulate_toy2d(toy)
                                      : kind == "gmm" ? data::simulate_gmm(gmm)
                                                      : data::simulate_scrna(scrna);
      data::write_h5ad(output, sim);
      std::ostringstream text;
      text << "simulate " << kind << ": " << sim.n_obs << " cells x " << sim.n_vars << " features, ";
      const auto& donors = sim.obs_column("sample");
      std::vector<std::string> unique(donors);
      std::sort(unique.begin(), unique.end());
      unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
      text << unique.size() << " donors (obs: sample, patient_group, cell_type)\nwrote " << output << "\n";
      summary = text.str();
    });
    log::out() << summary;
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
