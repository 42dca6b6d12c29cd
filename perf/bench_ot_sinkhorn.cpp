// Sinkhorn timings in both domains and the machine's roofline for their kernels.
//
//   BM_SinkhornBatch<T>/iters/domain   64 problems of 250×250 (clouds of d = 50,
//                               Euclidean cost, ε = 0.5 × mean cost), exactly
//                               `iters` iterations (tol = 0); domain 0 = log,
//                               1 = scaling (SinkhornDomain)
//   BM_SinkhornDense<T>/iters/domain   one 5000×5000 problem on a precomputed cost
//   BM_ExpThroughput<T>/level   fast_exp over an L1-resident array on every
//                               Kokkos thread at one host SIMD level (0
//                               baseline, 1 x86-64-v3, 2 x86-64-v4): the
//                               machine's exp rate
//   BM_ReadBandwidth/streams    a streaming sum over 512 MB in 1, 4 or 8
//                               concurrent streams per thread: memory bandwidth
//
// Time per iteration = (time(iters = b) − time(iters = a)) / (b − a), which
// cancels cost setup and final evaluation; perf/ot/compare_ot.py does that
// arithmetic and puts the roofline next to it. Inputs come from
// KOTML_OT_BENCH_INPUT (datasets /sinkhorn/batch/points: 128·250 × 50, and
// /sinkhorn/dense/x, /sinkhorn/dense/y: 5000 × 50), the same points the peers
// get, or from a fixed stream when unset.

#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "kotml/core/random.hpp"
#include "kotml/core/simd_levels.hpp"
#include "kotml/core/types.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/fast_exp.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace {

using namespace kotml;

constexpr int dim = 50;

std::vector<double> points(const std::string& dataset, std::int64_t rows, std::uint64_t index) {
  if (const char* path = std::getenv("KOTML_OT_BENCH_INPUT"))
    return io::h5::File::open_read(path).read<double>(dataset);
  random::Stream s(2027, random::Purpose::test_data, index);
  std::vector<double> v(static_cast<std::size_t>(rows * dim));
  for (auto& x : v) x = s.normal();
  return v;
}

ot::SinkhornDomain domain_of(std::int64_t arg) {
  return arg == 0 ? ot::SinkhornDomain::log : ot::SinkhornDomain::scaling;
}

