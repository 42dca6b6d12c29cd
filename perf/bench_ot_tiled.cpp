// The tiled Sinkhorn (kotml/ot/tiled_sinkhorn.hpp) per iteration, and the
// machine limits it is measured against.
//
//   BM_TiledIteration<T>/kind/dim/stored/iters
//       one n × n problem (n = KOTML_TILED_BENCH_N, default 20000; points from
//       KOTML_TILED_BENCH_INPUT's /x and /y when set, else a fixed stream),
//       kind 0 = sqeuclidean, 2 = cosine, ε = 0.05, alternating updates,
//       exactly `iters` iterations (threshold 0). Time per iteration =
//       (time(b) − time(a)) / (b − a) over two `iters`, which cancels set-up and
//       the stored costs' fill (perf/ot/compare_ott.py does the arithmetic).
//       Counters: sweeps (tile passes per solve) and tile_flops (2·n·n·d per
//       recomputed sweep).
//   BM_Sgemm<T>/dim
//       OpenBLAS ?gemm of 4096 × dim by dim × 4096 on one thread: the FLOP
//       rate that recomputed tiles are held against.
//   BM_ColumnDeposits/vectorised
//       one row tile's 20,000 column sums (float, times a power-of-two scale)
//       deposited into fixed-point limbs, as every column sweep does per row
//       tile: 0 = a loop of ColumnFixed::deposit, 1 = deposit_columns_host.
//       Counter: columns_per_s.

#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "kotml/core/blas_threads.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/fixed_point.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"
#include "ot/scaling_host.hpp"

extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);
extern "C" void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                       const int*, const double*, const int*, const double*, double*, const int*);

namespace {

using namespace kotml;

std::int64_t problem_size() {
  const char* n = std::getenv("KOTML_TILED_BENCH_N");
  return n ? std::atoll(n) : 20000;
}

std::vector<double> points(const char* dataset, std::int64_t rows, int dim, std::uint64_t index) {
  if (const char* path = std::getenv("KOTML_TILED_BENCH_INPUT")) {
    const auto all = io::h5::File::open_read(path).read<double>(dataset);
    // The file holds the widest points; take the first `dim` coordinates.
    const std::int64_t width = static_cast<std::int64_t>(all.size()) / rows;
    std::vector<double> v(static_cast<std::size_t>(rows * dim));
    for (std::int64_t i = 0; i < rows; ++i)
      for (int k = 0; k < dim; ++k) v[static_cast<std::size_t>(i * dim + k)] = all[static_cast<std::size_t>(i * width + k)];
    return v;
  }
  random::Stream s(2029, random::Purpose::test_data, index);
  std::vector<double> v(static_cast<std::size_t>(rows * dim));
  for (auto& x : v) x = s.normal();
  return v;
}

template <class T>
struct Problem {
  Matrix<T> x, y;
  Vector<double> a, b;

