// Host clones of the tile costs (see tile_costs.hpp): a register-blocked
// product of the tile's rows of x with its k-major panel of y, then the OTT
// formula row by row. Each entry's feature sum is one chain of fused
// multiply-adds in coordinate order from zero, exactly as TileCostData::entry
// computes it, so every SIMD level (and the portable loop) gives the same bits;
// the blocking only keeps R × V independent chains in registers.
//
// Built at -O3 without FMA contraction (only the explicit fma calls fuse) and
// without errno from sqrt, so that the loops vectorise (src/CMakeLists.txt).

#include "tile_costs.hpp"

#include "kotml/core/simd_clones.hpp"

namespace kotml::ot::detail {
namespace {

/// Feature sums of R rows (stride ldx) against V consecutive columns of a
/// k-major panel (stride tile_cols), into out (stride tile_cols).
template <class T, int R, int V, bool Difference>
__attribute__((always_inline)) inline void feature_block(const T* __restrict x, std::int64_t ldx,
                                                         const T* __restrict panel, int dim, T* __restrict out) {
  T acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = T(0);
  for (int k = 0; k < dim; ++k) {
    const T* yk = panel + static_cast<std::int64_t>(k) * tile_cols;
    for (int r = 0; r < R; ++r) {
      const T xr = x[r * ldx + k];
      for (int v = 0; v < V; ++v) {
        if constexpr (Difference) {
          const T diff = xr - yk[v];
          acc[r][v] = kmath::fma(diff, diff, acc[r][v]);
        } else {
          acc[r][v] = kmath::fma(xr, yk[v], acc[r][v]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) out[r * tile_cols + v] = acc[r][v];
}

/// Feature sums of the whole tile: rows in blocks of R (then one by one),
/// columns in blocks of V up to the padded width (y is zero past m).
template <class T, int R, int V, bool Difference>
__attribute__((always_inline)) inline void feature_tile(const T* x, std::int64_t ldx, std::int64_t rows,
                                                        const T* panel, std::int64_t width, int dim, T* out) {
  const std::int64_t padded = (width + V - 1) / V * V;
  std::int64_t i = 0;
  for (; i + R <= rows; i += R)
    for (std::int64_t j = 0; j < padded; j += V)
      feature_block<T, R, V, Difference>(x + i * ldx, ldx, panel + j, dim, out + i * tile_cols + j);
  for (; i < rows; ++i)
    for (std::int64_t j = 0; j < padded; j += V)
      feature_block<T, 1, V, Difference>(x + i * ldx, ldx, panel + j, dim, out + i * tile_cols + j);
}

template <class T>
__attribute__((always_inline)) inline void cost_tile(const TileCostData<T>& d, std::int64_t I, std::int64_t J,
                                                     T* __restrict out) {
  constexpr int V = 64 / sizeof(T);  // two 256-bit vectors of columns
  constexpr int R = 4;
  const std::int64_t rows = d.rows_in(I), width = d.cols_in(J);
  const std::int64_t row0 = I * tile_rows, col0 = J * tile_cols;
  const T* x = d.x.data() + row0 * d.dim;
  const T* panel = d.y_packed.data() + J * d.dim * tile_cols;
  if (d.kind == Cost::euclidean)
    feature_tile<T, R, V, true>(x, d.dim, rows, panel, width, d.dim, out);
  else
    feature_tile<T, R, V, false>(x, d.dim, rows, panel, width, d.dim, out);

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

}  // namespace

KOTML_SIMD_CLONES
void cost_tile_host(const TileCostData<double>& data, std::int64_t I, std::int64_t J, double* out) {
  cost_tile<double>(data, I, J, out);
}

KOTML_SIMD_CLONES
void cost_tile_host(const TileCostData<float>& data, std::int64_t I, std::int64_t J, float* out) {
  cost_tile<float>(data, I, J, out);
}

}  // namespace kotml::ot::detail
