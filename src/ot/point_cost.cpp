#include "kotml/ot/point_cost.hpp"

#include <cmath>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::ot {

void PointCost::validate() const {
  if (!std::isfinite(feature_weight) || feature_weight < 0)
    throw Error::option("feature-weight", "must be finite and non-negative, got " + log::number_text(feature_weight));
  if (!std::isfinite(label.weight) || label.weight < 0)
    throw Error::option("label-weight", "must be finite and non-negative, got " + log::number_text(label.weight));
  if (label.weight == 0) return;
  if (label.row_labels < 1 || label.col_labels < 1 ||
      static_cast<std::int64_t>(label.table.size()) != label.row_labels * label.col_labels)
    throw Error("", "label cost", "the label table has " + std::to_string(label.table.size()) +
                                      " entries, its shape " + std::to_string(label.row_labels) + "×" +
                                      std::to_string(label.col_labels) + " needs " +
                                      std::to_string(label.row_labels * label.col_labels));
  for (std::size_t k = 0; k < label.table.size(); ++k)
    if (!std::isfinite(label.table[k]))
      throw Error("", "label cost", "entry " + std::to_string(k) + " of the label table is not finite");
}

double point_cost_reference(const PointCost& cost, const double* x, const double* y, int dim,
                            std::int32_t row_label, std::int32_t col_label) {
  double feature = 0;
  if (cost.kind == Cost::euclidean) {
    double s = 0;
    for (int k = 0; k < dim; ++k) s += (x[k] - y[k]) * (x[k] - y[k]);
    feature = std::sqrt(s);
  } else {
    double nx = 0, ny = 0, dot = 0;
    for (int k = 0; k < dim; ++k) {
      nx += x[k] * x[k];
      ny += y[k] * y[k];
      dot += x[k] * y[k];
    }
    if (cost.kind == Cost::sqeuclidean)
      feature = nx + ny - 2.0 * dot;
    else
      feature = 1.0 - dot / (std::sqrt(nx) * std::sqrt(ny) + PointCost::cosine_ridge);
  }
  double c = cost.feature_weight * feature;
  if (cost.label.active())
    c += cost.label.weight * cost.label.table[static_cast<std::size_t>(row_label * cost.label.col_labels + col_label)];
  return c;
}

}  // namespace kotml::ot
