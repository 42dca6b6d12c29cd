// Host kernels of the scaling-domain Sinkhorn (sinkhorn_scaling.cpp,
// tiled_scaling.hpp) and of the tiled plan's rows (tiled_sweeps.hpp), compiled
// per x86 SIMD level with the flags of every host SIMD file (src/CMakeLists.txt).
// The dot product keeps W accumulators: lane l adds the terms j ≡ l (mod W) in
// increasing j and the lanes are combined in a fixed pairwise tree, so its bits
// depend on the inputs alone; its four-row forms do the same per row. The
// other loops are element by element (the column sums beside the dot products
// too), and the column deposits integer arithmetic (exact in any grouping).

#include <cstdint>
#include <cstring>
#include <limits>

#include "kotml/dist/fixed_point.hpp"

#include "kotml/core/prefetch.hpp"
#include "kotml/core/simd_levels.hpp"
#include "kotml/ot/fast_exp.hpp"
#include "scaling_host.hpp"
#include "unroll.hpp"

namespace kotml::ot::detail {
namespace {

/// GCC's vector type: W lanes of T, one register at x86-64-v4, split below it.
template <class T, int W>
struct LaneVector {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
};
template <class T, int W>
using Lanes = typename LaneVector<T, W>::type;

/// The fixed pairwise tree of a W-lane dot product: for width W/2, W/4, …, 1,
/// lane l < width adds lane l + width. Each step adds the vector's low half
/// and its high half, which is that step for every lane it keeps, in the
/// scalar tree's operand order (so the same bits, NaN payloads included),
/// in a few vector instructions instead of W − 1 scalar additions and the
/// extractions before them: per 256-column tile of the tiled pass the scalar
/// tree took a quarter of a model loop's time.
template <class T, int W>
__attribute__((always_inline)) inline T tree_lanes(const Lanes<T, W>& v) {
  if constexpr (W == 1) {
    return v[0];
  } else {
    Lanes<T, W / 2> low, high;
    std::memcpy(&low, &v, sizeof(low));
    std::memcpy(&high, reinterpret_cast<const char*>(&v) + sizeof(low), sizeof(high));
    return tree_lanes<T, W / 2>(low + high);
  }
}

/// The end of a W-lane dot product: the terms past `full` into their lanes
/// (+0 in the lanes with none, as a scalar lane loop adds it), then the tree.
template <class T, int W>
__attribute__((always_inline)) inline T finish_lanes(const Lanes<T, W>& lanes, const T* __restrict k,
                                                     const T* __restrict w, std::int64_t full, std::int64_t m) {
  Lanes<T, W> t = {};
  if (full < m) {  // a tile's rows have none: skip the lane-by-lane selects
    T tail[W];
    KOTML_OT_UNROLL
    for (int l = 0; l < W; ++l) tail[l] = full + l < m ? k[full + l] * w[full + l] : T(0);
    std::memcpy(&t, tail, sizeof(t));
  }
  return tree_lanes<T, W>(lanes + t);
}

template <class T, int W>
__attribute__((always_inline)) inline T dot_lanes(const T* __restrict k, const T* __restrict w, std::int64_t m) {
  const std::int64_t full = m - m % W;
  Lanes<T, W> sum = {};
  for (std::int64_t j = 0; j < full; j += W) {
    Lanes<T, W> kv, wv;
    std::memcpy(&kv, k + j, sizeof(kv));
    std::memcpy(&wv, w + j, sizeof(wv));
    sum += kv * wv;
  }
  return finish_lanes<T, W>(sum, k, w, full, m);
}

/// dot_lanes for 4 rows at once, row r at k + r·k_stride against w + r·w_stride:
/// each row's lanes and tree are dot_lanes', so each result has its bits; the
/// rows are 4 concurrent streams from memory, which one core reads faster than
/// one stream.
static_assert(scaling_stream_rows == 4, "dot_lanes_4 reads four rows");

/// How far ahead of the four rows read from memory their cache lines are
/// requested, in elements. The rows of a row-major kernel: 2 KiB further
/// along each row. On a Zen 5 guest the hardware's prefetchers alone left the
/// batch solver's row pass at about 70% of the read rate BM_ReadBandwidth
/// measured (perf/RESULTS.md, "Software prefetch"). A hint only: no result
/// depends on it.
template <class T>
constexpr std::int64_t row_prefetch_ahead = 2048 / static_cast<std::int64_t>(sizeof(T));
/// The tiled joint pass reads each column tile's four rows as one short run
/// (4 KiB in fp32) and then jumps to the next tile, a run the prefetchers
/// cannot foresee: the same rows of the tile this many tiles on are requested.
constexpr std::int64_t tile_prefetch_tiles = 1;

/// Columns [j, j + W) of four rows' dot products into their lanes, with the
/// line `ahead` elements further on in each row requested.
template <class T, int W>
__attribute__((always_inline)) inline void add_row_lanes_4(Lanes<T, W>* sums, const T* __restrict k,
                                                           std::int64_t k_stride, const T* __restrict w,
                                                           std::int64_t w_stride, std::int64_t j,
                                                           std::int64_t ahead) {
  static_assert(W * sizeof(T) <= 64, "one request per cache line at most");
  KOTML_OT_UNROLL
  for (int r = 0; r < 4; ++r) {
    kotml::prefetch_line(k + r * k_stride + j + ahead);
    Lanes<T, W> kv, wv;
    std::memcpy(&kv, k + r * k_stride + j, sizeof(kv));
    std::memcpy(&wv, w + r * w_stride + j, sizeof(wv));
    sums[r] += kv * wv;
  }
}

/// The four rows' dot products from their lanes (finish_lanes per row).
template <class T, int W>
__attribute__((always_inline)) inline void finish_rows_4(const Lanes<T, W>* sums, const T* __restrict k,
                                                         std::int64_t k_stride, const T* __restrict w,
                                                         std::int64_t w_stride, std::int64_t full, std::int64_t m,
                                                         T* __restrict out) {
  for (int r = 0; r < 4; ++r) out[r] = finish_lanes<T, W>(sums[r], k + r * k_stride, w + r * w_stride, full, m);
}
template <class T, int W>
__attribute__((always_inline)) inline void dot_lanes_4(const T* __restrict k, std::int64_t k_stride,
                                                       const T* __restrict w, std::int64_t w_stride, std::int64_t m,
                                                       T* __restrict out, std::int64_t ahead) {
  const std::int64_t full = m - m % W;
  Lanes<T, W> sums[4] = {};
  for (std::int64_t j = 0; j < full; j += W) add_row_lanes_4<T, W>(sums, k, k_stride, w, w_stride, j, ahead);
  finish_rows_4<T, W>(sums, k, k_stride, w, w_stride, full, m, out);
}

/// One sweep over the columns that does two things: dot_lanes_4's dot
/// products of the four rows at `next` (when Dots), and the four rows at
/// `prev` into the one acc: row r adds alpha[r]·prev_r, in row order, the
/// first assigning when Assign (a block's rows into its column sums). Element
/// by element these are axpy's operations, and the dot products keep
/// dot_lanes' lanes and tree, so every result has the bits of the one-row
/// forms. The point is the overlap: prev's rows were read just before and
/// come from cache while next's stream in from memory.
template <class T, int W, bool Dots, bool Assign>
__attribute__((always_inline)) inline void dot_rows_then_axpy_4(const T* __restrict next, std::int64_t next_stride,
                                                                const T* __restrict w, std::int64_t w_stride,
                                                                T* __restrict out, const T* __restrict prev,
                                                                std::int64_t prev_stride, const T* __restrict alpha,
                                                                T* __restrict acc, std::int64_t m, std::int64_t ahead) {
  using Lanes = kotml::ot::detail::Lanes<T, W>;
  const std::int64_t full = m - m % W;
  Lanes sums[4] = {};
  Lanes av[4];  // each α in every lane, copied (0 + α would turn a −0 into +0)
  for (int r = 0; r < 4; ++r) {
    T fill[W];
    for (int l = 0; l < W; ++l) fill[l] = alpha[r];
    std::memcpy(&av[r], fill, sizeof(fill));
  }
  for (std::int64_t j = 0; j < full; j += W) {
    if constexpr (Dots) add_row_lanes_4<T, W>(sums, next, next_stride, w, w_stride, j, ahead);
    Lanes p, o;
    std::memcpy(&p, prev + j, sizeof(p));
    if constexpr (Assign) {
      o = av[0] * p;
    } else {
      std::memcpy(&o, acc + j, sizeof(o));
      o += av[0] * p;
    }
    KOTML_OT_UNROLL
    for (int r = 1; r < 4; ++r) {
      std::memcpy(&p, prev + r * prev_stride + j, sizeof(p));
      o += av[r] * p;
    }
    std::memcpy(acc + j, &o, sizeof(o));
  }
  for (std::int64_t j = full; j < m; ++j)
    for (int r = 0; r < 4; ++r) {
      const T p = prev[r * prev_stride + j];
      acc[j] = Assign && r == 0 ? alpha[r] * p : acc[j] + alpha[r] * p;
    }
  if constexpr (Dots) finish_rows_4<T, W>(sums, next, next_stride, w, w_stride, full, m, out);
}

template <class T, int W>
__attribute__((always_inline)) inline void dot_rows_axpy_4(const T* next, std::int64_t next_stride, const T* w,
                                                           std::int64_t w_stride, T* out, const T* prev,
                                                           std::int64_t prev_stride, const T* alpha, T* acc,
                                                           bool assign, std::int64_t m) {
  if (prev == nullptr) {
    if (next != nullptr) dot_lanes_4<T, W>(next, next_stride, w, w_stride, m, out, row_prefetch_ahead<T>);
    return;
  }
#define KOTML_OT_DOT_AXPY(D, A)                                                                             \
  return dot_rows_then_axpy_4<T, W, D, A>(next, next_stride, w, w_stride, out, prev, prev_stride, alpha, acc, m, \
                                          row_prefetch_ahead<T>)
  if (next != nullptr) {
    if (assign) KOTML_OT_DOT_AXPY(true, true);
    KOTML_OT_DOT_AXPY(true, false);
  }
  if (assign) KOTML_OT_DOT_AXPY(false, true);
  KOTML_OT_DOT_AXPY(false, false);
#undef KOTML_OT_DOT_AXPY
}

/// tile_rows_axpy_4 with its modes fixed: per column tile J (its row r at
/// J·tile_stride + r·width), the four next rows' dot products added to their
/// totals in tile order, and the four prev rows into acc + J·width in row
/// order.
template <class T, int W, bool Dots, bool Axpy, bool Assign>
__attribute__((always_inline)) inline void tile_rows_axpy_4_modes(const T* next, const T* prev,
                                                                  std::int64_t tile_stride, std::int64_t width,
                                                                  std::int64_t tiles, const T* w, const T* alpha,
                                                                  T* acc, double* totals) {
  // The look-ahead of the last tiles points past the row tile: a hint to
  // lines that may not be read, never a load.
  const std::int64_t ahead = tile_prefetch_tiles * tile_stride;
  for (std::int64_t J = 0; J < tiles; ++J) {
    T parts[4];
    const std::int64_t at = J * tile_stride;
    if constexpr (Axpy)  // next is null without the dots: no offset from it
      dot_rows_then_axpy_4<T, W, Dots, Assign>(Dots ? next + at : next, width, w + J * width, 0, parts, prev + at,
                                               width, alpha, acc + J * width, width, ahead);
    else
      dot_lanes_4<T, W>(next + at, width, w + J * width, 0, width, parts, ahead);
    if constexpr (Dots)
      for (int r = 0; r < 4; ++r) totals[r] += static_cast<double>(parts[r]);
  }
}

template <class T, int W>
__attribute__((always_inline)) inline void tile_rows_axpy_4(const T* next, const T* prev, std::int64_t tile_stride,
                                                            std::int64_t width, std::int64_t tiles, const T* w,
                                                            const T* alpha, T* acc, bool assign, double* totals) {
  if (prev == nullptr) {
    if (next != nullptr)
      tile_rows_axpy_4_modes<T, W, true, false, false>(next, prev, tile_stride, width, tiles, w, alpha, acc, totals);
    return;
  }
  if (next != nullptr) {
    if (assign)
      return tile_rows_axpy_4_modes<T, W, true, true, true>(next, prev, tile_stride, width, tiles, w, alpha, acc,
                                                            totals);
    return tile_rows_axpy_4_modes<T, W, true, true, false>(next, prev, tile_stride, width, tiles, w, alpha, acc,
                                                           totals);
  }
  if (assign)
    return tile_rows_axpy_4_modes<T, W, false, true, true>(next, prev, tile_stride, width, tiles, w, alpha, acc,
                                                           totals);
  tile_rows_axpy_4_modes<T, W, false, true, false>(next, prev, tile_stride, width, tiles, w, alpha, acc, totals);
}

template <class T>
__attribute__((always_inline)) inline void axpy(const T* __restrict k, std::int64_t m, T alpha, T* __restrict acc,
                                                bool assign) {
  if (assign)
    for (std::int64_t j = 0; j < m; ++j) acc[j] = alpha * k[j];
  else
    for (std::int64_t j = 0; j < m; ++j) acc[j] += alpha * k[j];
}

/// ColumnFixed deposits of (double)acc_k·scale_k into limbs[k·4, k·4 + 4):
/// FixedPoint::split written without branches over a chunk of columns, so
/// that it vectorises, then the chunk's additions (a refused value poisons its
/// column). The same limbs as a loop of FixedPoint::deposit, poisoning where
/// it returns false, bit for bit.
template <class T, bool Scaled>
__attribute__((always_inline)) inline void deposit_columns(std::int64_t* __restrict limbs, const T* __restrict acc,
                                                            const double* __restrict scale, std::int64_t width) {
  using F = dist::UnitFixed;
  constexpr int chunk = 16;
  const std::int64_t full = width - width % chunk;
  for (std::int64_t k0 = 0; k0 < full; k0 += chunk) {
    std::int64_t part0[chunk], part1[chunk], part2[chunk], first[chunk], refused[chunk];
    for (int l = 0; l < chunk; ++l) {
      const double x = Scaled ? static_cast<double>(acc[k0 + l]) * scale[k0 + l] : static_cast<double>(acc[k0 + l]);
      std::uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      const std::int64_t biased = static_cast<std::int64_t>((bits >> 52) & 0x7ff);
      std::uint64_t mantissa = bits & ((std::uint64_t(1) << 52) - 1);
      mantissa |= biased != 0 ? std::uint64_t(1) << 52 : 0;
      const std::int64_t exponent = biased != 0 ? biased - 1075 : -1074;
      refused[l] = (biased == 0x7ff) | ((mantissa != 0) & (exponent + 53 > F::highest_exponent));
      std::int64_t shift = exponent - F::lowest_exponent;
      const std::int64_t down = shift < 0 ? -shift : 0;
      mantissa = down >= 64 ? 0 : mantissa >> (down & 63);
      shift = shift < 0 ? 0 : shift;
      first[l] = shift / F::limb_bits;
      const std::int64_t offset = shift % F::limb_bits;
      const std::uint64_t t0 = (mantissa & 0xffffffffULL) << (offset & 63);
      const std::uint64_t t1 = (mantissa >> 32) << (offset & 63);
      const std::int64_t negative = -static_cast<std::int64_t>(bits >> 63);  // all ones or zero: (v ^ n) − n = ±v
      part0[l] = (static_cast<std::int64_t>(t0 & 0xffffffffULL) ^ negative) - negative;
      part1[l] = (static_cast<std::int64_t>((t0 >> 32) + (t1 & 0xffffffffULL)) ^ negative) - negative;
      part2[l] = (static_cast<std::int64_t>(t1 >> 32) ^ negative) - negative;
    }
    for (int l = 0; l < chunk; ++l) {
      std::int64_t* limb = limbs + (k0 + l) * F::limbs;
      if (refused[l] != 0) {
        F::poison(limb);
        continue;
      }
      const std::int64_t at = first[l];
      if (at < F::limbs) limb[at] += part0[l];
      if (at + 1 < F::limbs) limb[at + 1] += part1[l];
      if (at + 2 < F::limbs) limb[at + 2] += part2[l];
    }
  }
  for (std::int64_t k = full; k < width; ++k) {
    const double x = Scaled ? static_cast<double>(acc[k]) * scale[k] : static_cast<double>(acc[k]);
    if (!F::deposit(limbs + k * F::limbs, x)) F::poison(limbs + k * F::limbs);
  }
}

/// top_k = max(top_k, alpha_i·k_ik) over the rows of a tile (leading dimension
/// ld), rows in order: each column sees the comparisons of the portable
/// column-by-column loop in the same order, here vectorised across columns.
template <class T>
__attribute__((always_inline)) inline void column_max(const T* __restrict tile, std::int64_t ld, std::int64_t rows,
                                                      std::int64_t width, const T* __restrict alpha,
                                                      T* __restrict top) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const T a = alpha[i];
    const T* __restrict row = tile + i * ld;
    for (std::int64_t k = 0; k < width; ++k) {
      const T v = a * row[k];
      top[k] = v > top[k] ? v : top[k];
    }
  }
}

