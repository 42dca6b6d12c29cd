#include "kotml/learn/adam.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::learn {
namespace {

/// One Adam update of element i; the parameters live in host memory, so this
/// runs on the host execution space.
struct AdamUpdate {
  double* param;
  const double* grad;
  double* m;
  double* v;
  double beta1, beta2, eps, step_size, bias2_sqrt;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    m[i] = beta1 * m[i] + (1.0 - beta1) * grad[i];
    v[i] = beta2 * v[i] + (1.0 - beta2) * grad[i] * grad[i];
    const double denom = kmath::sqrt(v[i]) / bias2_sqrt + eps;
    param[i] -= step_size * m[i] / denom;
  }
};

void run_update(const AdamUpdate& update, std::size_t n) {
  Kokkos::parallel_for("kotml::learn::adam_step", Kokkos::RangePolicy<HostExecSpace>(0, n), update);
  Kokkos::fence();
}

}  // namespace

void AdamOptions::validate() const {
  if (!(lr > 0.0) || !std::isfinite(lr)) throw Error::option("lr", "must be positive, got " + log::number_text(lr));
  if (!(beta1 >= 0.0 && beta1 < 1.0))
    throw Error::option("beta1", "must be in [0, 1), got " + log::number_text(beta1));
  if (!(beta2 >= 0.0 && beta2 < 1.0))
    throw Error::option("beta2", "must be in [0, 1), got " + log::number_text(beta2));
  if (!(eps > 0.0) || !std::isfinite(eps)) throw Error::option("adam-eps", "must be positive, got " + log::number_text(eps));
}

Adam::Adam(AdamOptions options, std::size_t size) : options_(options), m_(size, 0.0), v_(size, 0.0) {}

void Adam::step(MetricMatrix& params, const std::vector<double>& grad) {
  if (grad.size() != m_.size() || params.size() != m_.size())
    throw InternalError("adam: gradient and parameters differ in size");
  ++steps_;
  const double t = static_cast<double>(steps_);
  AdamUpdate update{params.data(), grad.data(), m_.data(), v_.data(), options_.beta1, options_.beta2,
                    options_.eps, options_.lr / (1.0 - std::pow(options_.beta1, t)),
                    std::sqrt(1.0 - std::pow(options_.beta2, t))};
  run_update(update, m_.size());
}

void Adam::restore(std::int64_t steps, std::vector<double> m, std::vector<double> v) {
  if (m.size() != m_.size() || v.size() != v_.size())
    throw Error("", "adam", "checkpointed optimizer state has the wrong size");
  steps_ = steps;
  m_ = std::move(m);
  v_ = std::move(v);
}

}  // namespace kotml::learn
