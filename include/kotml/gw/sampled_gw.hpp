#pragma once
// Sampled Gromov-Wasserstein, TorchGW 0.4.2's sampled_gw (torchgw/_solver.py,
// _gw_loop) on Kokkos and MPI. Between a source cloud (N points) and a target
// cloud (K points), each knowing only its own intra-cloud distances:
//
//   T₀ = p ⊗ q; for t = 0, 1, ...:
//     1. draw M anchor pairs (j_m, l_m) ~ T/ΣT (row by row sums, then the column
//        within the row), from random::Stream(seed, Purpose::gw_sampling, t);
//     2. D_X = d_X(·, j_m) (N×M), D_Y = d_Y(·, l_m) (K×M); +inf → 1.5·(largest
//        finite entry of the block), each block divided by its own maximum;
//     3. Λ = mean_m D_X² ⊕ mean_m D_Y² − (2/M)·D_X D_Yᵀ  (ot::PointCostMatrix);
//     4. log-domain Sinkhorn on Λ augmented with a slack row and column (cost
//        100·max(max Λ, 1), corner 0; slack masses from s_shared), at
//        ε_t = ε₀·γ^t (ε₀ decays at most 10×, to max(ε₀/10, min(5e-4, ε₀))),
//        warm-started from the previous step's potentials;
//     5. T ← (1−α)·T + α·T_new (the real block of the Sinkhorn plan);
//     6. at TorchGW's check points: gw_cost = <Λ, T>, its EMA (0.8/0.2), and stop
//        on ||ΔT||_F < tol or when the EMA has not improved by 0.5% for
//        patience = max(min_iter/2, 20) checks, once t ≥ min_iter.
//
// Differences from the reference, all deliberate:
//  * seeded: the same seed gives the same plan, on any number of ranks and
//    threads (bit-identical: per-entry costs, exact integer column sums, integer
//    cumulative sums for sampling);
//  * the Sinkhorn marginal check (max_i |(P1)_i − a_i| < tol, the slack row
//    included) runs after every iteration: the log-sum-exps of the next row
//    update give it for free, so a warm-started solve may stop after one
//    iteration instead of TorchGW's forced ten (sinkhorn_check_every = 10
//    restores that);
//  * semi-relaxed mode uses the standard unbalanced update for the target side,
//    log v ← τ·(log b − LSE), τ = ρ/(ρ+ε) (TorchGW 0.4.2 mixes τ·new + (1−τ)·old);
//  * not implemented: fused GW (fgw_alpha), multiscale and low-rank solvers,
//    differentiable modes, the Λ EMA.
//
// Distribution: rank r holds rows plan_rows(N, ranks, r) of T and Λ (and of
// D_X); D_Y, the potentials of the columns and all sampling decisions are
// replicated. Memory per rank: 2·(N/ranks)·K scalars plus O((N + K)·M).

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/gw/distances.hpp"

namespace kotml::gw {

enum class DistanceMode { precomputed, dijkstra, landmark };
DistanceMode parse_distance_mode(const std::string& text, const std::string& option);
std::string to_string(DistanceMode mode);

struct SampledGwOptions {
  std::int64_t samples = 50;      ///< M anchor pairs per iteration
  double alpha = 0.9;             ///< momentum: weight of the new plan, in (0, 1)
  int max_iter = 500;
  double tol = 1e-5;              ///< on ||T_t − T_{t−1}||_F
  double epsilon = 1e-3;          ///< initial ε; ≤ 0 means 1e-4 (TorchGW)
  int min_iter_before_converge = 50;
  std::int64_t s_shared = 0;      ///< shared mass in points; 0: min(N, K)
  bool semi_relaxed = false;
  double rho = 1.0;               ///< KL weight of the target marginal (semi-relaxed)
  bool mixed_precision = false;   ///< float32 plan, cost and Sinkhorn
  std::uint64_t seed = 0;
  int sinkhorn_max_iter = 100;
  double sinkhorn_tol = 5e-4;
  int sinkhorn_check_every = 1;
  /// Widen this rank's rows of T into the result (float64). Only the outputs
  /// that show T (a written plan, FOSCTTM) need them: without, result.plan is
  /// empty, and a rank holds no second copy of its rows at the end.
  bool keep_plan = true;
  /// Throws Error::option (naming the CLI option) for values outside their range.
  void validate() const;
};

struct SampledGwResult {
  std::int64_t n_source = 0, n_target = 0;
  /// This rank's plan rows [row_begin, row_end) and their block of T (float64;
  /// empty unless keep_plan).
  std::int64_t row_begin = 0, row_end = 0;
  Matrix<double> plan;
  /// argmax_k T(i, k) for every source point (ties to the smaller k); every rank.
  std::vector<std::int64_t> match;
  double gw_cost = 0;             ///< <Λ, T> at the last check
  int iterations = 0;
  std::vector<double> err_list;   ///< ||ΔT||_F at each check (TorchGW's err_list)
  std::vector<double> cost_list;  ///< gw_cost at each check
  std::int64_t sinkhorn_iterations = 0;  ///< summed over outer iterations
  double final_epsilon = 0;
};

/// Collective. p (N) and q (K) are the marginals (empty: uniform), the same on
/// every rank. The providers answer for the source and the target cloud. Each
/// iteration's steps are timed as the phases sampling, distances, cost,
/// sinkhorn and update (kotml/core/phase_timers.hpp).
SampledGwResult sampled_gw(DistanceProvider& source, DistanceProvider& target,
                           const SampledGwOptions& options, const dist::Comm& comm,
                           const std::vector<double>& p = {}, const std::vector<double>& q = {});

}  // namespace kotml::gw
