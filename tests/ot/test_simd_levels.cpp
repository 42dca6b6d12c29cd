// One result on every CPU: each host SIMD kernel (KOTML_SIMD_DISPATCHED and
// KOTML_SIMD_DISPATCH_TO, kotml/core/simd_levels.hpp) is run at every level this CPU has, on the same
// inputs, and its outputs must equal the baseline copy's bit for bit. Then a
// whole tiled Sinkhorn solve (tile products, cost formulas, row and column
// log-sum-exps) is run at each level and its potentials compared the same way.
// Inputs cover vector tails (lengths around 8 and 16; 45 is the pricing scan's
// four accumulators, one vector more and a tail), NaN/±∞ shift guesses,
// ties in the pricing scan, zero costs in the gradient and all three costs.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "stage/projection_host.hpp"
#include "gw/gw_simd_host.hpp"
#include "kotml/core/simd_levels.hpp"
#include "kotml/dist/fixed_point.hpp"
#include "kotml/ot/lse.hpp"
#include "kotml/ot/sinkhorn.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"
#include "ot/cost_rows.hpp"
#include "ot/scaling_host.hpp"
#include "ot/simplex_pricing.hpp"
#include "tiled_test_support.hpp"

namespace kotml {
namespace {

using Outputs = std::vector<double>;

std::vector<simd::Level> levels_above_baseline() {
  std::vector<simd::Level> levels;
  for (const auto level : simd::all_levels)
    if (level != simd::Level::baseline && simd::available(level)) levels.push_back(level);
  return levels;
}

/// Runs `work` at the baseline and at every other available level; every
/// level's outputs must have the baseline's bits (NaN payloads included).
void expect_same_bits_at_every_level(const std::string& what, const std::function<Outputs()>& work) {
  const auto levels = levels_above_baseline();
  if (levels.empty()) GTEST_SKIP() << "this build or CPU has only the baseline SIMD level";
  Outputs baseline;
  {
    simd::ScopedLevel at(simd::Level::baseline);
    baseline = work();
  }
  ASSERT_FALSE(baseline.empty());
  for (const auto level : levels) {
    simd::ScopedLevel at(level);
    const Outputs got = work();
    ASSERT_EQ(got.size(), baseline.size()) << what;
    std::size_t differing = 0, first = 0;
    for (std::size_t k = 0; k < got.size(); ++k)
      if (std::memcmp(&got[k], &baseline[k], sizeof(double)) != 0 && differing++ == 0) first = k;
    EXPECT_EQ(differing, 0u) << what << " at " << simd::name(level) << ": first difference at output " << first
                             << " (" << got[first] << " against " << baseline[first] << ")";
  }
}

template <class T>
std::vector<T> uniform(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> pick(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(pick(engine));
  return v;
}

template <class T>
void append(Outputs& out, const std::vector<T>& values) {
  for (const T v : values) out.push_back(static_cast<double>(v));
}

const std::int64_t lengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 45, 64, 100, 1001};

TEST(SimdLevels, ScopedLevelChoosesTheActiveLevel) {
  const auto before = simd::active();
  EXPECT_TRUE(simd::available(before));
  EXPECT_TRUE(simd::available(simd::Level::baseline));
  {
    simd::ScopedLevel at(simd::Level::baseline);
    EXPECT_EQ(simd::active(), simd::Level::baseline);
  }
  EXPECT_EQ(simd::active(), before);
#if KOTML_SIMD_HAS_LEVELS
  // The default is the best level the CPU has.
  for (const auto level : simd::all_levels) {
    if (simd::available(level)) {
      EXPECT_GE(static_cast<int>(before), static_cast<int>(level));
    }
  }
#endif
}

template <class T>
void check_rows() {
  expect_same_bits_at_every_level(std::string("row kernels, ") + (sizeof(T) == 4 ? "float" : "double"), [] {
    Outputs out;
    std::uint64_t seed = 10;
    for (const auto m : lengths) {
      const auto c = uniform<T>(m, 0, 4, ++seed), h = uniform<T>(m, -3, 3, ++seed);
      const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
      for (const T s : {T(0.5), T(20), T(3000)}) {
        for (const T shift : {nan, inf, -inf, T(1.25)}) out.push_back(ot::detail::row_lse_host(c.data(), h.data(), m, s, shift));
        out.push_back(ot::detail::row_sum_host(c.data(), h.data(), m, s, T(-0.5)));
        std::vector<T> plan(static_cast<std::size_t>(m));
        out.push_back(ot::detail::row_transport_host(c.data(), h.data(), m, s, T(0.3), plan.data()));
        append(out, plan);
        out.push_back(ot::detail::row_transport_host(c.data(), h.data(), m, s, T(0.3), static_cast<T*>(nullptr)));
      }
    }
    return out;
  });
}
TEST(SimdLevels, RowLogSumExpsHaveTheBaselineBits) {
  check_rows<double>();
  check_rows<float>();
}

template <class T>
void check_column_tiles() {
  expect_same_bits_at_every_level(std::string("column tiles, ") + (sizeof(T) == 4 ? "float" : "double"), [] {
    Outputs out;
    std::uint64_t seed = 40;
    const std::int64_t ld = 1030;
    for (const std::int64_t rows : {1, 5, 33})
      for (const auto width : lengths) {
        const auto c = uniform<T>(static_cast<std::size_t>(rows * ld), 0, 4, ++seed);
        const auto u = uniform<T>(static_cast<std::size_t>(rows), -2, 2, ++seed);
        const auto shift = uniform<T>(static_cast<std::size_t>(width), -1, 1, ++seed);
        std::vector<T> top(static_cast<std::size_t>(width), -std::numeric_limits<T>::infinity());
        std::vector<T> acc(static_cast<std::size_t>(width), T(0));
        ot::detail::column_max_tile_host(c.data(), ld, rows, width, u.data(), T(7), top.data());
        ot::detail::column_sum_tile_host(c.data(), ld, rows, width, u.data(), T(7), shift.data(), acc.data());
        append(out, top);
        append(out, acc);
      }
    return out;
  });
}
TEST(SimdLevels, ColumnTilesHaveTheBaselineBits) {
  check_column_tiles<double>();
  check_column_tiles<float>();
}

/// The scaling domain's column maxima against the portable column-by-column
/// loop, with NaN entries and a tie.
template <class T>
Outputs scaling_column_maxima_at_this_level() {
  const std::int64_t width = 45, rows = 7, ld = 64;
  auto tile = uniform<T>(static_cast<std::size_t>(rows * ld), -1, 1, 93);
  const auto alpha = uniform<T>(static_cast<std::size_t>(rows), 0, 2, 94);
  tile[3] = std::numeric_limits<T>::quiet_NaN();           // row 0, column 3
  tile[2 * ld + 5] = std::numeric_limits<T>::quiet_NaN();  // row 2, column 5
  tile[4 * ld + 6] = tile[5 * ld + 6] = T(0.5);            // a tie
  std::vector<T> top(static_cast<std::size_t>(width), -std::numeric_limits<T>::infinity()), ref = top;
  ot::detail::scaling_column_max_host(tile.data(), ld, rows, width, alpha.data(), top.data());
  for (std::int64_t k = 0; k < width; ++k)
    for (std::int64_t i = 0; i < rows; ++i) {
      const T v = alpha[static_cast<std::size_t>(i)] * tile[static_cast<std::size_t>(i * ld + k)];
      ref[static_cast<std::size_t>(k)] = v > ref[static_cast<std::size_t>(k)] ? v : ref[static_cast<std::size_t>(k)];
    }
  EXPECT_EQ(0, std::memcmp(top.data(), ref.data(), top.size() * sizeof(T))) << "maxima at " << simd::name(simd::active());
  Outputs out;
  append(out, top);
  return out;
}
TEST(SimdLevels, ScalingColumnMaximaMatchTheColumnByColumnLoop) {
  expect_same_bits_at_every_level("scaling column maxima (float)", [] { return scaling_column_maxima_at_this_level<float>(); });
  expect_same_bits_at_every_level("scaling column maxima (double)", [] { return scaling_column_maxima_at_this_level<double>(); });
}

/// scaling_dot_rows_axpy_host against scaling_dot_host and a loop of
/// scaling_axpy_host: with and without dot products, the four rows into one
/// acc (α per row, one of them −0), assigning or adding.
template <class T>
void dot_rows_axpy_against_one_row_forms(const std::vector<T>& next, std::int64_t next_stride,
                                         const std::vector<T>& w, const std::vector<T>& prev,
                                         std::int64_t prev_stride, const std::vector<T>& alphas, std::int64_t m,
                                         Outputs& out) {
  const T alpha[4] = {alphas[0], -T(0), alphas[2], alphas[4]};
  for (const bool dots : {true, false})
    for (const bool assign : {true, false}) {
      std::vector<T> got(static_cast<std::size_t>(m + 5), T(3)), ref = got;
      T sums[4] = {T(-1), T(-1), T(-1), T(-1)};
      ot::detail::scaling_dot_rows_axpy_host(dots ? next.data() : nullptr, next_stride, w.data(), 0,
                                             dots ? sums : nullptr, prev.data(), prev_stride, alpha, got.data(),
                                             assign, m);
      for (int r = 0; r < 4; ++r) {
        ot::detail::scaling_axpy_host(prev.data() + r * prev_stride, m, alpha[r], ref.data(), assign && r == 0);
        const T dot = dots ? ot::detail::scaling_dot_host(next.data() + r * next_stride, w.data(), m) : T(-1);
        EXPECT_EQ(0, std::memcmp(&sums[r], &dot, sizeof(T)))
            << "dot of row " << r << " beside the axpy, m = " << m << " at " << simd::name(simd::active());
      }
      EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * sizeof(T)))
          << "axpy beside the dots (dots " << dots << ", assign " << assign << "), m = " << m << " at "
          << simd::name(simd::active());
      append(out, got);
      append(out, std::vector<T>(sums, sums + 4));
    }
}

