// Exact OT (network simplex) timings.
//
//   BM_EmdSingle/n        one n×n problem, d = 50, squared Euclidean cost,
//                         uniform weights, cost matrix precomputed (the solve
//                         alone, as POT's ot.emd2 on a given M is timed)
//   BM_EmdBatch/n/count   `count` independent n×n problems in one batched call
//                         (costs computed inside), spread over the Kokkos threads
//
// Inputs: with KOTML_OT_BENCH_INPUT=<file.h5> the points are read from the
// datasets /emd/n<n>/x and /emd/n<n>/y (written by perf/ot/compare_ot.py, which
// gives POT the very same points); otherwise they are drawn from a fixed stream.

#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/network_simplex.hpp"

namespace {

using namespace kotml;

constexpr int dim = 50;

std::vector<double> bench_points(const std::string& group, const std::string& side, std::int64_t n,
                                 std::uint64_t index) {
  if (const char* path = std::getenv("KOTML_OT_BENCH_INPUT")) {
    auto file = io::h5::File::open_read(path);
    return file.read<double>(group + "/" + side);
  }
  random::Stream s(2026, random::Purpose::test_data, index);
  std::vector<double> v(static_cast<std::size_t>(n * dim));
  for (auto& x : v) x = s.normal();
  return v;
}

HostMatrix<double> host_cost(const std::vector<double>& x, const std::vector<double>& y, std::int64_t n) {
  HostMatrix<double> C("cost", n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      C(i, j) = ot::ground_cost<double>(ot::Cost::sqeuclidean, &x[static_cast<std::size_t>(i * dim)],
                                        &y[static_cast<std::size_t>(j * dim)], dim, 0.0, 0.0);
  return C;
}

void BM_EmdSingle(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::string group = "/emd/n" + std::to_string(n);
  const auto x = bench_points(group, "x", n, 1);
  const auto y = bench_points(group, "y", n, 2);
  const auto C = host_cost(x, y, n);
  const std::vector<double> w(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n));
  ot::EmdSolution solution;
  for (auto _ : state) {
    solution = ot::emd_dense(C, w, w, ot::EmdOptions{});
    // A pointer, not the double: GCC 12 may route a double through an integer
    // register in DoNotOptimize's "+m,r" constraint and corrupt it.
    benchmark::DoNotOptimize(solution.plan_value.data());
  }
  state.counters["cost"] = solution.summary.cost;
  state.counters["pivots"] = static_cast<double>(solution.summary.iterations);
  state.counters["optimal"] = solution.summary.status == ot::SolveStatus::optimal ? 1 : 0;
}
BENCHMARK(BM_EmdSingle)->Arg(250)->Arg(1000)->Arg(2000)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_EmdBatch(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::int64_t count = state.range(1);
  // 2·count clouds, problem u transports cloud 2u onto cloud 2u+1.
  std::vector<std::vector<double>> clouds;
  const std::string group = "/emd/n" + std::to_string(n);
  for (std::int64_t c = 0; c < 2 * count; ++c) {
    if (std::getenv("KOTML_OT_BENCH_INPUT") && c < 2) {
      clouds.push_back(bench_points(group, c == 0 ? "x" : "y", n, 0));
    } else {
      random::Stream s(2026, random::Purpose::test_data, 1000 + static_cast<std::uint64_t>(c));
      std::vector<double> v(static_cast<std::size_t>(n * dim));
      for (auto& value : v) value = s.normal();
      clouds.push_back(v);
    }
  }
  const auto batch = ot::make_cloud_batch<double>(clouds, dim);
  std::vector<ot::Pair> pairs;
  for (std::int32_t u = 0; u < count; ++u) pairs.push_back({2 * u, 2 * u + 1});
  double total = 0;
  for (auto _ : state) {
    const auto result = ot::emd<double>(batch, pairs, ot::Cost::sqeuclidean, ot::EmdOptions{});
    Kokkos::fence();
    total = 0;
    for (const auto& s : result.summaries()) total += s.cost;
    benchmark::DoNotOptimize(&total);
  }
  state.counters["problems"] = static_cast<double>(count);
  state.counters["threads"] = Kokkos::DefaultExecutionSpace().concurrency();
}
BENCHMARK(BM_EmdBatch)
    ->Args({250, 16})
    ->Args({1000, 4})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->UseRealTime();

}  // namespace
