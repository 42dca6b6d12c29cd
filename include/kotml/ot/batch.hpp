#pragma once
// A batch of optimal-transport problems between weighted point clouds.
//
// Metric learning solves one OT problem per pair of donors in a batch, thousands
// of them per epoch, with clouds of different sizes. The solvers (sinkhorn.hpp,
// network_simplex.hpp) take the clouds of a batch in one pool and a list of
// pairs, and return per-problem results in flat arrays laid out by BatchLayout:
//
//   problem u = pairs[u] transports the weights of cloud pairs[u].source (its
//   "rows", n_u points) onto those of cloud pairs[u].target (its "columns", m_u
//   points). Row-indexed outputs of problem u (the potential f, gradients with
//   respect to the source points) occupy [row_offset[u], row_offset[u+1]) of
//   their array, column-indexed ones [col_offset[u], col_offset[u+1]).
//
// Results of one problem never depend on the other problems of the batch, on
// the order of the pairs, or on the thread count (except through a relative
// epsilon, which is defined by the whole batch): per-problem values are summed
// in a fixed order, never with floating-point atomics.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::ot {

/// Outcome of one solve. Anything but `optimal` must reach the user as a warning.
enum class SolveStatus : std::int32_t {
  optimal = 0,          // EMD: optimal basis; Sinkhorn: marginal error below tol
  max_iter = 1,         // iteration limit reached first; results are the last iterate
  infeasible = 2,       // EMD: marginals could not be matched (mass left on artificial arcs)
  numerical_error = 3,  // a non-finite potential or cost appeared
};

/// "optimal", "max_iter", "infeasible", "numerical_error".
const char* status_name(SolveStatus status);

/// One problem of a batch: transport cloud `source` (rows) onto cloud `target` (columns).
struct Pair {
  std::int32_t source = 0;
  std::int32_t target = 0;
};

/// Where a cloud lives in the pool.
struct CloudRange {
  std::int64_t point_begin = 0;   // first row in CloudBatch::points()
  std::int64_t weight_begin = 0;  // first entry in CloudBatch::weights()
  std::int64_t size = 0;          // number of points
};

/// Weighted point clouds in one pool of device memory. Cloud c has
/// clouds()[c].size points: rows point_begin.. of points() (dim() coordinates
/// each) and entries weight_begin.. of weights(). Clouds may share rows: for
/// GGML-OT's group_by mode every donor points at the same K centroid rows and
/// only the weights differ. Weights need not be normalised; see the solvers for
/// how they are used (balanced problems normalise each side to unit mass).
template <class T>
class CloudBatch {
 public:
  using scalar_type = T;

  CloudBatch() = default;
  /// Views must be allocated in MemSpace. Throws Error when a range falls
  /// outside points or weights.
  CloudBatch(Matrix<T> points, Vector<double> weights, std::vector<CloudRange> clouds);

  std::int32_t count() const { return static_cast<std::int32_t>(clouds_.size()); }
  int dim() const { return static_cast<int>(points_.extent(1)); }
  const CloudRange& cloud(std::int32_t c) const { return clouds_[static_cast<std::size_t>(c)]; }
  const std::vector<CloudRange>& clouds() const { return clouds_; }

  const Matrix<T>& points() const { return points_; }
  const Vector<double>& weights() const { return weights_; }
  /// The cloud table on the device: row c = {point_begin, weight_begin, size}.
  const Kokkos::View<std::int64_t* [3], MemSpace>& device_table() const { return table_; }

 private:
  Matrix<T> points_;
  Vector<double> weights_;
  std::vector<CloudRange> clouds_;
  Kokkos::View<std::int64_t* [3], MemSpace> table_;
};

/// A batch from host data, clouds stored one after the other: points[c] holds
/// size_c × dim values row-major; weights[c] holds size_c values, or is empty
/// (or weights itself is empty) for uniform weights 1/size_c.
template <class T>
CloudBatch<T> make_cloud_batch(const std::vector<std::vector<T>>& points, int dim,
                               const std::vector<std::vector<double>>& weights = {});

/// Input checks a user can fail; throws Error(where, "cloud <c>" or "pair <u>", reason)
/// for: an empty cloud, non-finite coordinates, non-finite or negative weights,
/// weights summing to zero, pairs naming clouds that do not exist. `where` names
/// the input (a file) in the message. Solvers assume valid input.
template <class T>
void validate(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs,
              const std::string& where = "");

/// Offsets of each problem's rows and columns in flat per-problem outputs.
struct BatchLayout {
  std::vector<std::int64_t> row_offset;  // U + 1 entries; problem u has n_u = row_offset[u+1] - row_offset[u] rows
  std::vector<std::int64_t> col_offset;  // U + 1 entries
  Vector<std::int64_t> device_row_offset;
  Vector<std::int64_t> device_col_offset;

  std::int64_t problems() const { return static_cast<std::int64_t>(row_offset.size()) - 1; }
  std::int64_t rows(std::int64_t u) const { return row_offset[u + 1] - row_offset[u]; }
  std::int64_t cols(std::int64_t u) const { return col_offset[u + 1] - col_offset[u]; }
  std::int64_t total_rows() const { return row_offset.back(); }
  std::int64_t total_cols() const { return col_offset.back(); }
  /// Node-indexed arrays (rows then columns of each problem, as the EMD basis)
  /// start at row_offset[u] + col_offset[u] and hold n_u + m_u entries.
  std::int64_t node_offset(std::int64_t u) const { return row_offset[u] + col_offset[u]; }

  template <class T>
  static BatchLayout of(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs);
};

}  // namespace kotml::ot