/// scaling_tile_rows_axpy_host against its one-row forms: per tile, each row's
/// scaling_dot_host added to its total in tile order, and a loop of
/// scaling_axpy_host into the tile's acc, rows in order; with and without
/// dot products or axpys, assigning or adding, an α of −0, and a column of −0
/// entries (it stays −0 only where the first row assigns).
template <class T>
Outputs tile_rows_at_this_level() {
  Outputs out;
  for (const std::int64_t width : {std::int64_t(16), std::int64_t(45), std::int64_t(256)}) {
    const std::int64_t tiles = 3, rows = 8, tile_stride = rows * width + 7;
    auto k = uniform<T>(static_cast<std::size_t>(tiles * tile_stride), -1, 2, 130 + static_cast<std::uint64_t>(width));
    const auto w = uniform<T>(static_cast<std::size_t>(tiles * width), 0, 2, 131 + static_cast<std::uint64_t>(width));
    for (std::int64_t J = 0; J < tiles; ++J)
      for (std::int64_t r = 4; r < 8; ++r) k[static_cast<std::size_t>(J * tile_stride + r * width + 3)] = -T(0);
    k[static_cast<std::size_t>(tile_stride + width + 5)] = std::numeric_limits<T>::infinity();
    const T alpha[4] = {T(0.75), -T(0), T(1.5), T(0.25)};
    const T* next = k.data();            // rows 0-3 of each tile
    const T* prev = k.data() + 4 * width;  // rows 4-7
    for (const int mode : {0, 1, 2})  // dots and axpys; dots only; axpys only
      for (const bool assign : {true, false}) {
        const bool dots = mode != 2, axpys = mode != 1;
        std::vector<T> got(static_cast<std::size_t>(tiles * width), T(3)), ref = got;
        double totals[4] = {0.5, -1, 2, 0}, expected[4] = {0.5, -1, 2, 0};
        ot::detail::scaling_tile_rows_axpy_host(dots ? next : nullptr, axpys ? prev : nullptr, tile_stride, width,
                                                tiles, w.data(), alpha, got.data(), assign, totals);
        for (std::int64_t J = 0; J < tiles; ++J)
          for (int r = 0; r < 4; ++r) {
            const std::int64_t at = J * tile_stride + r * width;
            if (dots)
              expected[r] += static_cast<double>(ot::detail::scaling_dot_host(next + at, w.data() + J * width, width));
            if (axpys)
              ot::detail::scaling_axpy_host(prev + at, width, alpha[r], ref.data() + J * width, assign && r == 0);
          }
        EXPECT_EQ(0, std::memcmp(totals, expected, sizeof(totals)))
            << "row totals (mode " << mode << ", assign " << assign << "), width " << width << " at "
            << simd::name(simd::active());
        EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * sizeof(T)))
            << "column sums (mode " << mode << ", assign " << assign << "), width " << width << " at "
            << simd::name(simd::active());
        append(out, got);
        append(out, std::vector<double>(totals, totals + 4));
      }
  }
  return out;
}
/// Runs `work` (its own checks, on float and on double: work(T()) for each)
/// at every available level, then compares each level's outputs with the
/// baseline's.
template <class Work>
void check_at_each_level_then_bits(const std::string& what, const Work& work) {
  for (const auto level : simd::all_levels) {
    if (!simd::available(level)) continue;
    simd::ScopedLevel at(level);
    work(float());
    work(double());
  }
  expect_same_bits_at_every_level(what + " (float)", [&] { return work(float()); });
  expect_same_bits_at_every_level(what + " (double)", [&] { return work(double()); });
}

