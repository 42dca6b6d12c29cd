// Training-step timings of the learn area.
//
//   BM_TrainEpoch/solver/donors   one full-batch epoch of GGML training (all
//                                 triplets, Adam step) on `donors` donors of 100
//                                 cells × 50 features in 3 classes; solver 0 =
//                                 exact EMD (warm-started after the first
//                                 epoch), 1 = Sinkhorn (entropic_reg 0.5)
//   BM_ExactPointGradients/pairs  the rank-independent exact summation of the
//                                 pairs' point gradients (k = 5, 100 + 100
//                                 points per pair): the price of bit-identical
//                                 metrics on any rank count
//
//   build/perf/bench_learn --benchmark_min_time=1

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include "kotml/core/random.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/stage/donor_store.hpp"
#include "kotml/learn/trainer.hpp"

namespace {

using namespace kotml;

constexpr int cells = 100, features = 50;

data::Cohort bench_cohort(int donors, const dist::Comm& comm) {
  random::Stream s(2026, random::Purpose::test_data, 0);
  std::vector<float> x;
  std::vector<std::string> sample, group;
  for (int u = 0; u < donors; ++u)
    for (int i = 0; i < cells; ++i) {
      for (int f = 0; f < features; ++f) x.push_back(static_cast<float>(s.normal() + (f == 0 ? 0.5 * (u % 3) : 0.0)));
      sample.push_back("d" + std::to_string(1000 + u));
      group.push_back("class_" + std::to_string(u % 3));
    }
  data::TableSource table("bench", static_cast<std::int64_t>(sample.size()), features, x);
  table.add_obs("sample", sample);
  table.add_obs("patient_group", group);
  data::CohortOptions options;
  options.input = "bench";
  options.all_cells = true;
  return data::build_cohort(table, options, comm);
}

void BM_TrainEpoch(benchmark::State& state) {
  const dist::Comm comm(MPI_COMM_WORLD);
  const auto cohort = bench_cohort(static_cast<int>(state.range(1)), comm);
  const stage::DonorStore store(cohort);
  std::vector<GlobalId> donors;
  for (GlobalId u = 0; u < cohort.n_donors(); ++u) donors.push_back(u);
  learn::TrainOptions options;
  options.stop_thr = 0.0;
  options.ot.entropic_reg = state.range(0) == 0 ? 0.0 : 0.5;
  options.epochs = 1;
  for (auto _ : state) {
    const auto result = learn::train(cohort, store, donors, options, comm);
    benchmark::DoNotOptimize(result.a.data());
  }
  state.SetLabel(state.range(0) == 0 ? "emd" : "sinkhorn");
  state.counters["pairs"] = static_cast<double>(donors.size() * (donors.size() - 1) / 2);
}
BENCHMARK(BM_TrainEpoch)->Args({0, 12})->Args({0, 24})->Args({1, 12})->Args({1, 24})->Unit(benchmark::kMillisecond);

void BM_ExactPointGradients(benchmark::State& state) {
  const std::int64_t pairs = state.range(0), k = 5, rows = 200;
  random::Stream s(7, random::Purpose::test_data, 1);
  std::vector<double> values(static_cast<std::size_t>(rows * k));
  for (auto& v : values) v = s.normal();
  for (auto _ : state) {
    dist::ExactSum sum(static_cast<std::size_t>(rows * k * 8));
    for (std::int64_t p = 0; p < pairs; ++p)
      for (std::int64_t i = 0; i < rows * k; ++i)
        sum.add(static_cast<std::size_t>(((p % 8) * rows * k) + i), values[static_cast<std::size_t>(i)]);
    benchmark::DoNotOptimize(sum.local_total());
  }
  state.counters["adds_per_s"] =
      benchmark::Counter(static_cast<double>(pairs * rows * k), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ExactPointGradients)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
