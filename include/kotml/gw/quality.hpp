#pragma once
// Quality measures of a matching, as TorchGW's tests and benchmarks state them.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::gw {

/// Spearman's rank correlation (average ranks for ties, as scipy.stats.spearmanr).
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// TorchGW's quality number: spearmanr(θ_source, θ_target[match]), whose
/// absolute value is reported because GW may reverse the orientation.
double angle_correlation(const std::vector<double>& source_angle,
                         const std::vector<double>& target_angle,
                         const std::vector<std::int64_t>& match);

/// FOSCTTM, SCOT's "fraction of samples closer than the true match", of a
/// paired matching: source point i and target point i are the same cell (the
/// RNA and ATAC profiles of one SNARE-seq cell). Each source point goes to the
/// barycentre of the target points its plan row sends it to,
///   P_i = Σ_j T_ij y_j / Σ_j T_ij,
/// and with d_ij = |P_i − y_j|,
///   row_i = #{j : d_ij < d_ii} / m,   col_j = #{i : d_ij < d_jj} / n,
///   FOSCTTM = (mean_i row_i + mean_j col_j) / 2:
/// 0 when every projection is nearest its own partner, about 0.5 for a random
/// matching. The counts are integers summed over ranks, so the value is the
/// same for any rank count.
///
/// Collective. `plan` holds this rank's rows [row_begin, row_begin + rows) of
/// T (n × m); `target` is the m × d target cloud, the same on every rank.
/// Error (naming --paired) when n != m or a plan row carries no mass.
double foscttm(const dist::Comm& comm, const Matrix<double>& plan, std::int64_t row_begin, std::int64_t n,
               const Matrix<double>& target);

}  // namespace kotml::gw