TEST(SimdLevels, TileRowKernelsHaveTheBitsOfTheirOneRowForms) {
  check_at_each_level_then_bits("tile row kernels",
                                [](auto zero) { return tile_rows_at_this_level<decltype(zero)>(); });
}

/// scaling_dot_host's documented sum, written out in scalars: W lanes from +0,
/// lane l adding k_j·w_j for j ≡ l (mod W) in increasing j (a term past the
/// last full vector, or +0 where there is none), then lane l += lane l + width
/// for width W/2, …, 1.
template <class T, int W>
T documented_dot(const T* k, const T* w, std::int64_t m) {
  T lane[W] = {};
  const std::int64_t full = m - m % W;
  for (std::int64_t j = 0; j < full; j += W)
    for (int l = 0; l < W; ++l) lane[l] += k[j + l] * w[j + l];
  for (int l = 0; l < W; ++l) lane[l] += full + l < m ? k[full + l] * w[full + l] : T(0);
  for (int width = W / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

/// Terms over sixteen binary orders of magnitude and of both signs, so that
/// another grouping of the same sum changes its bits.
template <class T>
std::vector<T> spread_terms(std::int64_t m) {
  auto k = uniform<T>(static_cast<std::size_t>(m), -1, 1, 120 + static_cast<std::uint64_t>(m));
  for (std::int64_t j = 0; j < m; ++j)
    k[static_cast<std::size_t>(j)] *= static_cast<T>(std::ldexp(1.0, static_cast<int>(j * 7 % 17) - 8));
  return k;
}

/// scaling_dot_host against documented_dot at every level, on spread terms
/// with a −0 product, and an ∞ and a NaN in two of the rows.
template <class T, int W>
void check_documented_dots() {
  for (const std::int64_t m : lengths) {
    auto k = spread_terms<T>(m);
    const auto w = uniform<T>(static_cast<std::size_t>(m), 0, 1, 121 + static_cast<std::uint64_t>(m));
    if (m >= 3) k[1] = -T(0);
    if (m == 100) k[37] = std::numeric_limits<T>::infinity();
    if (m == 1001) k[500] = std::numeric_limits<T>::quiet_NaN();
    const T expected = documented_dot<T, W>(k.data(), w.data(), m);
    for (const auto level : simd::all_levels) {
      if (!simd::available(level)) continue;
      simd::ScopedLevel at(level);
      const T got = ot::detail::scaling_dot_host(k.data(), w.data(), m);
      EXPECT_EQ(0, std::memcmp(&got, &expected, sizeof(T)))
          << "m = " << m << " at " << simd::name(level) << ": " << got << " against " << expected;
    }
  }
  // The test can fail: summed in the other order, some row's bits differ.
  int reordered_differs = 0;
  for (const std::int64_t m : {std::int64_t(64), std::int64_t(100), std::int64_t(1001)}) {
    const auto k = spread_terms<T>(m);
    const auto w = uniform<T>(static_cast<std::size_t>(m), 0, 1, 121 + static_cast<std::uint64_t>(m));
    T forward = 0;
    for (std::int64_t j = 0; j < m; ++j) forward += k[static_cast<std::size_t>(j)] * w[static_cast<std::size_t>(j)];
    const T lanes = documented_dot<T, W>(k.data(), w.data(), m);
    reordered_differs += std::memcmp(&forward, &lanes, sizeof(T)) != 0;
  }
  EXPECT_GT(reordered_differs, 0);
}

TEST(SimdLevels, ScalingDotProductsHaveTheirDocumentedLanesAndTree) {
  check_documented_dots<float, 16>();
  check_documented_dots<double, 8>();
}

/// The scaling domain's four-stream kernels against their one-row forms at
/// the active level: each of scaling_dot_rows_host's results has the bits of
/// scaling_dot_host on its row (rows apart by an odd stride, and the same w for
/// all four), and scaling_dot_rows_axpy_host those of the dot products and of
/// a loop of scaling_axpy_host, the first row assigning (a column of −0
/// entries sums to −0 only then).
template <class T>
Outputs stream_kernels_at_this_level() {
  Outputs out;
  for (const std::int64_t m : lengths) {
    const std::int64_t stride = m + 13;
    auto k = uniform<T>(static_cast<std::size_t>(4 * stride), -1, 2, 95 + static_cast<std::uint64_t>(m));
    const auto w = uniform<T>(static_cast<std::size_t>(4 * stride), 0, 2, 96 + static_cast<std::uint64_t>(m));
    k[static_cast<std::size_t>(2 * stride + m / 2)] = std::numeric_limits<T>::infinity();
    for (const std::int64_t w_stride : {stride, std::int64_t(0)}) {
      T got[4];
      ot::detail::scaling_dot_rows_host(k.data(), stride, w.data(), w_stride, m, got);
      for (int r = 0; r < 4; ++r) {
        const T ref = ot::detail::scaling_dot_host(k.data() + r * stride, w.data() + r * w_stride, m);
        EXPECT_EQ(0, std::memcmp(&got[r], &ref, sizeof(T)))
            << "dot of row " << r << ", m = " << m << " at " << simd::name(simd::active());
      }
      append(out, std::vector<T>(got, got + 4));
    }
    const std::int64_t rows = 5, ld = m + 3;
    auto tile = uniform<T>(static_cast<std::size_t>(rows * ld), -1, 1, 97 + static_cast<std::uint64_t>(m));
    auto alpha = uniform<T>(static_cast<std::size_t>(rows), 0, 2, 98 + static_cast<std::uint64_t>(m));
    for (std::int64_t i = 0; i < rows; ++i) tile[static_cast<std::size_t>(i * ld)] = -T(0);  // stays −0 only if assigned
    tile[static_cast<std::size_t>(ld + m / 3)] = std::numeric_limits<T>::quiet_NaN();
    alpha[3] = T(0);
    dot_rows_axpy_against_one_row_forms(k, stride, w, tile, ld, alpha, m, out);
  }
  return out;
}
TEST(SimdLevels, StreamingScalingKernelsHaveTheBitsOfTheirOneRowForms) {
  check_at_each_level_then_bits("streaming scaling kernels",
                                [](auto zero) { return stream_kernels_at_this_level<decltype(zero)>(); });
}

/// Values across every case of FixedPoint::split: magnitudes from far below
/// the lowest limb (truncated away) to above the highest (not held), zeros of
/// both signs, subnormals, ±∞ and NaN.
template <class T>
std::vector<T> deposit_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> mantissa(1, 2);
  std::uniform_int_distribution<int> exponent(-100, 40);
  std::vector<T> v(n);
  for (std::size_t k = 0; k < n; ++k) {
    const double x = std::ldexp(mantissa(engine), exponent(engine)) * (engine() % 3 == 0 ? -1 : 1);
    v[k] = static_cast<T>(x);
  }
  const T specials[] = {T(0), -T(0), std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(), T(0x1p31),
                        T(0x1p32), T(-0x1p-84), T(0x1.8p-85)};
  for (std::size_t k = 0; k < sizeof specials / sizeof specials[0] && 3 * k < n; ++k) v[3 * k] = specials[k];
  return v;
}

/// deposit_columns_host against a loop of ColumnFixed::deposit (poison where
/// it refuses), at every level, with and without the power-of-two scales.
template <class T>
void check_column_deposits() {
  using Fixed = dist::UnitFixed;
  std::vector<simd::Level> levels{simd::Level::baseline};
  for (const auto level : levels_above_baseline()) levels.push_back(level);
  for (const auto count : lengths) {
    const auto values = deposit_values<T>(static_cast<std::size_t>(count), 90 + static_cast<std::uint64_t>(count));
    std::vector<double> scale(static_cast<std::size_t>(count));
    for (std::int64_t k = 0; k < count; ++k) scale[static_cast<std::size_t>(k)] = std::ldexp(1.0, static_cast<int>(k % 41) - 20);
    for (const bool scaled : {false, true}) {
      // Limbs that already hold something, as after earlier row tiles.
      std::vector<std::int64_t> start(static_cast<std::size_t>(count * Fixed::limbs));
      for (std::size_t k = 0; k < start.size(); ++k) start[k] = static_cast<std::int64_t>(k * 2654435761u % 100000) - 50000;
      auto expected = start;
      int refused = 0;
      for (std::int64_t k = 0; k < count; ++k) {
        const double x = static_cast<double>(values[static_cast<std::size_t>(k)]) *
                         (scaled ? scale[static_cast<std::size_t>(k)] : 1.0);
        if (!Fixed::deposit(expected.data() + k * Fixed::limbs, x)) {
          Fixed::poison(expected.data() + k * Fixed::limbs);
          ++refused;
        }
      }
      if (count >= 16) {
        EXPECT_GT(refused, 0) << count;  // ±∞ and NaN are in every input of 16 or more
      }
      for (const auto level : levels) {
        simd::ScopedLevel at(level);
        auto got = start;
        ot::detail::deposit_columns_host(got.data(), values.data(), scaled ? scale.data() : nullptr, count);
        EXPECT_EQ(got, expected) << simd::name(level) << ", " << count << " columns, scaled " << scaled;
      }
    }
  }
}

TEST(SimdLevels, ColumnDepositsHaveTheBitsOfFixedPointDeposits) {
  check_column_deposits<float>();
  check_column_deposits<double>();
}

template <class Out>
Outputs cost_rows_of(ot::Cost kind, std::uint64_t seed) {
  Outputs out;
  const int dim = 13;
  const std::int64_t pool = 1100;
  // Coordinate-major pool; points 0 and 1 coincide (zero costs, zero gradient weights).
  auto pool_t = uniform<double>(static_cast<std::size_t>(dim * pool), -2, 2, seed);
  for (int k = 0; k < dim; ++k) pool_t[static_cast<std::size_t>(k * pool + 1)] = pool_t[static_cast<std::size_t>(k * pool)];
  std::vector<double> norms(static_cast<std::size_t>(pool));
  for (std::int64_t r = 0; r < pool; ++r) {
    double n2 = 0;
    for (int k = 0; k < dim; ++k) n2 += pool_t[static_cast<std::size_t>(k * pool + r)] * pool_t[static_cast<std::size_t>(k * pool + r)];
    norms[static_cast<std::size_t>(r)] = std::sqrt(n2);
  }
  for (const auto count : lengths) {
    std::vector<Out> row(static_cast<std::size_t>(count));
    out.push_back(ot::detail::cost_row_host(kind, pool_t.data(), pool_t.data(), pool, dim, count, norms[0], norms.data(),
                                            row.data(), true));
    append(out, row);
    const auto h = uniform<Out>(static_cast<std::size_t>(count), -1, 1, seed + static_cast<std::uint64_t>(count));
    for (const bool squared : {false, true}) {
      std::vector<double> grad(static_cast<std::size_t>(dim));
      ot::detail::row_gradient_host(row.data(), h.data(), count, Out(1.5), Out(-0.25), squared, pool_t.data(),
                                    pool_t.data(), pool, dim, grad.data());
      append(out, grad);
    }
  }
  return out;
}
TEST(SimdLevels, CostRowsAndGradientsHaveTheBaselineBits) {
  for (const auto kind : {ot::Cost::euclidean, ot::Cost::sqeuclidean, ot::Cost::cosine}) {
    expect_same_bits_at_every_level(std::string("cost rows (float) ") + ot::cost_name(kind),
                                    [kind] { return cost_rows_of<float>(kind, 70); });
    expect_same_bits_at_every_level(std::string("cost rows (double) ") + ot::cost_name(kind),
                                    [kind] { return cost_rows_of<double>(kind, 71); });
  }
}

/// Whole batch solves in one Sinkhorn domain: potentials, costs and point
/// gradients (the scaling domain's dot products, column sums, kernel rows and
/// row ranges all run at the level under test).
template <class T>
Outputs batch_solves(ot::SinkhornDomain domain, std::uint64_t seed) {
  constexpr int dim = 3;
  std::vector<std::vector<T>> clouds;
  for (const std::size_t n : {37u, 64u, 5u, 129u}) clouds.push_back(uniform<T>(n * dim, -1, 1, seed++));
  const auto batch = ot::make_cloud_batch<T>(clouds, dim);
  ot::SinkhornOptions o;
  o.domain = domain;
  o.epsilon = 0.2;
  o.relative_epsilon = true;
  o.tau_b = 0.9;
  o.tol = 1e-6;
  o.max_iter = 500;
  o.point_gradients = true;
  const auto r = ot::sinkhorn<T>(batch, {{0, 1}, {2, 3}, {3, 1}, {1, 1}}, ot::Cost::sqeuclidean, o);
  Outputs out;
  for (const auto& s : r.summaries()) out.insert(out.end(), {s.cost, s.objective, double(s.iterations)});
  auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.f);
  auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.g);
  auto grad = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.source_gradient);
  for (std::size_t i = 0; i < f.extent(0); ++i) out.push_back(static_cast<double>(f(i)));
  for (std::size_t j = 0; j < g.extent(0); ++j) out.push_back(static_cast<double>(g(j)));
  for (std::size_t i = 0; i < grad.extent(0); ++i)
    for (std::size_t k = 0; k < grad.extent(1); ++k) out.push_back(grad(i, k));
  return out;
}
TEST(SimdLevels, BatchSinkhornSolvesHaveTheBaselineBitsInBothDomains) {
  for (const auto domain : {ot::SinkhornDomain::scaling, ot::SinkhornDomain::log}) {
    const std::string name = ot::to_string(domain);
    expect_same_bits_at_every_level("batch Sinkhorn (float, " + name + ")",
                                    [domain] { return batch_solves<float>(domain, 90); });
    expect_same_bits_at_every_level("batch Sinkhorn (double, " + name + ")",
                                    [domain] { return batch_solves<double>(domain, 91); });
  }
}

