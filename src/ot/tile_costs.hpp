#pragma once
// The cost accessor of the tiled Sinkhorn: tile (I, J) of a rank's costs, rows
// I·64 .. of its block and columns J·256 .., read from storage or computed from
// the points in the caller's scratch pad (point_cost.hpp defines the costs).
//
// Layouts:
//   x         this rank's rows, row-major (rows × d)
//   y_packed  y in column tiles, each k-major: y_packed[(J·d + k)·256 + c] =
//             y(J·256 + c, k), zero past m; the micro-kernel reads the 256
//             columns of one coordinate contiguously
//   x_norm,   ‖·‖² (sqeuclidean) or ‖·‖ (cosine), in T; unused for euclidean
//   y_norm
//   stored    every tile of the rank, tile-major (I over J), each 64 × 256
//             row-major; empty when costs are recomputed
//
// A tile is a fixed sequence of operations per entry: the feature sum
// acc = fma(x_k, y_k, acc) (or fma(x_k − y_k, x_k − y_k, acc) for euclidean) in
// coordinate order from zero, then the OTT formula, then the weights and the
// label term. The host SIMD copies (tile_costs_host.cpp) and the portable loop
// below do exactly that, so stored and recomputed tiles are the same bits.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"

namespace kotml::ot::detail {

constexpr std::int64_t tile_rows = RowBlock::tile_rows;
constexpr std::int64_t tile_cols = 256;
constexpr std::int64_t tile_entries = tile_rows * tile_cols;

template <class T>
struct TileCostData {
  Matrix<const T> x;
  Vector<const T> y_packed;
  Vector<const T> x_norm, y_norm;
  Vector<const std::int32_t> x_label, y_label;
  Vector<const T> label_table;  // row_labels × col_labels, row-major (empty: no label term)
  Vector<const T> stored;       // empty: recompute
  Cost kind = Cost::sqeuclidean;
  T feature_weight = 1, label_weight = 0;
  std::int64_t col_labels = 0;
  std::int64_t rows = 0, cols = 0;  // this rank's rows, m
  std::int64_t row_tiles = 0, col_tiles = 0;
  int dim = 0;

  KOKKOS_INLINE_FUNCTION std::int64_t rows_in(std::int64_t I) const {
    const std::int64_t r = rows - I * tile_rows;
    return r < tile_rows ? r : tile_rows;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t cols_in(std::int64_t J) const {
    const std::int64_t c = cols - J * tile_cols;
    return c < tile_cols ? c : tile_cols;
  }

  /// The cost of local row i and column j (portable; what each tile entry is).
  KOKKOS_INLINE_FUNCTION T entry(std::int64_t i, std::int64_t j) const {
    const T* xi = &x(i, 0);
    const T* yj = y_packed.data() + (j / tile_cols) * dim * tile_cols + j % tile_cols;
    T acc = 0;
    if (kind == Cost::euclidean) {
      for (int k = 0; k < dim; ++k) {
        const T diff = xi[k] - yj[k * tile_cols];
        acc = kmath::fma(diff, diff, acc);
      }
    } else {
      for (int k = 0; k < dim; ++k) acc = kmath::fma(xi[k], yj[k * tile_cols], acc);
    }
    return finish(acc, i, j);
  }

  /// The OTT formula from the feature sum, then the weights and the label term.
  KOKKOS_INLINE_FUNCTION T finish(T acc, std::int64_t i, std::int64_t j) const {
    T feature;
    if (kind == Cost::sqeuclidean)
      feature = (x_norm(i) + y_norm(j)) + T(-2) * acc;
    else if (kind == Cost::cosine)
      feature = T(1) - acc / (x_norm(i) * y_norm(j) + T(1e-8));
    else
      feature = kmath::sqrt(acc);
    T c = feature_weight * feature;
    if (label_table.extent(0) > 0) c = c + label_weight * label_table(x_label(i) * col_labels + y_label(j));
    return c;
  }

  /// Tile (I, J): a pointer to its 64 × 256 costs (row-major, valid in
  /// rows_in(I) × cols_in(J)), from storage or computed into `scratch` by the
  /// calling team (host: one thread, SIMD copies). Ends with a team barrier.
  template <class Member>
  KOKKOS_INLINE_FUNCTION const T* tile(const Member& team, std::int64_t I, std::int64_t J, T* scratch) const {
    if (stored.extent(0) > 0) return stored.data() + (I * col_tiles + J) * tile_entries;
    compute(team, I, J, scratch);
    return scratch;
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void compute(const Member& team, std::int64_t I, std::int64_t J, T* out) const;
};

/// cost_norms into a new `padded`-long View (point_cost_matrix.cpp).
template <class T>
Vector<T> point_norms(const Matrix<const T>& points, Cost kind, std::int64_t padded, const char* label);

/// Memory for a y_packed of col_tiles column tiles of dim coordinates. Every
/// rank of a solve holds the same y; when they are every process of the run
/// (`everywhere`), a simulated run may fold it (core/simulation.hpp).
template <class T>
sim::Folded<T> packed_columns_memory(const char* site, std::int64_t col_tiles, std::int64_t dim, bool everywhere);

/// y into `packed` in the y_packed layout, zero past m.
template <class T>
void pack_columns(const Matrix<const T>& y, const Vector<T>& packed);

/// Host SIMD copies of a whole tile (tile_costs_host.cpp); same bits as entry().
void cost_tile_host(const TileCostData<float>& data, std::int64_t I, std::int64_t J, float* out);
void cost_tile_host(const TileCostData<double>& data, std::int64_t I, std::int64_t J, double* out);

template <class T>
template <class Member>
KOKKOS_INLINE_FUNCTION void TileCostData<T>::compute(const Member& team, std::int64_t I, std::int64_t J,
                                                     T* out) const {
#ifdef KOTML_DEVICE_PASS
  const std::int64_t r = rows_in(I), w = cols_in(J);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r * w), [&](const std::int64_t e) {
    const std::int64_t i = e / w, j = e % w;
    out[i * tile_cols + j] = entry(I * tile_rows + i, J * tile_cols + j);
  });
  team.team_barrier();
#else
  (void)team;
  cost_tile_host(*this, I, J, out);
#endif
}

}  // namespace kotml::ot::detail