  Problem(std::int64_t n, int dim) : x("bench::x", n, dim), y("bench::y", n, dim), a("bench::a", n), b("bench::b", n) {
    const auto px = points("/x", n, dim, 1), py = points("/y", n, dim, 2);
    auto hx = Kokkos::create_mirror_view(x);
    auto hy = Kokkos::create_mirror_view(y);
    for (std::int64_t i = 0; i < n; ++i)
      for (int k = 0; k < dim; ++k) {
        hx(i, k) = static_cast<T>(px[static_cast<std::size_t>(i * dim + k)]);
        hy(i, k) = static_cast<T>(py[static_cast<std::size_t>(i * dim + k)]);
      }
    Kokkos::deep_copy(x, hx);
    Kokkos::deep_copy(y, hy);
    Kokkos::deep_copy(a, 1.0 / static_cast<double>(n));
    Kokkos::deep_copy(b, 1.0 / static_cast<double>(n));
  }
};

template <class T>
void BM_TiledIteration(benchmark::State& state) {
  const auto kind = static_cast<ot::Cost>(state.range(0));
  const int dim = static_cast<int>(state.range(1));
  const bool stored = state.range(2) != 0;
  const int iters = static_cast<int>(state.range(3));
  const std::int64_t n = problem_size();
  const dist::Comm comm(MPI_COMM_SELF);
  Problem<T> p(n, dim);
  ot::PointCost cost;
  cost.kind = kind;
  ot::TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.threshold = 0;
  o.max_iterations = iters;
  o.inner_iterations = iters;
  o.storage = stored ? ot::CostStorage::stored : ot::CostStorage::online;
  ot::TiledSinkhorn<T> solver(comm, ot::RowBlock::of(n, 1, 0), {p.x, p.a, {}}, {p.y, p.b, {}}, cost, o);
  const std::vector<double> zero_f(static_cast<std::size_t>(n), 0.0), zero_g(static_cast<std::size_t>(n), 0.0);
  ot::TiledSinkhornReport report;
  for (auto _ : state) {
    solver.set_potentials(zero_f, zero_g);
    report = solver.solve();
    benchmark::DoNotOptimize(report.errors.data());
  }
  state.counters["n"] = static_cast<double>(n);
  state.counters["iterations"] = report.iterations;
  state.counters["sweeps"] = static_cast<double>(report.tile_sweeps);
  state.counters["retries"] = static_cast<double>(report.shift_retries);
  state.counters["threads"] = Kokkos::DefaultExecutionSpace().concurrency();
  state.counters["tile_flops"] = 2.0 * static_cast<double>(n) * static_cast<double>(n) * dim;
}

void tiled_args(benchmark::internal::Benchmark* b) {
  for (int kind : {0, 2})
    for (int dim : {64, 350, 750})
      for (int stored : {0, 1})
        for (int iters : {10, 20}) b->Args({kind, dim, stored, iters});
}
BENCHMARK_TEMPLATE(BM_TiledIteration, float)->Apply(tiled_args)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_TEMPLATE(BM_TiledIteration, double)->Apply(tiled_args)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

template <class T>
void gemm(int m, int n, int k, const T* a, const T* b, T* c) {
  const T one = 1, zero = 0;
  if constexpr (std::is_same<T, float>::value)
    sgemm_("T", "N", &m, &n, &k, &one, a, &k, b, &k, &zero, c, &m);
  else
    dgemm_("T", "N", &m, &n, &k, &one, a, &k, b, &k, &zero, c, &m);
}

template <class T>
void BM_Sgemm(benchmark::State& state) {
  kotml::use_one_blas_thread();
  const int dim = static_cast<int>(state.range(0));
  constexpr int size = 4096;
  std::vector<T> a(static_cast<std::size_t>(size) * dim, T(0.5)), b(a), c(static_cast<std::size_t>(size) * size);
  for (auto _ : state) {
    gemm<T>(size, size, dim, a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * size * size * dim, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_ColumnDeposits(benchmark::State& state) {
  using Fixed = dist::UnitFixed;
  const std::int64_t n = 20000;
  random::Stream s(2029, random::Purpose::test_data, 3);
  std::vector<float> sums(static_cast<std::size_t>(n));
  std::vector<double> scale(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    sums[static_cast<std::size_t>(k)] = static_cast<float>(std::exp(4 * s.normal()));
    scale[static_cast<std::size_t>(k)] = std::ldexp(1.0, static_cast<int>(k % 9) - 4);
  }
  std::vector<std::int64_t> limbs(static_cast<std::size_t>(n * Fixed::limbs), 0);
  const bool vectorised = state.range(0) != 0;
  for (auto _ : state) {
    if (vectorised) {
      ot::detail::deposit_columns_host(limbs.data(), sums.data(), scale.data(), n);
    } else {
      for (std::int64_t k = 0; k < n; ++k) {
        std::int64_t* limb = limbs.data() + k * Fixed::limbs;
        if (!Fixed::deposit(limb, static_cast<double>(sums[static_cast<std::size_t>(k)]) * scale[static_cast<std::size_t>(k)]))
          Fixed::poison(limb);
      }
    }
    benchmark::DoNotOptimize(limbs.data());
    benchmark::ClobberMemory();
  }
  state.counters["columns_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ColumnDeposits)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

BENCHMARK_TEMPLATE(BM_Sgemm, float)->Arg(64)->Arg(350)->Arg(750)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Sgemm, double)->Arg(64)->Arg(350)->Arg(750)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
