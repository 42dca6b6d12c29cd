// Kernels of the graph and gw areas, and the two GW benchmark problems of
// TorchGW (spiral → Swiss roll): 400×500 precomputed and 4000×5000 landmark
// with float32, at TorchGW's settings (k=5, M=80, α=0.8, ε=0.005, 300 iterations).
//
//   build-*/perf/bench_graph_gw --benchmark_filter=Dijkstra
//
// Counters: sources/s for all-pairs Dijkstra, |rho| and outer iterations for GW.

#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>

#include "kotml/core/phase_timers.hpp"
#include "kotml/graph/apsp.hpp"
#include "kotml/graph/dijkstra.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/gw/cost_estimate.hpp"
#include "kotml/gw/generators.hpp"
#include "kotml/gw/quality.hpp"
#include "kotml/gw/sampled_gw.hpp"
#include "kotml/gw/slack_sinkhorn.hpp"

using namespace kotml;

namespace {

using gw::device_points;

void BM_KnnGraph(benchmark::State& state) {
  const auto cloud = gw::swiss_roll(state.range(0));
  const auto x = device_points(cloud);
  for (auto _ : state) {
    auto g = graph::build_knn_graph(x, 5);
    benchmark::DoNotOptimize(g.n);
  }
  state.counters["points/s"] = benchmark::Counter(static_cast<double>(cloud.n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_KnnGraph)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_AllPairsDijkstra(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto g = graph::build_knn_graph(device_points(gw::swiss_roll(n)), 5);
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> out("apsp", n, n);
  Kokkos::View<graph::NodeId*, MemSpace> sources("sources", n);
  auto h = Kokkos::create_mirror_view(sources);
  for (std::int64_t i = 0; i < n; ++i) h(i) = static_cast<graph::NodeId>(i);
  Kokkos::deep_copy(sources, h);
  for (auto _ : state) {
    graph::shortest_paths<float>(g, sources, out);
    Kokkos::fence();
  }
  state.counters["sources/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllPairsDijkstra)->Arg(5000)->Unit(benchmark::kMillisecond)->UseRealTime();

template <class S>
void BM_SlackSinkhornIteration(benchmark::State& state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  dist::Comm comm;
  Matrix<S> cost("cost", n, k);
  auto h = Kokkos::create_mirror_view(cost);
  for (std::int64_t f = 0; f < n * k; ++f) h.data()[f] = static_cast<S>((f * 7919 % 1000) / 1000.0);
  Kokkos::deep_copy(cost, h);
  gw::SlackSinkhorn<S> s(std::vector<double>(n, 1.0 / n), std::vector<double>(k, 1.0 / k), 0.2, 0.2, n, comm);
  gw::SlackSinkhornSettings settings;
  settings.max_iter = 10;
  settings.tol = 0;  // always the full ten iterations, each with its check
  for (auto _ : state) {
    s.solve(cost, 100.0, 0.005, settings);
    Kokkos::fence();
  }
  state.counters["iterations/s"] = benchmark::Counter(10.0, benchmark::Counter::kIsRate);
  state.counters["entries/s"] = benchmark::Counter(10.0 * n * k, benchmark::Counter::kIsRate);
}
BENCHMARK_TEMPLATE(BM_SlackSinkhornIteration, double)->Args({4000, 5000})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_SlackSinkhornIteration, float)->Args({4000, 5000})->Unit(benchmark::kMillisecond)->UseRealTime();

template <class S>
void BM_CostEstimate(benchmark::State& state) {
  const std::int64_t n = state.range(0), k = state.range(1), m = state.range(2);
  dist::Comm comm;
  gw::DistanceBlock dx("dx", n, m), dy("dy", k, m);
  Kokkos::deep_copy(dx, 0.5f);
  Kokkos::deep_copy(dy, 0.25f);
  gw::CostEstimate<S> estimate(n, k, m, comm);
  Matrix<S> lambda("lambda", n, k);
  for (auto _ : state) {
    benchmark::DoNotOptimize(estimate.build(dx, dy, lambda, comm));
    Kokkos::fence();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * k * m * 1e-9, benchmark::Counter::kIsRate);
}
// Rows × K × M: a whole 4000 × 5000 problem, and one rank's 64 rows of the
// 16,384-point weak scaling problem on 256 ranks (M = 200), where the work on
// the gathered D_Y (K × M, every iteration) weighs as much as the rows'.
BENCHMARK_TEMPLATE(BM_CostEstimate, double)->Args({4000, 5000, 80})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_CostEstimate, float)->Args({4000, 5000, 80})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_CostEstimate, float)->Args({64, 16384, 200})->Unit(benchmark::kMillisecond)->UseRealTime();

/// TorchGW's benchmark problem end to end (graphs and distances included).
void BM_SampledGw(benchmark::State& state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto mode = static_cast<gw::DistanceMode>(state.range(2));
  const bool mixed = state.range(3) != 0;
  dist::Comm comm;
  const auto src = gw::spiral(n), tgt = gw::swiss_roll(k);
  const auto xs = device_points(src), xt = device_points(tgt);
  double rho = 0;
  int iterations = 0;
  std::vector<timers::PhaseTime> phases;
  std::int64_t sinkhorn_iterations = 0;
  for (auto _ : state) {
    const auto gs = graph::build_knn_graph(xs, 5, comm), gt = graph::build_knn_graph(xt, 5, comm);
    std::unique_ptr<gw::DistanceProvider> ps, pt;
    if (mode == gw::DistanceMode::precomputed) {
      ps = gw::precomputed_from_graph(gs, comm);
      pt = gw::precomputed_from_graph(gt, comm);
    } else if (mode == gw::DistanceMode::landmark) {
      auto both = gw::landmark_providers(gs, gt, 50, comm);
      ps = std::move(both.source);
      pt = std::move(both.target);
    } else {
      ps = gw::dijkstra_provider(gs, 2000, comm);
      pt = gw::dijkstra_provider(gt, 2000, comm);
    }
    gw::SampledGwOptions o;
    o.samples = 80;
    o.alpha = 0.8;
    o.epsilon = 0.005;
    o.max_iter = 300;
    o.mixed_precision = mixed;
    if (n == 400) o.s_shared = 400;  // as TorchGW's 400×500 test
    timers::reset();
    const auto r = gw::sampled_gw(*ps, *pt, o, comm);
    rho = std::fabs(gw::angle_correlation(src.angle, tgt.angle, r.match));
    iterations = r.iterations;
    phases = timers::phases();
    sinkhorn_iterations = r.sinkhorn_iterations;
  }
  state.counters["abs_rho"] = rho;
  state.counters["outer_iterations"] = iterations;
  state.counters["sinkhorn_iterations"] = static_cast<double>(sinkhorn_iterations);
  // The solver's own phases: s_sampling, s_distances, s_cost, s_sinkhorn, s_update.
  for (const auto& phase : phases) state.counters["s_" + phase.name] = phase.seconds;
}
BENCHMARK(BM_SampledGw)
    ->Args({400, 500, static_cast<int>(gw::DistanceMode::precomputed), 0})
    ->Args({4000, 5000, static_cast<int>(gw::DistanceMode::landmark), 1})
    ->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