template <class T>
Outputs momentum_rows(std::uint64_t seed) {
  Outputs out;
  for (const auto count : lengths) {
    const auto cost = uniform<T>(static_cast<std::size_t>(count), 0, 3, seed++);
    const auto log_v = uniform<T>(static_cast<std::size_t>(count), -2, 2, seed++);
    auto plan = uniform<T>(static_cast<std::size_t>(count), 0, 0.01, seed++);
    double sums[3];
    gw::detail::momentum_row_host(cost.data(), plan.data(), log_v.data(), count, T(-0.7), T(40), T(0.8), sums);
    append(out, plan);
    out.insert(out.end(), sums, sums + 3);
  }
  return out;
}
TEST(SimdLevels, GwMomentumRowsHaveTheBaselineBits) {
  expect_same_bits_at_every_level("GW momentum rows (double)", [] { return momentum_rows<double>(90); });
  expect_same_bits_at_every_level("GW momentum rows (float)", [] { return momentum_rows<float>(91); });
}

TEST(SimdLevels, ProjectionBlocksHaveTheBaselineBits) {
  expect_same_bits_at_every_level("projection blocks", [] {
    Outputs out;
    for (const std::int64_t d : {1, 7, 50, 2000}) {
      const auto x = uniform<float>(static_cast<std::size_t>(4 * d), -3, 3, 110 + static_cast<std::uint64_t>(d));
      const std::int64_t ld_a = 11;
      const auto a_t = uniform<double>(static_cast<std::size_t>(d * ld_a), -1, 1, 120 + static_cast<std::uint64_t>(d));
      const float* rows[4] = {x.data(), x.data() + d, x.data() + 2 * d, x.data() + 3 * d};
      double sums[32];
      stage::detail::project_block_host(rows, a_t.data(), ld_a, d, sums);
      out.insert(out.end(), sums, sums + 32);
    }
    return out;
  });
}

