// Dense matrices of point costs through the tiled Sinkhorn's cost accessor
// (point_cost.hpp, PointCostMatrix), and the inputs that accessor reads: the
// norms and y in column tiles (tile_costs.hpp).

#include <limits>
#include <stdexcept>
#include <string>

#include "kotml/core/region.hpp"
#include "kotml/ot/point_cost.hpp"
#include "tiled_sweeps.hpp"

namespace kotml::ot {

template <class T>
void cost_norms(Cost kind, Matrix<const T> points, Vector<T> out) {
  if (kind == Cost::euclidean) return;
  const std::int64_t dim = points.extent(1);
  const bool root = kind == Cost::cosine;
  Kokkos::parallel_for(
      "kotml::ot::cost_norms", Kokkos::RangePolicy<ExecSpace>(0, points.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        double s = 0;
        for (std::int64_t k = 0; k < dim; ++k) s += static_cast<double>(points(i, k)) * static_cast<double>(points(i, k));
        out(i) = static_cast<T>(root ? kmath::sqrt(s) : s);
      });
}

namespace detail {

template <class T>
Vector<T> point_norms(const Matrix<const T>& points, Cost kind, std::int64_t padded, const char* label) {
  Vector<T> norms(std::string(label), padded);
  cost_norms<T>(kind, points, norms);
  return norms;
}

template <class T>
sim::Folded<T> packed_columns_memory(const char* site, std::int64_t col_tiles, std::int64_t dim, bool everywhere) {
  return sim::folded<T>(site, static_cast<std::size_t>(col_tiles * dim * tile_cols), everywhere);
}

template <class T>
void pack_columns(const Matrix<const T>& y, const Vector<T>& packed) {
  const std::int64_t m = y.extent(0), dim = y.extent(1);
  const std::int64_t col_tiles = (m + tile_cols - 1) / tile_cols;
  // Units of 16 columns of one tile: the unit's 16 rows of y stay in cache
  // while each coordinate's 16 values go out as one 64-byte line (float); a
  // walk in y's order would write one line per value instead.
  constexpr std::int64_t group = 16;
  constexpr std::int64_t groups_per_tile = tile_cols / group;
  Kokkos::parallel_for(
      "kotml::ot::tiled_pack_y", Kokkos::RangePolicy<ExecSpace>(0, col_tiles * groups_per_tile),
      KOKKOS_LAMBDA(const std::int64_t unit) {
        const std::int64_t J = unit / groups_per_tile, c0 = (unit % groups_per_tile) * group;
        const std::int64_t j0 = J * tile_cols + c0;
        const std::int64_t width = j0 >= m ? 0 : (m - j0 < group ? m - j0 : group);
        for (std::int64_t k = 0; k < dim; ++k) {
          T* to = &packed((J * dim + k) * tile_cols + c0);
          for (std::int64_t c = 0; c < width; ++c) to[c] = y(j0 + c, k);
          for (std::int64_t c = width; c < group; ++c) to[c] = T(0);
        }
      });
}

namespace {

/// One team per tile: the tile into the scratch pad, then into `out`, with the
/// tile's largest entry. `transposed`: the tile's rows are out's columns.
template <class T>
struct CostMatrixTiles {
  TileCostData<T> costs;
  Matrix<T> out;
  bool transposed = false;

  static std::size_t scratch_bytes() { return tile_scratch_bytes<T>(0); }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team, double& top) const {
    const std::int64_t I = team.league_rank() / costs.col_tiles, J = team.league_rank() % costs.col_tiles;
    ScratchCarver pad{team.team_scratch(1)};
    T* tile = pad.take<T>(tile_entries);
    costs.compute(team, I, J, tile);
    // Each of out's lines that the tile covers is a row of the tile, or with
    // `transposed` a column of it.
    const std::int64_t rows = costs.rows_in(I), width = costs.cols_in(J);
    const std::int64_t lines = transposed ? width : rows, length = transposed ? rows : width;
    const std::int64_t line_stride = transposed ? 1 : tile_cols, step = transposed ? tile_cols : 1;
    const std::int64_t row0 = transposed ? J * tile_cols : I * tile_rows;
    const std::int64_t col0 = transposed ? I * tile_rows : J * tile_cols;
    double tile_top = -kmath::infinity<double>();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, lines),
        [&](const std::int64_t l, double& best) {
          const T* from = tile + l * line_stride;
          T* to = &out(row0 + l, col0);
          T line_top = -kmath::infinity<T>();
          for (std::int64_t e = 0; e < length; ++e) {
            const T c = from[e * step];
            to[e] = c;
            line_top = c > line_top ? c : line_top;
          }
          if (static_cast<double>(line_top) > best) best = static_cast<double>(line_top);
        },
        Kokkos::Max<double>(tile_top));
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (tile_top > top) top = tile_top;
    });
  }
};

