#pragma once
// Quality measures of a matching, as TorchGW's tests and benchmarks state them.

#include <cstdint>
#include <vector>

namespace kotml::gw {

/// Spearman's rank correlation (average ranks for ties, as scipy.stats.spearmanr).
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// TorchGW's quality number: spearmanr(θ_source, θ_target[match]), whose
/// absolute value is reported because GW may reverse the orientation.
double angle_correlation(const std::vector<double>& source_angle,
                         const std::vector<double>& target_angle,
                         const std::vector<std::int64_t>& match);

}  // namespace kotml::gw
