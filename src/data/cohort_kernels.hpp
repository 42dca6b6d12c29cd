#pragma once
// Kernels of the cohort builder, on one block of rows (one donor's cells) held in
// host memory: finiteness check, per-feature sums, per-group sums, z-scoring.
// Each sums along rows sequentially inside a thread that owns a feature column,
// so results do not depend on the thread count. Internal to src/data.

#include <cstdint>
#include <vector>

namespace kotml::data::detail {

/// Number of NaN/Inf entries of the n × d block.
std::int64_t count_non_finite(const std::vector<float>& block, std::int64_t n, std::int64_t d);

/// Per feature: sum and sum of squares over the block's rows (2·d values: sums,
/// then sums of squares).
std::vector<double> feature_moments(const std::vector<float>& block, std::int64_t n, std::int64_t d);

/// Per (group, feature) sums of the rows, group[i] in [0, n_groups): n_groups × d.
std::vector<double> group_sums(const std::vector<float>& block, std::int64_t n, std::int64_t d,
                               const std::vector<std::int32_t>& group, std::int64_t n_groups);

/// In place: x = (x - mean[j]) / scale[j], or with one scalar mean/scale when
/// those have one entry.
void standardize(std::vector<float>& block, std::int64_t n, std::int64_t d, const std::vector<double>& mean,
                 const std::vector<double>& scale);

}  // namespace kotml::data::detail
