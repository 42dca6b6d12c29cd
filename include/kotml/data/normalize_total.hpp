#pragma once
// Library-size normalisation and log transform of counts, as scanpy's
// pp.normalize_total (target_sum given) and pp.log1p, in single precision as
// scanpy computes them on float32 data: each cell's total is summed in float,
// the factor total/target_sum is a float, and each value is divided by it.
// Cells with a zero total are left unchanged.

#include <cstdint>
#include <vector>

#include "kotml/data/sparse.hpp"

namespace kotml::data {

/// Per-cell totals (float, as scanpy's counts_per_cell before scaling).
std::vector<float> cell_totals(const HostCsr& counts);

/// In place: rows scaled to sum to target_sum.
void normalize_total(HostCsr& counts, double target_sum);

/// In place: v = log(1 + v) for every stored value.
void log1p(HostCsr& x);

/// Number of NaN or infinite stored values, and of negative ones.
struct ValueCheck {
  std::int64_t non_finite = 0;
  std::int64_t negative = 0;
  std::int64_t non_integer = 0;
};
ValueCheck check_values(const HostCsr& x);

}  // namespace kotml::data