template <class T>
void BM_SinkhornBatch(benchmark::State& state) {
  constexpr std::int64_t problems = 64, n = 250;
  const auto all = points("/sinkhorn/batch/points", 2 * problems * n, 1);
  std::vector<std::vector<T>> clouds;
  for (std::int64_t c = 0; c < 2 * problems; ++c)
    clouds.emplace_back(all.begin() + c * n * dim, all.begin() + (c + 1) * n * dim);
  const auto batch = ot::make_cloud_batch<T>(clouds, dim);
  std::vector<ot::Pair> pairs;
  for (std::int32_t u = 0; u < problems; ++u) pairs.push_back({2 * u, 2 * u + 1});
  ot::SinkhornOptions o;
  o.epsilon = 0.5;
  o.relative_epsilon = true;
  o.tol = 0;
  o.max_iter = static_cast<int>(state.range(0));
  o.domain = domain_of(state.range(1));
  double checksum = 0;
  for (auto _ : state) {
    const auto r = ot::sinkhorn<T>(batch, pairs, ot::Cost::euclidean, o);
    checksum = r.summary(0).cost;
    benchmark::DoNotOptimize(&checksum);
  }
  state.counters["problems"] = problems;
  state.counters["iterations"] = static_cast<double>(o.max_iter);
  state.counters["threads"] = Kokkos::DefaultExecutionSpace().concurrency();
}
BENCHMARK_TEMPLATE(BM_SinkhornBatch, float)->ArgsProduct({{10, 60}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_SinkhornBatch, double)->ArgsProduct({{10, 60}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

template <class T>
void BM_SinkhornDense(benchmark::State& state) {
  constexpr std::int64_t n = 5000;
  const auto x = points("/sinkhorn/dense/x", n, 2);
  const auto y = points("/sinkhorn/dense/y", n, 3);
  Matrix<T> X("x", n, dim), Y("y", n, dim), C("C", n, n);
  {
    auto hx = Kokkos::create_mirror_view(X);
    auto hy = Kokkos::create_mirror_view(Y);
    for (std::int64_t i = 0; i < n; ++i)
      for (int k = 0; k < dim; ++k) {
        hx(i, k) = static_cast<T>(x[static_cast<std::size_t>(i * dim + k)]);
        hy(i, k) = static_cast<T>(y[static_cast<std::size_t>(i * dim + k)]);
      }
    Kokkos::deep_copy(X, hx);
    Kokkos::deep_copy(Y, hy);
  }
  ot::cost_matrix<T>(ot::Cost::euclidean, X, Y, C);
  Vector<double> w("w", n);
  Kokkos::deep_copy(w, 1.0 / n);
  Vector<T> f("f", n), g("g", n);
  ot::SinkhornOptions o;
  o.epsilon = 0.5;
  o.relative_epsilon = true;
  o.tol = 0;
  o.max_iter = static_cast<int>(state.range(0));
  o.domain = domain_of(state.range(1));
  ot::DenseSinkhorn<T> solver;
  double checksum = 0;
  for (auto _ : state) {
    Kokkos::deep_copy(f, T(0));
    Kokkos::deep_copy(g, T(0));
    checksum = solver.solve(C, w, w, o, f, g).cost;
    benchmark::DoNotOptimize(&checksum);
  }
  state.counters["iterations"] = static_cast<double>(o.max_iter);
  state.counters["threads"] = Kokkos::DefaultExecutionSpace().concurrency();
}
BENCHMARK_TEMPLATE(BM_SinkhornDense, float)->ArgsProduct({{2, 42}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_SinkhornDense, double)->ArgsProduct({{2, 42}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// The exp rate is measured with the same SIMD levels the Sinkhorn row kernels
// are built for (lse_host.cpp), on the host threads.
template <class T, int lanes>
__attribute__((always_inline)) inline T exp_sweep_lanes(const T* x, int repeats) {
  T acc[lanes] = {};
  for (int r = 0; r < repeats; ++r)
    for (int j = 0; j < 4096; j += lanes)
      for (int l = 0; l < lanes; ++l) acc[l] += ot::fast_exp(x[j + l] - static_cast<T>(r & 1));
  T sum = 0;
  for (int l = 0; l < lanes; ++l) sum += acc[l];
  return sum;
}
KOTML_SIMD_DISPATCHED(double, exp_sweep, (const double* x, int repeats), (x, repeats), exp_sweep_lanes<double, 8>(x, repeats))
KOTML_SIMD_DISPATCHED(float, exp_sweep, (const float* x, int repeats), (x, repeats), exp_sweep_lanes<float, 16>(x, repeats))

/// 4096 values per thread, held in L1, swept `repeats` times, at the SIMD
/// level given (0 baseline, 1 x86-64-v3, 2 x86-64-v4; see simd_levels.hpp).
template <class T>
void BM_ExpThroughput(benchmark::State& state) {
  const auto level = simd::all_levels[state.range(0)];
  if (!simd::available(level)) {
    state.SkipWithError("SIMD level not available on this CPU or build");
    return;
  }
  const simd::ScopedLevel at(level);
  using Host = Kokkos::DefaultHostExecutionSpace;
  const int threads = Host().concurrency();
  Kokkos::View<T**, Kokkos::LayoutRight, HostSpace> values("values", threads, 4096);
  for (int t = 0; t < threads; ++t)
    for (int j = 0; j < 4096; ++j) values(t, j) = -static_cast<T>((j * 37 + t) % 400) * T(0.05);
  const int repeats = 2000;
  for (auto _ : state) {
    T sum = 0;
    Kokkos::parallel_reduce(
        "bench::exp_sweep", Kokkos::RangePolicy<Host>(0, threads),
        [=](const int t, T& s) { s += exp_sweep(&values(t, 0), repeats); }, sum);
    benchmark::DoNotOptimize(&sum);
  }
  state.counters["exp_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * threads * repeats * 4096.0, benchmark::Counter::kIsRate);
  state.counters["threads"] = threads;
}
BENCHMARK_TEMPLATE(BM_ExpThroughput, float)
    ->ArgName("simd_level")
    ->DenseRange(0, 2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_ExpThroughput, double)
    ->ArgName("simd_level")
    ->DenseRange(0, 2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

/// Block b of each of S equal parts of x, read together in 8-double steps:
/// S sequential streams, each summed in its own 8 lanes. On the host it runs
/// at the SIMD level of the kernels it bounds: built for the baseline, its one
/// stream read 7-9 GB/s on an Intel guest that streams 12-13 GB/s to the same
/// loop at x86-64-v4, a roofline below the machine (perf/RESULTS.md, "The read
/// roofline at the kernels' SIMD level").
template <int S>
KOKKOS_FORCEINLINE_FUNCTION double stream_block_sum(const double* x, const std::int64_t part) {
  double acc[S][8] = {};
  for (int j = 0; j < 4096; j += 8)
    for (int t = 0; t < S; ++t)
      for (int l = 0; l < 8; ++l) acc[t][l] += x[t * part + j + l];
  double s = 0;
  for (int t = 0; t < S; ++t)
    for (int l = 0; l < 8; ++l) s += acc[t][l];
  return s;
}
KOTML_SIMD_DISPATCHED(double, stream_block_sum_1, (const double* x, std::int64_t part), (x, part),
                      stream_block_sum<1>(x, part))
KOTML_SIMD_DISPATCHED(double, stream_block_sum_4, (const double* x, std::int64_t part), (x, part),
                      stream_block_sum<4>(x, part))
KOTML_SIMD_DISPATCHED(double, stream_block_sum_8, (const double* x, std::int64_t part), (x, part),
                      stream_block_sum<8>(x, part))

template <int S>
struct StreamSum {
  static_assert(S == 1 || S == 4 || S == 8, "a stream count with a dispatched copy");
  Vector<const double> data;
  std::int64_t part = 0;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t b, double& s) const {
    const double* x = data.data() + b * 4096;
#ifdef KOTML_DEVICE_PASS
    s += stream_block_sum<S>(x, part);
#else
    if constexpr (S == 1)
      s += stream_block_sum_1(x, part);
    else if constexpr (S == 4)
      s += stream_block_sum_4(x, part);
    else
      s += stream_block_sum_8(x, part);
#endif
  }
};

template <int S>
double stream_sum(const Vector<const double>& data) {
  const std::int64_t part = static_cast<std::int64_t>(data.extent(0)) / S;
  double sum = 0;
  Kokkos::parallel_reduce("bench::stream_sum", Kokkos::RangePolicy<ExecSpace>(0, part / 4096),
                          StreamSum<S>{data, part}, sum);
  return sum;
}

/// Streaming read of 512 MB in `streams` concurrent sequential streams per
/// thread (the array in that many parts, each thread reading the same block of
/// every part). One core of some machines reads several streams faster than
/// one (a core's outstanding misses, and the prefetchers, per stream), and the
/// roofline is the faster figure.
void BM_ReadBandwidth(benchmark::State& state) {
  const auto streams = static_cast<int>(state.range(0));
  const std::int64_t count = std::int64_t(64) << 20;
  Vector<double> data("data", count);
  Kokkos::deep_copy(data, 1.0);
  for (auto _ : state) {
    double sum = 0;
    switch (streams) {
      case 1: sum = stream_sum<1>(data); break;
      case 4: sum = stream_sum<4>(data); break;
      default: sum = stream_sum<8>(data); break;  // the registered Args: 1, 4, 8
    }
    benchmark::DoNotOptimize(&sum);
  }
  state.counters["bytes_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * count * 8.0, benchmark::Counter::kIsRate);
  state.counters["threads"] = Kokkos::DefaultExecutionSpace().concurrency();
}
BENCHMARK(BM_ReadBandwidth)->ArgName("streams")->Arg(1)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