/// out_j = exp((shift + g_j − c_j)·s).
template <class T>
__attribute__((always_inline)) inline void kernel_row(const T* __restrict c, const T* __restrict g, std::int64_t m,
                                                      T shift, T s, T* __restrict out) {
  for (std::int64_t j = 0; j < m; ++j) out[j] = fast_exp((shift + g[j] - c[j]) * s);
}

/// out_j = exp(u + h_j − s·c_j): one row of a tiled plan (the entry of
/// tiled_sweeps.hpp's portable loops, written the same way).
template <class T>
__attribute__((always_inline)) inline void plan_row(const T* __restrict c, const T* __restrict h, std::int64_t m, T u,
                                                    T s, T* __restrict out) {
  for (std::int64_t j = 0; j < m; ++j) out[j] = fast_exp(u + h[j] - s * c[j]);
}

/// min_j and max_j of c_j − g_j, in W lanes (minimum and maximum are exact, so
/// the lanes change no result; they let the loop vectorise).
template <class T, int W>
__attribute__((always_inline)) inline void row_range(const T* __restrict c, const T* __restrict g, std::int64_t m,
                                                     T* low, T* high) {
  T lo[W], hi[W];
  for (int l = 0; l < W; ++l) {
    lo[l] = std::numeric_limits<T>::infinity();
    hi[l] = -std::numeric_limits<T>::infinity();
  }
  const std::int64_t full = m - m % W;
  for (std::int64_t j = 0; j < full; j += W)
    for (int l = 0; l < W; ++l) {
      const T d = c[j + l] - g[j + l];
      lo[l] = d < lo[l] ? d : lo[l];
      hi[l] = d > hi[l] ? d : hi[l];
    }
  for (std::int64_t j = full; j < m; ++j) {
    const T d = c[j] - g[j];
    lo[0] = d < lo[0] ? d : lo[0];
    hi[0] = d > hi[0] ? d : hi[0];
  }
  for (int l = 1; l < W; ++l) {
    lo[0] = lo[l] < lo[0] ? lo[l] : lo[0];
    hi[0] = hi[l] > hi[0] ? hi[l] : hi[0];
  }
  *low = lo[0];
  *high = hi[0];
}

}  // namespace