TEST(SimdLevels, PricingScansHaveTheBaselineAnswers) {
  expect_same_bits_at_every_level("pricing scans", [] {
    Outputs out;
    std::uint64_t seed = 130;
    for (const auto count : lengths) {
      // Costs on a coarse grid, so that equal reduced costs (ties) are common.
      auto cost = uniform<double>(static_cast<std::size_t>(count), 0, 8, ++seed);
      for (auto& c : cost) c = std::floor(c);
      const auto pi_col = uniform<double>(static_cast<std::size_t>(count), 0, 4, ++seed);
      auto pi_grid = pi_col;
      for (auto& p : pi_grid) p = std::floor(p);
      std::vector<std::int8_t> out_of_basis(static_cast<std::size_t>(count));
      std::mt19937_64 engine(++seed);
      for (auto& o : out_of_basis) o = static_cast<std::int8_t>(engine() % 4 != 0);
      const std::vector<double>* prices[] = {&pi_col, &pi_grid};
      for (const auto* pi : prices)
        for (const double start : {0.0, -2.0, -100.0}) {
          double best = start;
          const auto at = ot::detail::price_segment_host(cost.data(), out_of_basis.data(), pi->data(), 1.0,
                                                         static_cast<std::int32_t>(count), best);
          out.push_back(at);
          out.push_back(best);
        }
    }
    return out;
  });
}

