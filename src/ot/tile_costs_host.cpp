// Host tile costs (see tile_costs.hpp): a register-blocked product of the
// tile's rows of x with its k-major panel of y (AVX2 + FMA intrinsics where the
// active SIMD level has them), then the OTT formula row by row (one copy per
// SIMD level, kotml/core/simd_levels.hpp). Each entry's feature sum is one
// chain of fused multiply-adds in coordinate order from zero, exactly as TileCostData::entry computes it, so
// every CPU (and the portable loop) gives the same bits; the blocking only
// keeps R × 16 independent chains in registers.
//
// Built at -O3 without FMA contraction (only the explicit fma calls fuse) and
// without errno from sqrt, so that the loops vectorise (src/CMakeLists.txt).

#include "tile_costs.hpp"

#include "kotml/core/simd_levels.hpp"

#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace kotml::ot::detail {
namespace {

// ------------------------------------------------------------- products
//
// acc(i, j) = Σ_k x(i, k)·y(j, k) (or Σ_k (x − y)², Difference) as one chain
// of fused multiply-adds per entry in k order. The AVX2 kernel keeps R rows ×
// 16 (float) or 8 (double) columns of chains in registers; the portable
// kernel computes each chain alone. Both round exactly alike, so every CPU
// and TileCostData::entry give the same bits.

/// The portable kernel (CPUs without FMA, and remainders): one chain at a time.
template <class T, bool Difference>
void products_portable(const T* x, std::int64_t ldx, std::int64_t rows, const T* panel, std::int64_t width,
                       int dim, T* out) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < width; ++j) {
      T acc = 0;
      for (int k = 0; k < dim; ++k) {
        const T xv = x[i * ldx + k], yv = panel[static_cast<std::int64_t>(k) * tile_cols + j];
        if constexpr (Difference) {
          const T diff = xv - yv;
          acc = std::fma(diff, diff, acc);
        } else {
          acc = std::fma(xv, yv, acc);
        }
      }
      out[i * tile_cols + j] = acc;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define KOTML_TILE_AVX2 1

// Overloads that let one AVX2 block serve float and double.
#define KOTML_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline
KOTML_AVX2 __m256 load256(const float* p) { return _mm256_loadu_ps(p); }
KOTML_AVX2 __m256d load256(const double* p) { return _mm256_loadu_pd(p); }
KOTML_AVX2 void store256(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
KOTML_AVX2 void store256(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
KOTML_AVX2 __m256 splat256(const float* p) { return _mm256_broadcast_ss(p); }
KOTML_AVX2 __m256d splat256(const double* p) { return _mm256_broadcast_sd(p); }
KOTML_AVX2 __m256 zero256(const float*) { return _mm256_setzero_ps(); }
KOTML_AVX2 __m256d zero256(const double*) { return _mm256_setzero_pd(); }
KOTML_AVX2 __m256 fmadd256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
KOTML_AVX2 __m256d fmadd256(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
KOTML_AVX2 __m256 sub256(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
KOTML_AVX2 __m256d sub256(__m256d a, __m256d b) { return _mm256_sub_pd(a, b); }

/// R rows × two 256-bit vectors of columns (16 floats or 8 doubles), 2R
/// accumulators, one fused multiply-add chain per lane in k order.
template <int R, bool Difference, bool Prefetch, class T>
KOTML_AVX2 void block_avx2(const T* x, std::int64_t ldx, const T* panel, int dim, T* out, const T* ahead) {
  constexpr int lanes = 32 / sizeof(T);
  decltype(load256(panel)) acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = zero256(panel);
  for (int k = 0; k < dim; ++k) {
    const T* yk = panel + static_cast<std::int64_t>(k) * tile_cols;
    if constexpr (Prefetch) _mm_prefetch(reinterpret_cast<const char*>(ahead + static_cast<std::int64_t>(k) * tile_cols), _MM_HINT_T1);
    const auto y0 = load256(yk), y1 = load256(yk + lanes);
    for (int r = 0; r < R; ++r) {
      const auto xr = splat256(x + r * ldx + k);
      if constexpr (Difference) {
        const auto d0 = sub256(xr, y0), d1 = sub256(xr, y1);
        acc[r][0] = fmadd256(d0, d0, acc[r][0]);
        acc[r][1] = fmadd256(d1, d1, acc[r][1]);
      } else {
        acc[r][0] = fmadd256(xr, y0, acc[r][0]);
        acc[r][1] = fmadd256(xr, y1, acc[r][1]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    store256(out + r * tile_cols, acc[r][0]);
    store256(out + r * tile_cols + lanes, acc[r][1]);
  }
}
#undef KOTML_AVX2

// Overloads that let one AVX-512 block serve float and double.
#define KOTML_AVX512 __attribute__((target("avx512f"), always_inline)) inline
KOTML_AVX512 __m512 load512(const float* p) { return _mm512_loadu_ps(p); }
KOTML_AVX512 __m512d load512(const double* p) { return _mm512_loadu_pd(p); }
KOTML_AVX512 void store512(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
KOTML_AVX512 void store512(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
KOTML_AVX512 __m512 splat512(float v) { return _mm512_set1_ps(v); }
KOTML_AVX512 __m512d splat512(double v) { return _mm512_set1_pd(v); }
KOTML_AVX512 __m512 fmadd512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
KOTML_AVX512 __m512d fmadd512(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
KOTML_AVX512 __m512 sub512(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
KOTML_AVX512 __m512d sub512(__m512d a, __m512d b) { return _mm512_sub_pd(a, b); }

/// The same with two 512-bit vectors (32 floats or 16 doubles): per lane the
/// same chain as block_avx2.
template <int R, bool Difference, bool Prefetch, class T>
KOTML_AVX512 void block_avx512(const T* x, std::int64_t ldx, const T* panel, int dim, T* out, const T* ahead) {
  constexpr int lanes = 64 / sizeof(T);
  decltype(load512(panel)) acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = splat512(T(0));
  for (int k = 0; k < dim; ++k) {
    const T* yk = panel + static_cast<std::int64_t>(k) * tile_cols;
    if constexpr (Prefetch) {
      const char* line = reinterpret_cast<const char*>(ahead + static_cast<std::int64_t>(k) * tile_cols);
      _mm_prefetch(line, _MM_HINT_T1);
      _mm_prefetch(line + 64, _MM_HINT_T1);
    }
    const auto y0 = load512(yk), y1 = load512(yk + lanes);
    for (int r = 0; r < R; ++r) {
      const auto xr = splat512(x[r * ldx + k]);
      if constexpr (Difference) {
        const auto d0 = sub512(xr, y0), d1 = sub512(xr, y1);
        acc[r][0] = fmadd512(d0, d0, acc[r][0]);
        acc[r][1] = fmadd512(d1, d1, acc[r][1]);
      } else {
        acc[r][0] = fmadd512(xr, y0, acc[r][0]);
        acc[r][1] = fmadd512(xr, y1, acc[r][1]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    store512(out + r * tile_cols, acc[r][0]);
    store512(out + r * tile_cols + lanes, acc[r][1]);
  }
}
#undef KOTML_AVX512

/// The host SIMD blocks of one instruction set behind one interface: strips of
/// `strip` columns (two vectors), rows in blocks of `first_rows` where the tile
/// has them.
template <bool Difference>
struct Avx2Blocks {
  template <class T>
  static constexpr std::int64_t strip = 64 / sizeof(T);
  static constexpr int first_rows = 6;
  template <int R, bool Prefetch, class T>
  __attribute__((target("avx2,fma"))) static void block(const T* x, std::int64_t ldx, const T* panel, int dim, T* out,
                                                        const T* ahead) {
    block_avx2<R, Difference, Prefetch>(x, ldx, panel, dim, out, ahead);
  }
};

/// On cores with full-width AVX-512 units, twice the multiply-adds per cycle.
template <bool Difference>
struct Avx512Blocks {
  template <class T>
  static constexpr std::int64_t strip = 128 / sizeof(T);
  static constexpr int first_rows = 8;
  template <int R, bool Prefetch, class T>
  __attribute__((target("avx512f"))) static void block(const T* x, std::int64_t ldx, const T* panel, int dim, T* out,
                                                       const T* ahead) {
    block_avx512<R, Difference, Prefetch>(x, ldx, panel, dim, out, ahead);
  }
};

/// The tile's products: columns in strips up to the padded width (y is zero
/// past m), and for each, rows in blocks of first_rows (then 4, 2, 1): a strip
/// of the k-major panel stays in cache while every row block of the tile runs
/// over it. While the first row block walks a strip, the next strip (or the
/// next column tile's first, which follows this panel in y_packed) is fetched
/// into L2: a strip is one or two lines per 1 KB k-row, which the hardware
/// prefetchers do not follow across pages, so a walk that meets each panel once
/// (a row tile's sweep over column tiles) would otherwise wait on memory.
template <class Blocks, class T>
void products_in_strips(const T* x, std::int64_t ldx, std::int64_t rows, const T* panel, std::int64_t width, int dim,
                        T* out) {
  constexpr std::int64_t V = Blocks::template strip<T>;
  constexpr int R0 = Blocks::first_rows;
  const std::int64_t padded = (width + V - 1) / V * V;
  for (std::int64_t j = 0; j < padded; j += V) {
    const T* ahead = j + V < padded ? panel + j + V : panel + static_cast<std::int64_t>(dim) * tile_cols;
    T* strip_out = out + j;
    std::int64_t i = 0;
    if (i + R0 <= rows) {
      Blocks::template block<R0, true>(x, ldx, panel + j, dim, strip_out, ahead);
      i += R0;
    }
    for (; i + R0 <= rows; i += R0)
      Blocks::template block<R0, false>(x + i * ldx, ldx, panel + j, dim, strip_out + i * tile_cols, ahead);
    for (; i + 4 <= rows; i += 4)
      Blocks::template block<4, false>(x + i * ldx, ldx, panel + j, dim, strip_out + i * tile_cols, ahead);
    for (; i + 2 <= rows; i += 2)
      Blocks::template block<2, false>(x + i * ldx, ldx, panel + j, dim, strip_out + i * tile_cols, ahead);
    for (; i < rows; ++i)
      Blocks::template block<1, false>(x + i * ldx, ldx, panel + j, dim, strip_out + i * tile_cols, ahead);
  }
}

#endif

template <class T>
void products(const TileCostData<T>& d, const T* x, std::int64_t rows, const T* panel, std::int64_t width, T* out) {
  const bool difference = d.kind == Cost::euclidean;
#ifdef KOTML_TILE_AVX2
  // x86-64-v4 has AVX-512F; every level from x86-64-v3 up has AVX2 and FMA.
  if (simd::active() == simd::Level::x86_64_v4) {
    if (difference)
      products_in_strips<Avx512Blocks<true>>(x, d.dim, rows, panel, width, d.dim, out);
    else
      products_in_strips<Avx512Blocks<false>>(x, d.dim, rows, panel, width, d.dim, out);
    return;
  }
  if (simd::active() != simd::Level::baseline) {
    if (difference)
      products_in_strips<Avx2Blocks<true>>(x, d.dim, rows, panel, width, d.dim, out);
    else
      products_in_strips<Avx2Blocks<false>>(x, d.dim, rows, panel, width, d.dim, out);
    return;
  }
#endif
  if (difference)
    products_portable<T, true>(x, d.dim, rows, panel, width, d.dim, out);
  else
    products_portable<T, false>(x, d.dim, rows, panel, width, d.dim, out);
}

// ------------------------------------------------------------- formulas

/// OTT's formula, the weights and the label term over a tile of products, row
/// by row (vectorised across columns; every operation as in entry()).
template <class T>
__attribute__((always_inline)) inline void finish_tile(const TileCostData<T>& d, std::int64_t I, std::int64_t J,
                                                       T* __restrict out) {
  const std::int64_t rows = d.rows_in(I), width = d.cols_in(J);
  const std::int64_t row0 = I * tile_rows, col0 = J * tile_cols;
  const T fw = d.feature_weight, lw = d.label_weight;
  const bool labelled = d.label_table.extent(0) > 0;
  const T* yn = d.kind == Cost::euclidean ? nullptr : d.y_norm.data() + col0;
  const std::int32_t* yl = labelled ? d.y_label.data() + col0 : nullptr;
  for (std::int64_t i = 0; i < rows; ++i) {
    T* c = out + i * tile_cols;
    const T xn = d.kind == Cost::euclidean ? T(0) : d.x_norm(row0 + i);
    if (d.kind == Cost::sqeuclidean) {
      for (std::int64_t j = 0; j < width; ++j) c[j] = fw * ((xn + yn[j]) + T(-2) * c[j]);
    } else if (d.kind == Cost::cosine) {
      for (std::int64_t j = 0; j < width; ++j) c[j] = fw * (T(1) - c[j] / (xn * yn[j] + T(1e-8)));
    } else {
      for (std::int64_t j = 0; j < width; ++j) c[j] = fw * std::sqrt(c[j]);
    }
    if (labelled) {
      const T* table_row = d.label_table.data() + d.x_label(row0 + i) * d.col_labels;
      for (std::int64_t j = 0; j < width; ++j) c[j] = c[j] + lw * table_row[yl[j]];
    }
  }
}

KOTML_SIMD_DISPATCHED(void, finish_tile_host,
                      (const TileCostData<double>& d, std::int64_t I, std::int64_t J, double* out), (d, I, J, out),
                      finish_tile<double>(d, I, J, out))

KOTML_SIMD_DISPATCHED(void, finish_tile_host,
                      (const TileCostData<float>& d, std::int64_t I, std::int64_t J, float* out), (d, I, J, out),
                      finish_tile<float>(d, I, J, out))

template <class T>
void cost_tile(const TileCostData<T>& d, std::int64_t I, std::int64_t J, T* out) {
  const std::int64_t rows = d.rows_in(I), width = d.cols_in(J);
  products<T>(d, d.x.data() + I * tile_rows * d.dim, rows, d.y_packed.data() + J * d.dim * tile_cols, width, out);
  finish_tile_host(d, I, J, out);
}

}  // namespace

void cost_tile_host(const TileCostData<double>& data, std::int64_t I, std::int64_t J, double* out) {
  cost_tile<double>(data, I, J, out);
}

void cost_tile_host(const TileCostData<float>& data, std::int64_t I, std::int64_t J, float* out) {
  cost_tile<float>(data, I, J, out);
}

}  // namespace kotml::ot::detail
