#pragma once
// OT between donors under a ground metric: the learned ||A x − A y|| (or its
// square), or a fixed Euclidean or cosine cost on the raw features. Shared by
// evaluation (distance matrices) and training (costs and gradients per pair).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/eval/donor_store.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"

namespace kotml::eval {

struct GroundMetric {
  enum class Kind { learned, euclidean, cosine };
  Kind kind = Kind::learned;
  bool squared = false;   // learned only: ||A(x − y)||² instead of ||A(x − y)||
  HostMatrix<double> a;   // learned only: k×d

  /// Cost between projected points (learned) or raw features (fixed metrics).
  ot::Cost cost() const;
  std::string name() const;  // "learned", "learned (squared)", "euclidean", "cosine"
};

/// "learned", "euclidean" or "cosine"; Error naming --metric otherwise.
GroundMetric::Kind parse_metric_kind(const std::string& text);

struct OtSettings {
  /// 0: exact EMD (network simplex). > 0: Sinkhorn with ε = entropic_reg × mean
  /// cost, the mean over the batch in training and over each pair in evaluation,
  /// as GGML-OT.
  double entropic_reg = 0.0;
  int sinkhorn_max_iter = 100;
  double sinkhorn_tol = 1e-6;
  std::int64_t emd_max_iter = 10'000'000;
  /// Largest donor pair (n·m cost entries) exact EMD takes on: a network
  /// simplex needs about 9 bytes per entry and time growing faster than n·m
  /// (about 0.25 s at 2000 × 2000, 4 s at 5000 × 5000 on one core). Larger
  /// pairs are refused up front with a hint to use Sinkhorn.
  std::int64_t emd_max_entries = 25'000'000;
  std::size_t workspace_bytes = std::size_t(1) << 30;
  /// Sinkhorn on single-precision projected points (GGML-OT's float32, and about
  /// twice the log-sum-exp throughput); false: double. EMD always uses double.
  bool sinkhorn_float = true;
  bool exact() const { return entropic_reg == 0.0; }
  /// Error naming the option for negative entropic_reg, max_iter < 1, tol < 0.
  void validate() const;
  /// With exact EMD: an Error naming --emd-max-entries, the two largest of the
  /// listed donors and the way out (Sinkhorn, or fewer cells) when their pair
  /// exceeds emd_max_entries. Every rank decides the same from the metadata.
  void check_emd_size(const data::Cohort& cohort, const std::vector<GlobalId>& donors) const;
};

/// Z = X Aᵀ for the rows of the device matrix X (float), into Z (rows × k, double
/// or float), accumulated in double in feature order: deterministic.
void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<double>& Z);
void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<float>& Z);

/// The listed donors (staged in `stage`) projected by A into one device pool, as
/// a cloud batch (cloud c = donors[c]). In group-by mode the shared support is
/// projected once and every cloud points at it.
template <class T>
struct ProjectedCloudsOf {
  ot::CloudBatch<T> clouds;
  std::vector<GlobalId> donors;
};
using ProjectedClouds = ProjectedCloudsOf<double>;
template <class T>
ProjectedCloudsOf<T> project_clouds(const BatchStage& stage, const std::vector<GlobalId>& donors,
                                    const Matrix<const double>& A);

/// A copy of a host metric in device memory.
Matrix<double> metric_to_device(const HostMatrix<double>& a);

/// Non-optimal solver outcomes of a set of solves, as warning lines.
struct SolveReport {
  std::int64_t max_iter = 0;
  std::int64_t infeasible = 0;
  std::int64_t numerical = 0;
  void count(ot::SolveStatus status);
  std::vector<std::string> warnings(const std::string& what) const;
};

/// OT cost of each listed pair of cohort donors, solved on this rank (pairs in
/// chunks that fit the workspace), in the order given. EMD: the exact cost.
/// Sinkhorn: <P, C> with ε relative to each pair's own mean cost (GGML-OT's
/// evaluation: POT's sinkhorn2 on M / mean(M)), scaled back to cost units.
std::vector<double> pair_costs(const DonorStore& store, const GroundMetric& metric,
                               const OtSettings& settings,
                               const std::vector<std::pair<GlobalId, GlobalId>>& pairs,
                               SolveReport& report);

}  // namespace kotml::eval