/// The potentials, the iteration count and the plan applications of one tiled solve.
template <class T>
Outputs tiled_potentials(ot::Cost kind, bool labelled, ot::CostStorage storage, ot::SinkhornDomain domain) {
  static const dist::Comm self(MPI_COMM_SELF);
  // 71 rows: a full row tile, then blocks of 4, 2 and 1 rows in the products.
  const auto x = ot::test::random_cloud(71, 9, 1), y = ot::test::random_cloud(300, 9, 2);
  ot::PointCost cost;
  cost.kind = kind;
  cost.feature_weight = 0.75;
  if (labelled) cost.label = ot::test::label_table(3, 3, 1.5);
  ot::test::DevicePoints<T> dx(x), dy(y);
  ot::TiledSinkhornOptions o;
  o.epsilon = 0.05;
  o.threshold = 1e-9;
  o.max_iterations = 300;
  o.storage = storage;
  o.domain = domain;
  ot::TiledSinkhorn<T> solver(self, ot::RowBlock::of(x.n, 1, 0), dx.view(), dy.view(), cost, o);
  const auto report = solver.solve();
  EXPECT_EQ(report.scaling_domain, domain == ot::SinkhornDomain::scaling);
  Outputs out = solver.f();
  auto append = [&out](const std::vector<double>& more) { out.insert(out.end(), more.begin(), more.end()); };
  append(solver.g());
  out.push_back(static_cast<double>(report.iterations));
  append(solver.apply(std::vector<double>(static_cast<std::size_t>(y.n), 1.0), y.labels, 3));
  append(solver.transpose_apply(x.weights, x.labels, 3));
  const auto blocks = solver.block_sums(x.labels, 3, y.labels, 3);
  append(blocks.mass);
  append(blocks.cost);
  return out;
}
TEST(SimdLevels, TiledSinkhornSolvesHaveTheBaselineBits) {
  for (const auto kind : {ot::Cost::euclidean, ot::Cost::sqeuclidean, ot::Cost::cosine}) {
    for (const auto& way : {std::make_pair(ot::CostStorage::online, ot::SinkhornDomain::log),
                            std::make_pair(ot::CostStorage::stored, ot::SinkhornDomain::scaling)}) {
      const ot::CostStorage storage = way.first;
      const ot::SinkhornDomain domain = way.second;
      const std::string how = std::string(ot::storage_name(storage)) + " " + ot::to_string(domain) + " ";
      expect_same_bits_at_every_level(how + "tiled Sinkhorn (float) " + ot::cost_name(kind), [=] {
        return tiled_potentials<float>(kind, kind == ot::Cost::cosine, storage, domain);
      });
      expect_same_bits_at_every_level(how + "tiled Sinkhorn (double) " + ot::cost_name(kind), [=] {
        return tiled_potentials<double>(kind, kind != ot::Cost::cosine, storage, domain);
      });
    }
  }
}

}  // namespace
}  // namespace kotml
