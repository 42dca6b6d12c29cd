#pragma once
// Costs between two point sets computed from the points themselves, the way the
// tiled Sinkhorn (tiled_sinkhorn.hpp) reads them: a feature term between the
// points' coordinates plus an optional label term from a small table,
//
//   c(x_i, y_j) = λ_f · feature(x_i, y_j) + λ_l · L[ℓ_i, ℓ_j].
//
// The feature terms are defined exactly as OTT-JAX 0.6's cost functions, which
// is what pairOT and OTT users compare against:
//
//   sqeuclidean  ‖x‖² + ‖y‖² − 2 x·y           (costs.SqEuclidean: norms plus a
//                                               cross term, so identical points may
//                                               cost a rounding error, not 0)
//   euclidean    ‖x − y‖ from the differences   (costs.Euclidean)
//   cosine       1 − x·y / (‖x‖‖y‖ + 1e-8)     (costs.Cosine, ridge 1e-8; a zero
//                                               vector costs 1 to everything)
//
// pairOT's cell-cell cost λ_f·½(1 − cos) + λ_l·Dlab is the cosine with feature
// weight λ_f/2 and label weight λ_l.
//
// Note the batched small-problem solvers (sinkhorn.hpp, network_simplex.hpp)
// keep GGML-OT's and POT's definitions in cost.hpp: a sqeuclidean without
// cancellation, and a cosine without the ridge.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"
#include "kotml/ot/cost.hpp"

namespace kotml::ot {

/// The label term: table L (row labels × column labels, row-major) and its
/// weight λ_l. Absent when weight is 0 or the table is empty.
struct LabelCost {
  std::vector<double> table;
  std::int64_t row_labels = 0, col_labels = 0;
  double weight = 0;

  bool active() const { return weight != 0 && !table.empty(); }
};

struct PointCost {
  Cost kind = Cost::sqeuclidean;
  double feature_weight = 1.0;  // λ_f
  LabelCost label;

  static constexpr double cosine_ridge = 1e-8;

  /// Throws Error::option for a non-finite or negative weight, or a label table
  /// whose size does not match its shape or holds non-finite entries.
  void validate() const;
};

/// The cost of one pair in double, term by term as OTT evaluates it: the
/// reference the tiled kernels are tested against. Labels are ignored without
/// a label term.
double point_cost_reference(const PointCost& cost, const double* x, const double* y, int dim,
                            std::int32_t row_label = 0, std::int32_t col_label = 0);

/// The norms a cost reads: ‖p‖² (sqeuclidean) or ‖p‖ (cosine) of each row of
/// `points`, summed in double and rounded to T; `out` is left alone for
/// euclidean. out may be longer than the rows (padding is not written).
template <class T>
void cost_norms(Cost kind, Matrix<const T> points, Vector<T> out);

/// A dense matrix of point costs, out(i, j) = λ_f · feature(x_i, y_j) (no
/// label term), computed tile by tile by the tiled Sinkhorn's kernels
/// (tile_costs.hpp: 64 × 256 tiles, register-blocked products on the host).
/// Every entry is a fixed sequence of operations on its own two points,
/// symmetric in them, so its bits depend neither on the tiling, nor on which
/// rows of x a rank holds (as a GEMM's may: perf/gw/gemm_tile_heights.c), nor
/// on which side the kernels pack. The smaller side is packed at each call,
/// into memory kept here; y's, when packed, a simulated run folds where every
/// process of the run holds the same y (`y_same_everywhere`,
/// core/simulation.hpp). Set up once for y sets of m points of `dim`
/// coordinates.
template <class T>
class PointCostMatrix {
 public:
  PointCostMatrix(const PointCost& cost, std::int64_t m, int dim, bool y_same_everywhere);

  /// out (x rows × m, row-major) from x (rows × dim), y (m × dim), both
  /// contiguous, and their cost_norms (unused for euclidean). Returns the
  /// largest entry, −∞ when x has no rows.
  double compute(Matrix<const T> x, Vector<const T> x_norm, Matrix<const T> y, Vector<const T> y_norm,
                 Matrix<T> out);

 private:
  PointCost cost_;
  std::int64_t m_ = 0;
  int dim_ = 0;
  bool y_same_everywhere_ = false;
  sim::Folded<T> y_packed_, x_packed_;
};

extern template class PointCostMatrix<float>;
extern template class PointCostMatrix<double>;

}  // namespace kotml::ot
