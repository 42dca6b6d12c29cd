#include "kotml/gw/slack_sinkhorn.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gw_kernels.hpp"

namespace kotml::gw {
namespace {

template <class S>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

/// In-place elementwise max over ranks (exact in any order).
template <class S>
void allreduce_max(const dist::Comm& comm, Vector<S> v) {
  if (comm.size() == 1) return;
  Kokkos::fence();
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), v);
  MPI_Allreduce(MPI_IN_PLACE, h.data(), static_cast<int>(h.extent(0)), mpi_type<S>(), MPI_MAX,
                comm.raw());
  Kokkos::deep_copy(v, h);
}

/// In-place elementwise integer sum over ranks (exact in any order).
void allreduce_sum(const dist::Comm& comm, Kokkos::View<std::int64_t*, MemSpace> v) {
  if (comm.size() == 1) return;
  Kokkos::fence();
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), v);
  comm.sum_in_place(h.data(), h.extent(0));
  Kokkos::deep_copy(v, h);
}

}  // namespace

template <class S>
SlackSinkhorn<S>::SlackSinkhorn(const std::vector<double>& p_local, const std::vector<double>& q,
                                double slack_p, double slack_q, std::int64_t n_total,
                                const dist::Comm& comm)
    : comm_(&comm) {
  const std::int64_t rows = static_cast<std::int64_t>(p_local.size());
  const std::int64_t k = static_cast<std::int64_t>(q.size());
  (void)n_total;  // fixed-point column sums hold any row count (dist::UnitFixed)
  std::vector<double> log_a, log_b;
  // Zero weights get log(1e-30), as TorchGW clamps them, so no term is -inf.
  for (double w : p_local) log_a.push_back(std::log(std::max(w, 1e-30)));
  for (double w : q) log_b.push_back(std::log(std::max(w, 1e-30)));
  log_b.push_back(std::log(slack_q));
  a_ = Vector<S>(no_init("kotml::gw::a"), rows);
  log_a_ = Vector<S>(no_init("kotml::gw::log_a"), rows);
  log_b_ = Vector<S>(no_init("kotml::gw::log_b"), k + 1);
  detail::fill_from_host(a_, p_local);
  detail::fill_from_host(log_a_, log_a);
  detail::fill_from_host(log_b_, log_b);
  a_slack_ = static_cast<S>(slack_p);
  log_a_slack_ = static_cast<S>(std::log(slack_p));
  log_u_ = Vector<S>("kotml::gw::log_u", rows);
  log_u_next_ = Vector<S>(no_init("kotml::gw::log_u_next"), rows);
  log_v_ = Vector<S>("kotml::gw::log_v", k + 1);
  col_max_ = Vector<S>(no_init("kotml::gw::col_max"), k + 1);
  fixed_ = Kokkos::View<std::int64_t*, MemSpace>(no_init("kotml::gw::column_fixed"), (k + 1) * detail::column_limbs);
}

template <class S>
void SlackSinkhorn<S>::reset() {
  Kokkos::deep_copy(log_u_, S(0));
  Kokkos::deep_copy(log_v_, S(0));
  log_u_slack_ = S(0);
}

template <class S>
SlackSinkhornSummary SlackSinkhorn<S>::solve(Matrix<const S> cost, double penalty, double epsilon,
                                             const SlackSinkhornSettings& settings) {
  const S inv_eps = static_cast<S>(1.0 / epsilon);
  const S slack_scaled = static_cast<S>(-penalty / epsilon);
  const S tau = settings.semi_relaxed ? static_cast<S>(settings.rho / (settings.rho + epsilon)) : S(1);
  const dist::Comm& comm = *comm_;

  // New row potentials from the current column potentials; with `check`, also
  // the row-marginal error of the current state (max over all ranks).
  auto update_rows = [&](bool check, S& next_slack) {
    const S err = detail::row_update<S>(cost, log_v_, log_a_, a_, inv_eps, slack_scaled, log_u_,
                                        log_u_next_, check);
    const S slack_lse = detail::slack_row_lse<S>(log_v_, slack_scaled);
    next_slack = log_a_slack_ - slack_lse;
    if (!check) return 0.0;
    double worst = static_cast<double>(err);
    const double e = std::fabs(std::exp(static_cast<double>(log_u_slack_ + slack_lse)) -
                               static_cast<double>(a_slack_));
    if (!(e <= worst)) worst = e;
    if (std::isnan(worst)) worst = std::numeric_limits<double>::infinity();
    return comm.size() > 1 ? comm.max(worst) : worst;
  };

  SlackSinkhornSummary summary;
  bool rows_ready = false;
  for (int it = 0; it < settings.max_iter; ++it) {
    if (!rows_ready) {
      S next_slack = S(0);
      update_rows(false, next_slack);
      std::swap(log_u_, log_u_next_);
      log_u_slack_ = next_slack;
    }
    rows_ready = false;
    detail::column_max<S>(cost, log_u_, inv_eps, slack_scaled, col_max_);
    allreduce_max<S>(comm, col_max_);
    detail::add_slack_row_to_max<S>(col_max_, log_u_slack_, slack_scaled);
    detail::column_sums<S>(cost, log_u_, inv_eps, slack_scaled, col_max_, fixed_);
    allreduce_sum(comm, fixed_);
    detail::column_finish<S>(fixed_, col_max_, log_b_, log_u_slack_, slack_scaled, tau,
                             log_v_);
    summary.iterations = it + 1;
    if ((it + 1) % settings.check_every == 0 && it + 1 < settings.max_iter) {
      S next_slack = S(0);
      summary.marginal_error = update_rows(true, next_slack);
      if (summary.marginal_error < settings.tol) {
        summary.converged = true;
        break;
      }
      // Not converged: the check's row update is the next iteration's.
      std::swap(log_u_, log_u_next_);
      log_u_slack_ = next_slack;
      rows_ready = true;
    }
  }
  return summary;
}

template <class S>
void SlackSinkhorn<S>::plan(Matrix<const S> cost, double epsilon, Matrix<S> out) const {
  detail::sinkhorn_plan<S>(cost, log_u_, log_v_, static_cast<S>(1.0 / epsilon), out);
}

template class SlackSinkhorn<float>;
template class SlackSinkhorn<double>;

}  // namespace kotml::gw