KOTML_SIMD_DISPATCHED(double, scaling_dot_host, (const double* k, const double* w, std::int64_t m), (k, w, m),
                      dot_lanes<double, 8>(k, w, m))
KOTML_SIMD_DISPATCHED(float, scaling_dot_host, (const float* k, const float* w, std::int64_t m), (k, w, m),
                      dot_lanes<float, 16>(k, w, m))

KOTML_SIMD_DISPATCHED(void, scaling_dot_rows_host,
                      (const double* k, std::int64_t k_stride, const double* w, std::int64_t w_stride, std::int64_t m,
                       double* out),
                      (k, k_stride, w, w_stride, m, out),
                      dot_lanes_4<double, 8>(k, k_stride, w, w_stride, m, out, row_prefetch_ahead<double>))
KOTML_SIMD_DISPATCHED(void, scaling_dot_rows_host,
                      (const float* k, std::int64_t k_stride, const float* w, std::int64_t w_stride, std::int64_t m,
                       float* out),
                      (k, k_stride, w, w_stride, m, out),
                      dot_lanes_4<float, 16>(k, k_stride, w, w_stride, m, out, row_prefetch_ahead<float>))

#define KOTML_OT_DOT_ROWS_AXPY(T, W)                                                                          \
  KOTML_SIMD_DISPATCHED(void, scaling_dot_rows_axpy_host,                                                     \
                        (const T* next, std::int64_t next_stride, const T* w, std::int64_t w_stride, T* out,  \
                         const T* prev, std::int64_t prev_stride, const T* alpha, T* acc, bool assign,        \
                         std::int64_t m),                                                                     \
                        (next, next_stride, w, w_stride, out, prev, prev_stride, alpha, acc, assign, m),      \
                        dot_rows_axpy_4<T, W>(next, next_stride, w, w_stride, out, prev, prev_stride, alpha,  \
                                              acc, assign, m))