/// Packed memory for `count` points, kept between calls while large enough.
template <class T>
const Vector<T>& packed_for(const char* site, std::int64_t count, std::int64_t dim, bool everywhere,
                            sim::Folded<T>& memory) {
  const std::int64_t col_tiles = (count + tile_cols - 1) / tile_cols;
  if (static_cast<std::int64_t>(memory.view.extent(0)) < col_tiles * dim * tile_cols)
    memory = packed_columns_memory<T>(site, col_tiles, dim, everywhere);
  return memory.view;
}

}  // namespace
}  // namespace detail

template <class T>
PointCostMatrix<T>::PointCostMatrix(const PointCost& cost, std::int64_t m, int dim, bool y_same_everywhere)
    : cost_(cost), m_(m), dim_(dim), y_same_everywhere_(y_same_everywhere) {
  if (cost.label.active()) throw std::logic_error("PointCostMatrix: no label term");
}

template <class T>
double PointCostMatrix<T>::compute(Matrix<const T> x, Vector<const T> x_norm, Matrix<const T> y,
                                   Vector<const T> y_norm, Matrix<T> out) {
  ProfilingRegion region("kotml::ot::point_cost_matrix");
  const std::int64_t rows = x.extent(0);
  if (static_cast<std::int64_t>(y.extent(0)) != m_ || static_cast<int>(y.extent(1)) != dim_ ||
      (rows > 0 && static_cast<int>(x.extent(1)) != dim_) || static_cast<std::int64_t>(out.extent(0)) != rows ||
      static_cast<std::int64_t>(out.extent(1)) != m_ || !x.span_is_contiguous() || !y.span_is_contiguous())
    throw std::logic_error("PointCostMatrix: x, y or out do not have the shapes it was set up for");
  double top = -kmath::infinity<double>();
  if (rows == 0 || m_ == 0) return top;
  // The kernels read one side's rows as they are and the other side packed in
  // column tiles; every entry's operations are symmetric in the two points
  // (fma(a, b, acc) = fma(b, a, acc), a + b = b + a), so either way gives the
  // same bits. Packing costs a pass over that side per call: pack the smaller.
  const bool transposed = rows < m_;
  const Matrix<const T> read = transposed ? y : x, packed_side = transposed ? x : y;
  const Vector<T> packed =
      transposed ? detail::packed_for<T>("kotml::ot::cost_matrix_x_packed", rows, dim_, false, x_packed_)
                 : detail::packed_for<T>("kotml::ot::cost_matrix_y_packed", m_, dim_, y_same_everywhere_, y_packed_);
  detail::pack_columns<T>(packed_side, packed);
  detail::TileCostData<T> d;
  d.y_packed = packed;
  d.x = read;
  d.x_norm = transposed ? y_norm : x_norm;
  d.y_norm = transposed ? x_norm : y_norm;
  d.kind = cost_.kind;
  d.feature_weight = static_cast<T>(cost_.feature_weight);
  d.rows = read.extent(0);
  d.cols = packed_side.extent(0);
  d.row_tiles = (d.rows + detail::tile_rows - 1) / detail::tile_rows;
  d.col_tiles = (d.cols + detail::tile_cols - 1) / detail::tile_cols;
  d.dim = dim_;
  const detail::CostMatrixTiles<T> tiles{d, out, transposed};
  Kokkos::parallel_reduce("kotml::ot::cost_matrix_tiles",
                          detail::tile_policy(d.row_tiles * d.col_tiles, tiles.scratch_bytes()), tiles,
                          Kokkos::Max<double>(top));
  return top;
}

template void cost_norms<float>(Cost, Matrix<const float>, Vector<float>);
template void cost_norms<double>(Cost, Matrix<const double>, Vector<double>);
template class PointCostMatrix<float>;
template class PointCostMatrix<double>;

namespace detail {
template Vector<float> point_norms<float>(const Matrix<const float>&, Cost, std::int64_t, const char*);
template Vector<double> point_norms<double>(const Matrix<const double>&, Cost, std::int64_t, const char*);
template sim::Folded<float> packed_columns_memory<float>(const char*, std::int64_t, std::int64_t, bool);
template sim::Folded<double> packed_columns_memory<double>(const char*, std::int64_t, std::int64_t, bool);
template void pack_columns<float>(const Matrix<const float>&, const Vector<float>&);
template void pack_columns<double>(const Matrix<const double>&, const Vector<double>&);
}  // namespace detail

}  // namespace kotml::ot
