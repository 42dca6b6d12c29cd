#pragma once
// Settings of the OT solves between donors that training and evaluation share
// (exact EMD or Sinkhorn, their limits, and the workspace), and the count of
// solves that ended short of optimal, reported as warnings.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace kotml::stage {

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
  /// (0.25 s at 2000 × 2000 on one core, perf/RESULTS.md). Larger pairs are
  /// refused up front with a hint to use Sinkhorn.
  std::int64_t emd_max_entries = 25'000'000;
  /// Bytes per rank for the stored costs of the pairs solved together
  /// (--cost-memory): pairs go in chunks that fit; a Sinkhorn pair larger on
  /// its own goes to the tiled engine, which stores its costs within this
  /// budget or recomputes them tile by tile (ot::SinkhornOptions).
  std::size_t workspace_bytes = std::size_t(1) << 30;
  /// Sinkhorn on single-precision projected points (GGML-OT's float32, and about
  /// twice the log-sum-exp throughput); false: double. EMD always uses double.
  bool sinkhorn_float = true;
  /// The Sinkhorn formulation (kotml/ot/sinkhorn.hpp): automatic takes the
  /// scaling domain where the kernel exp(−C/ε) is representable.
  ot::SinkhornDomain sinkhorn_domain = ot::SinkhornDomain::automatic;
  bool exact() const { return entropic_reg == 0.0; }
  /// --cost-memory as given: an Error naming the option unless positive.
  static std::size_t cost_memory(std::int64_t bytes);
  /// Error naming the option for negative entropic_reg, max_iter < 1, tol < 0.
  void validate() const;
  /// With exact EMD: an Error naming --emd-max-entries, the two largest of the
  /// listed donors and the way out (Sinkhorn, or fewer cells) when their pair
  /// exceeds emd_max_entries. Every rank decides the same from the metadata.
  void check_emd_size(const data::Cohort& cohort, const std::vector<GlobalId>& donors) const;
};

/// Non-optimal solver outcomes of a set of solves, as warning lines.
struct SolveReport {
  std::int64_t max_iter = 0;
  std::int64_t infeasible = 0;
  std::int64_t numerical = 0;
  void count(ot::SolveStatus status);
  std::vector<std::string> warnings(const std::string& what) const;
};

}  // namespace kotml::stage
