#include "kotml/data/cohort_reader.hpp"

#include "kotml/data/simulate.hpp"

namespace kotml::data {
namespace {

SimulatedData simulate(BuiltinCohort builtin, std::uint64_t seed) {
  switch (builtin) {
    case BuiltinCohort::toy2d: {
      Toy2dOptions o;
      o.seed = seed;
      return simulate_toy2d(o);
    }
    case BuiltinCohort::gmm: {
      GmmOptions o;
      o.seed = seed;
      return simulate_gmm(o);
    }
    case BuiltinCohort::scrna: {
      ScrnaOptions o;
      o.seed = seed;
      return simulate_scrna(o);
    }
    case BuiltinCohort::none:
      break;
  }
  throw InternalError("CohortReader: no built-in cohort to simulate");
}

}  // namespace

CohortReader::CohortReader(const CohortOptions& options, const dist::Comm& comm) : comm_(comm) {
  comm.phase([&] {
    options.validate();
    if (options.builtin == BuiltinCohort::none)
      source_ = std::make_unique<AnnDataSource>(options.input);
    else
      source_ = std::make_unique<TableSource>(simulate(options.builtin, options.seed).table());
  });
  cohort_ = plan_cohort(*source_, options, comm);
}

void CohortReader::hold(const std::vector<GlobalId>& which) {
  release_donors(cohort_, which);
  load_donors(cohort_, *source_, which, comm_);
}

void CohortReader::hold_all() {
  std::vector<GlobalId> all;
  for (GlobalId u = 0; u < cohort_.n_donors(); ++u) all.push_back(u);
  hold(all);
}

}  // namespace kotml::data
