// Data-area timings on a simulated scrna cohort (2 classes × donors × 250 cells,
// 1000 genes; cells set by the first argument):
//
//   BM_SimulateScrna/cells   negative-binomial counts, both CSR passes
//   BM_NormalizeLog/cells    normalize_total + log1p
//   BM_Hvg/cells             'seurat' highly variable genes, 500 of 1000
//   BM_Pca/cells/method      50 components of the 500 HVG columns; method 0: the
//                            Gram matrix's dense eigensolver, 1: Lanczos on the
//                            Gram matrix, 2: Lanczos on the cells
//   BM_CohortBuild/cells     cohort of 250 cells per donor, z-scored, one rank
//
// Items per second count cells.

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <map>
#include <memory>

#include "kotml/data/cell_source.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/data/hvg.hpp"
#include "kotml/data/normalize_total.hpp"
#include "kotml/data/pca.hpp"
#include "kotml/data/simulate.hpp"
#include "kotml/dist/comm.hpp"

namespace {

using namespace kotml::data;

ScrnaOptions scrna_options(std::int64_t cells) {
  ScrnaOptions o;
  o.cells_per_donor = 250;
  o.donors_per_class = std::max<std::int64_t>(1, cells / 500);
  o.n_genes = 1000;
  return o;
}

/// One simulated and log-normalised cohort per size, shared by the benchmarks.
const HostCsr& log_data(std::int64_t cells) {
  static std::map<std::int64_t, HostCsr> cache;
  auto it = cache.find(cells);
  if (it != cache.end()) return it->second;
  const auto sim = simulate_scrna(scrna_options(cells));
  HostCsr x;
  x.rows = sim.n_obs;
  x.cols = sim.n_vars;
  x.indptr = sim.indptr;
  x.indices = sim.indices;
  x.values = sim.values;
  normalize_total(x, 1e4);
  log1p(x);
  return cache.emplace(cells, std::move(x)).first->second;
}

std::vector<std::string> gene_names(std::int64_t n) {
  std::vector<std::string> names;
  for (std::int64_t g = 0; g < n; ++g) names.push_back("gene_" + std::to_string(g));
  return names;
}

void BM_SimulateScrna(benchmark::State& state) {
  const auto o = scrna_options(state.range(0));
  std::int64_t cells = 0;
  for (auto _ : state) {
    const auto sim = simulate_scrna(o);
    cells = sim.n_obs;
    benchmark::DoNotOptimize(sim.values.data());
  }
  state.SetItemsProcessed(state.iterations() * cells);
}

void BM_NormalizeLog(benchmark::State& state) {
  const auto sim = simulate_scrna(scrna_options(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    HostCsr x;
    x.rows = sim.n_obs;
    x.cols = sim.n_vars;
    x.indptr = sim.indptr;
    x.indices = sim.indices;
    x.values = sim.values;
    state.ResumeTiming();
    normalize_total(x, 1e4);
    log1p(x);
    benchmark::DoNotOptimize(x.values.data());
  }
  state.SetItemsProcessed(state.iterations() * sim.n_obs);
}

void BM_Hvg(benchmark::State& state) {
  const auto& x = log_data(state.range(0));
  const auto names = gene_names(x.cols);
  HvgOptions o;
  o.n_top_genes = 500;
  for (auto _ : state) benchmark::DoNotOptimize(highly_variable_genes(x, o, names).highly_variable.data());
  state.SetItemsProcessed(state.iterations() * x.rows);
}

void BM_Pca(benchmark::State& state) {
  const auto& x = log_data(state.range(0));
  HvgOptions h;
  h.n_top_genes = 500;
  const auto hvg = select_columns(x, highly_variable_genes(x, h, gene_names(x.cols)).selected());
  PcaOptions o;
  o.n_comps = 50;
  o.op = state.range(1) == 2 ? PcaOperator::cells : PcaOperator::gram;
  o.solver = state.range(1) == 0 ? PcaSolver::dense : PcaSolver::lanczos;
  std::int64_t basis = 0;
  for (auto _ : state) {
    const auto r = pca(hvg, o);
    basis = r.basis_size;
    benchmark::DoNotOptimize(r.components.data());
  }
  state.counters["lanczos_basis"] = static_cast<double>(basis);
  state.SetItemsProcessed(state.iterations() * x.rows);
}

void BM_CohortBuild(benchmark::State& state) {
  const auto sim = simulate_scrna(scrna_options(state.range(0)));
  const auto table = sim.table();
  const kotml::dist::Comm comm(MPI_COMM_SELF);
  CohortOptions o;
  o.input = "scrna";
  o.n_cells = 250;
  o.normalize = true;
  for (auto _ : state) benchmark::DoNotOptimize(build_cohort(table, o, comm).donors.data());
  state.SetItemsProcessed(state.iterations() * sim.n_obs);
}

}  // namespace

BENCHMARK(BM_SimulateScrna)->Arg(15000)->Arg(60000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NormalizeLog)->Arg(15000)->Arg(60000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Hvg)->Arg(15000)->Arg(60000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pca)
    ->ArgsProduct({{15000, 60000}, {0, 1, 2}})
    ->ArgNames({"cells", "method"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK(BM_CohortBuild)->Arg(15000)->Unit(benchmark::kMillisecond);