KOTML_OT_DOT_ROWS_AXPY(double, 8)
KOTML_OT_DOT_ROWS_AXPY(float, 16)
#undef KOTML_OT_DOT_ROWS_AXPY

#define KOTML_OT_TILE_ROWS_AXPY(T, W)                                                                         \
  KOTML_SIMD_DISPATCHED(void, scaling_tile_rows_axpy_host,                                                    \
                        (const T* next, const T* prev, std::int64_t tile_stride, std::int64_t width,          \
                         std::int64_t tiles, const T* w, const T* alpha, T* acc, bool assign, double* totals), \
                        (next, prev, tile_stride, width, tiles, w, alpha, acc, assign, totals),               \
                        tile_rows_axpy_4<T, W>(next, prev, tile_stride, width, tiles, w, alpha, acc, assign,  \
                                               totals))
KOTML_OT_TILE_ROWS_AXPY(double, 8)
KOTML_OT_TILE_ROWS_AXPY(float, 16)
#undef KOTML_OT_TILE_ROWS_AXPY

KOTML_SIMD_DISPATCHED(void, scaling_axpy_host,
                      (const double* k, std::int64_t m, double alpha, double* acc, bool assign),
                      (k, m, alpha, acc, assign), axpy<double>(k, m, alpha, acc, assign))
