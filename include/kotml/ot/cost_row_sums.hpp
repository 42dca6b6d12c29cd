#pragma once
// The sum of every row of every pair's cost matrix, without storing the costs:
// what a batch-relative ε needs (the mean cost over all entries of all pairs,
// GGML-OT's entropic_reg scale) before any solve can start.

#include <vector>

#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"

namespace kotml::ot {

/// Σ_j C_u(i, j) for each row i of each pair u, in double and column order, at
/// layout.row_offset[u] + i (layout = BatchLayout::of(clouds, pairs)). Costs are
/// ground_cost's, bit for bit; host backends compute them with SIMD kernels.
template <class T>
std::vector<double> cost_row_sums(const CloudBatch<T>& clouds, const BatchLayout& layout,
                                  const std::vector<Pair>& pairs, Cost cost);

}  // namespace kotml::ot
