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

}  // namespace kotml::ot