KOTML_SIMD_DISPATCHED(void, scaling_axpy_host, (const float* k, std::int64_t m, float alpha, float* acc, bool assign),
                      (k, m, alpha, acc, assign), axpy<float>(k, m, alpha, acc, assign))

KOTML_SIMD_DISPATCHED(void, deposit_columns_host,
                      (std::int64_t * limbs, const double* acc, const double* scale, std::int64_t width),
                      (limbs, acc, scale, width),
                      scale != nullptr ? deposit_columns<double, true>(limbs, acc, scale, width)
                                       : deposit_columns<double, false>(limbs, acc, scale, width))
KOTML_SIMD_DISPATCHED(void, deposit_columns_host,
                      (std::int64_t * limbs, const float* acc, const double* scale, std::int64_t width),
                      (limbs, acc, scale, width),
                      scale != nullptr ? deposit_columns<float, true>(limbs, acc, scale, width)
                                       : deposit_columns<float, false>(limbs, acc, scale, width))

KOTML_SIMD_DISPATCHED(void, scaling_column_max_host,
                      (const double* tile, std::int64_t ld, std::int64_t rows, std::int64_t width,
                       const double* alpha, double* top),
                      (tile, ld, rows, width, alpha, top), column_max<double>(tile, ld, rows, width, alpha, top))
