#pragma once
// The inner solver of sampled GW: log-domain Sinkhorn on a cost whose rows are
// split over ranks, augmented as TorchGW augments it for partial transport:
//
//   cost   [ Λ (N×K)        penalty ]     marginals  a = [p; slack_p]
//          [ penalty ...   0        ]                b = [q; slack_q]
//
// Potentials are kept as log u (this rank's rows, plus the slack row on every
// rank) and log v (all K + 1 columns on every rank), TorchGW's convention:
// P = exp(log u ⊕ log v − C/ε). One iteration:
//   log u_i ← log a_i − LSE_k(log v_k − C_ik/ε)     (rows: local, no communication)
//   log v_k ← τ·(log b_k − LSE_i(log u_i − C_ik/ε))  (columns: partial sums over ranks)
// with τ = 1 (balanced), or τ = ρ/(ρ+ε) for a relaxed target marginal (the
// standard unbalanced update, scaling from zero). It stops when
// max_i |(P1)_i − a_i| < tol over all N + 1 rows, checked every check_every
// iterations; the check reuses the log-sum-exps of the next row update.
//
// Row and column log-sum-exps are the ot family's (kotml/ot/lse.hpp). Column
// log-sum-exps are formed against the exact global column maxima and summed per
// global row tile, then in fixed point (dist::UnitFixed) across tiles and
// ranks: potentials are bit-identical for any rank or thread count.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::gw {

struct SlackSinkhornSettings {
  int max_iter = 100;
  double tol = 5e-4;
  int check_every = 1;
  bool semi_relaxed = false;
  double rho = 1.0;
};

struct SlackSinkhornSummary {
  int iterations = 0;
  bool converged = false;
  double marginal_error = -1;  ///< at the last check (-1: never checked)
};

template <class S>
class SlackSinkhorn {
 public:
  /// p_local: this rank's rows of p (rows of the cost it will get); q: all K.
  /// n_total: rows over all ranks (sizes the fixed-point sums).
  SlackSinkhorn(const std::vector<double>& p_local, const std::vector<double>& q, double slack_p,
                double slack_q, std::int64_t n_total, const dist::Comm& comm);

  /// Solves on `cost` (this rank's rows × K), warm-started from the potentials
  /// held (zeros at first). Collective.
  SlackSinkhornSummary solve(Matrix<const S> cost, double penalty, double epsilon,
                             const SlackSinkhornSettings& settings);

  /// Back to a cold start.
  void reset();

  /// The real block of the plan, exp(log u_i − C_ik/ε + log v_k), this rank's rows.
  void plan(Matrix<const S> cost, double epsilon, Matrix<S> out) const;

  Vector<S> log_u() const { return log_u_; }
  Vector<S> log_v() const { return log_v_; }
  S log_u_slack() const { return log_u_slack_; }

 private:
  const dist::Comm* comm_;
  Vector<S> a_, log_a_, log_b_;
  S a_slack_, log_a_slack_;
  Vector<S> log_u_, log_u_next_, log_v_, col_max_;
  Kokkos::View<std::int64_t*, MemSpace> fixed_;
  S log_u_slack_ = S(0);
};

extern template class SlackSinkhorn<float>;
extern template class SlackSinkhorn<double>;

}  // namespace kotml::gw