KOTML_SIMD_DISPATCHED(void, scaling_column_max_host,
                      (const float* tile, std::int64_t ld, std::int64_t rows, std::int64_t width,
                       const float* alpha, float* top),
                      (tile, ld, rows, width, alpha, top), column_max<float>(tile, ld, rows, width, alpha, top))

KOTML_SIMD_DISPATCHED(void, scaling_kernel_row_host,
                      (const double* c, const double* g, std::int64_t m, double shift, double s, double* out),
                      (c, g, m, shift, s, out), kernel_row<double>(c, g, m, shift, s, out))
KOTML_SIMD_DISPATCHED(void, scaling_kernel_row_host,
                      (const float* c, const float* g, std::int64_t m, float shift, float s, float* out),
                      (c, g, m, shift, s, out), kernel_row<float>(c, g, m, shift, s, out))

KOTML_SIMD_DISPATCHED(void, plan_row_host,
                      (const double* c, const double* h, std::int64_t m, double u, double s, double* out),
                      (c, h, m, u, s, out), plan_row<double>(c, h, m, u, s, out))
KOTML_SIMD_DISPATCHED(void, plan_row_host,
                      (const float* c, const float* h, std::int64_t m, float u, float s, float* out),
                      (c, h, m, u, s, out), plan_row<float>(c, h, m, u, s, out))

KOTML_SIMD_DISPATCHED(void, scaling_row_range_host,
                      (const double* c, const double* g, std::int64_t m, double* low, double* high),
                      (c, g, m, low, high), row_range<double, 8>(c, g, m, low, high))
KOTML_SIMD_DISPATCHED(void, scaling_row_range_host,
                      (const float* c, const float* g, std::int64_t m, float* low, float* high),
                      (c, g, m, low, high), row_range<float, 16>(c, g, m, low, high))

}  // namespace kotml::ot::detail
