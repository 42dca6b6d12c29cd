// R limma's lmFit / contrasts.fit / eBayes / BH as pairOT calls them (see
// kotml/map/limma.hpp). Sums that R does in long double are done in long double
// here too; special functions come from Boost.Math.

#include "kotml/map/limma.hpp"

#include <Eigen/Dense>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <boost/math/special_functions/beta.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/polygamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <cmath>
#include <limits>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/core/types.hpp"

namespace kotml::map {

namespace {

namespace bm = boost::math;
// Double arithmetic throughout (R's nmath is double); failures give NaN, never
// an exception from inside a parallel loop.
using Policy = bm::policies::policy<bm::policies::promote_double<false>,
                                    bm::policies::domain_error<bm::policies::errno_on_error>,
                                    bm::policies::pole_error<bm::policies::errno_on_error>,
                                    bm::policies::overflow_error<bm::policies::errno_on_error>,
                                    bm::policies::evaluation_error<bm::policies::errno_on_error>>;

using ColMat = Eigen::MatrixXd;
using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_value = std::numeric_limits<double>::infinity();

double digamma(double x) { return bm::digamma(x, Policy()); }
double trigamma(double x) { return bm::trigamma(x, Policy()); }
double tetragamma(double x) { return bm::polygamma(2, x, Policy()); }

/// R's mean() of doubles: a long double sum, then one correction pass.
double r_mean(const std::vector<double>& x) {
  const auto n = static_cast<long double>(x.size());
  long double s = 0.0L;
  for (const double v : x) s += v;
  s /= n;
  if (std::isfinite(static_cast<double>(s))) {
    long double t = 0.0L;
    for (const double v : x) t += static_cast<long double>(v) - s;
    s += t / n;
  }
  return static_cast<double>(s);
}

/// R's median() (mean of the two middle values for an even count).
double r_median(std::vector<double> x) {
  const std::size_t n = x.size();
  const std::size_t half = (n + 1) / 2;  // R's 1-based half
  std::sort(x.begin(), x.end());
  if (n % 2 == 1) return x[half - 1];
  return r_mean({x[half - 1], x[half]});
}

/// R's lbeta for the far tail of pt (only its exp is used).
double log_beta(double a, double b) { return std::log(bm::beta(a, b, Policy())); }

}  // namespace

LinearFit lm_fit(const std::vector<double>& y, std::int64_t n_obs, std::int64_t n_genes,
                 const std::vector<double>& design, std::int64_t n_coef) {
  require(n_obs > 0 && n_coef > 0 && n_coef <= n_obs, "", "limma design",
          std::to_string(n_obs) + " observations for " + std::to_string(n_coef) + " coefficients");
  require(static_cast<std::int64_t>(y.size()) == n_obs * n_genes &&
              static_cast<std::int64_t>(design.size()) == n_obs * n_coef,
          "", "limma design", "sizes of the data and the design disagree");
  const ColMat x = Eigen::Map<const RowMat>(design.data(), n_obs, n_coef);
  const Eigen::HouseholderQR<ColMat> qr(x);
  const ColMat r = qr.matrixQR().topLeftCorner(n_coef, n_coef).triangularView<Eigen::Upper>();
  // lm.fit's rank test (dqrdc2, tol 1e-7): a column whose part orthogonal to the
  // earlier ones is tiny against its norm makes the design rank deficient.
  for (std::int64_t k = 0; k < n_coef; ++k)
    require(std::fabs(r(k, k)) > 1e-7 * x.col(k).norm(), "", "limma design",
            "column " + std::to_string(k) + " is not estimable (design not of full rank)");

  LinearFit fit;
  fit.n_genes = n_genes;
  fit.n_coef = n_coef;
  fit.df_residual = static_cast<double>(n_obs - n_coef);

  // Effects Qᵀ Y; coefficients R⁻¹ (Qᵀ Y)[0:p]; sigma from the residual effects.
  const ColMat effects =
      qr.householderQ().transpose() * Eigen::Map<const RowMat>(y.data(), n_obs, n_genes);
  const ColMat beta = r.triangularView<Eigen::Upper>().solve(effects.topRows(n_coef));
  fit.coefficients.resize(static_cast<std::size_t>(n_genes * n_coef));
  fit.sigma.resize(static_cast<std::size_t>(n_genes));
  for (std::int64_t g = 0; g < n_genes; ++g) {
    for (std::int64_t k = 0; k < n_coef; ++k)
      fit.coefficients[static_cast<std::size_t>(g * n_coef + k)] = beta(k, g);
    if (n_obs > n_coef) {
      long double sum = 0.0L;  // R's colMeans
      for (std::int64_t i = n_coef; i < n_obs; ++i) {
        const double e = effects(i, g);
        const double square = e * e;
        sum += square;
      }
      fit.sigma[static_cast<std::size_t>(g)] =
          std::sqrt(static_cast<double>(sum / static_cast<long double>(n_obs - n_coef)));
    } else {
      fit.sigma[static_cast<std::size_t>(g)] = nan_value;
    }
  }
  // chol2inv: (RᵀR)⁻¹ = R⁻¹ R⁻ᵀ.
  const ColMat r_inverse = r.triangularView<Eigen::Upper>().solve(ColMat::Identity(n_coef, n_coef));
  const ColMat cov = r_inverse * r_inverse.transpose();
  fit.cov_coefficients.resize(static_cast<std::size_t>(n_coef * n_coef));
  fit.stdev_unscaled.resize(static_cast<std::size_t>(n_coef));
  for (std::int64_t a = 0; a < n_coef; ++a) {
    for (std::int64_t b = 0; b < n_coef; ++b)
      fit.cov_coefficients[static_cast<std::size_t>(a * n_coef + b)] = cov(a, b);
    fit.stdev_unscaled[static_cast<std::size_t>(a)] = std::sqrt(cov(a, a));
  }
  return fit;
}

LinearFit contrasts_fit(const LinearFit& fit, const std::vector<double>& contrasts,
                        std::int64_t n_contrasts) {
  const std::int64_t p = fit.n_coef, q = n_contrasts;
  require(static_cast<std::int64_t>(contrasts.size()) == p * q, "", "limma contrasts",
          "the contrast matrix needs one row per coefficient");
  const auto c = [&](std::int64_t k, std::int64_t j) {
    return contrasts[static_cast<std::size_t>(k * q + j)];
  };
  LinearFit out;
  out.n_genes = fit.n_genes;
  out.n_coef = q;
  out.df_residual = fit.df_residual;
  out.sigma = fit.sigma;
  out.coefficients.assign(static_cast<std::size_t>(fit.n_genes * q), 0.0);
  for (std::int64_t g = 0; g < fit.n_genes; ++g)
    for (std::int64_t j = 0; j < q; ++j) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < p; ++k)
        sum += fit.coefficients[static_cast<std::size_t>(g * p + k)] * c(k, j);
      out.coefficients[static_cast<std::size_t>(g * q + j)] = sum;
    }

  // Coefficients that some contrast uses; limma tests orthogonality on those.
  std::vector<std::int64_t> used;
  for (std::int64_t k = 0; k < p; ++k) {
    double row = 0.0;
    for (std::int64_t j = 0; j < q; ++j) row += std::fabs(c(k, j));
    if (row != 0.0) used.push_back(k);
  }
  const auto cov = [&](std::int64_t a, std::int64_t b) {
    return fit.cov_coefficients[static_cast<std::size_t>(a * p + b)];
  };
  const auto m = static_cast<std::int64_t>(used.size());
  ColMat cor(m, m);
  bool orthogonal = true;
  for (std::int64_t a = 0; a < m; ++a)
    for (std::int64_t b = 0; b < m; ++b) {
      const std::int64_t ka = used[static_cast<std::size_t>(a)],
                         kb = used[static_cast<std::size_t>(b)];
      const double inv_a = std::sqrt(1.0 / cov(ka, ka)), inv_b = std::sqrt(1.0 / cov(kb, kb));
      cor(a, b) = a == b ? 1.0 : inv_a * cov(ka, kb) * inv_b;
      if (a > b && !(std::fabs(cor(a, b)) < 1e-14)) orthogonal = false;
    }
  out.stdev_unscaled.assign(static_cast<std::size_t>(q), 0.0);
  if (orthogonal) {
    for (std::int64_t j = 0; j < q; ++j) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < p; ++k) {
        const double su = fit.stdev_unscaled[static_cast<std::size_t>(k)];
        sum += (su * su) * (c(k, j) * c(k, j));
      }
      out.stdev_unscaled[static_cast<std::size_t>(j)] = std::sqrt(sum);
    }
  } else {
    const Eigen::LLT<ColMat> chol(cor);
    const ColMat upper = chol.matrixU();
    ColMat scaled(m, q);
    for (std::int64_t a = 0; a < m; ++a)
      for (std::int64_t j = 0; j < q; ++j)
        scaled(a, j) =
            fit.stdev_unscaled[static_cast<std::size_t>(used[static_cast<std::size_t>(a)])] *
            c(used[static_cast<std::size_t>(a)], j);
    const ColMat ruc = upper * scaled;
    for (std::int64_t j = 0; j < q; ++j)
      out.stdev_unscaled[static_cast<std::size_t>(j)] = std::sqrt(ruc.col(j).squaredNorm());
  }
  // Cᵀ cov C.
  out.cov_coefficients.assign(static_cast<std::size_t>(q * q), 0.0);
  for (std::int64_t i = 0; i < q; ++i)
    for (std::int64_t j = 0; j < q; ++j) {
      double sum = 0.0;
      for (std::int64_t a = 0; a < p; ++a)
        for (std::int64_t b = 0; b < p; ++b) sum += c(a, i) * cov(a, b) * c(b, j);
      out.cov_coefficients[static_cast<std::size_t>(i * q + j)] = sum;
    }
  return out;
}

double trigamma_inverse(double x) {
  if (std::isnan(x) || x < 0.0) return nan_value;
  if (x > 1e7) return 1.0 / std::sqrt(x);
  if (x < 1e-6) return 1.0 / x;
  double y = 0.5 + 1.0 / x;
  for (int iter = 1;; ++iter) {
    const double tri = trigamma(y);
    const double dif = tri * (1.0 - tri / x) / tetragamma(y);
    y = y + dif;
    if (-dif / y < 1e-8) break;
    if (iter > 50) break;  // limma warns "Iteration limit exceeded" and returns y
  }
  return y;
}

FDistFit fit_f_dist(const std::vector<double>& x_in, double df1,
                    std::vector<std::string>* warnings) {
  const std::size_t n = x_in.size();
  if (n == 0) return {nan_value, nan_value};
  if (n == 1) return {x_in[0], 0.0};
  if (!(std::isfinite(df1) && df1 > 1e-15)) return {nan_value, nan_value};
  std::vector<double> x;
  x.reserve(n);
  for (const double v : x_in)
    if (std::isfinite(v) && v > -1e-15) x.push_back(v);
  if (x.empty()) return {nan_value, nan_value};
  if (x.size() == 1) return {x[0], 0.0};
  for (double& v : x) v = std::max(v, 0.0);
  double m = r_median(x);
  if (m == 0.0) {
    if (warnings)
      warnings->push_back(
          "More than half of residual variances are exactly zero: eBayes unreliable");
    m = 1.0;
  } else if (std::any_of(x.begin(), x.end(), [](double v) { return v == 0.0; })) {
    if (warnings)
      warnings->push_back("Zero sample variances detected, have been offset away from zero");
  }
  const double floor = 1e-05 * m;
  for (double& v : x) v = std::max(v, floor);
  const double shift = digamma(df1 / 2.0), log_half_df = std::log(df1 / 2.0);
  std::vector<double> e(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) e[i] = std::log(x[i]) - shift + log_half_df;
  const double emean = r_mean(e);
  long double squares = 0.0L;  // R's sum()
  for (const double v : e) {
    const double d = v - emean;
    const double d2 = d * d;
    squares += d2;
  }
  double evar = static_cast<double>(squares) / static_cast<double>(x.size() - 1);
  evar = evar - trigamma(df1 / 2.0);
  FDistFit out;
  if (evar > 0.0) {
    out.df2 = 2.0 * trigamma_inverse(evar);
    out.scale = std::exp(emean + digamma(out.df2 / 2.0) - std::log(out.df2 / 2.0));
  } else {
    out.df2 = inf_value;
    out.scale = r_mean(x);
  }
  return out;
}

double two_sided_t_p(double t, double df) {
  // pt(x, n, lower_tail = TRUE) at x = −|t| (R's nmath/pt.c), then doubled.
  const double x = -std::fabs(t), n = df;
  if (std::isnan(x) || std::isnan(n)) return nan_value;
  if (n <= 0.0) return nan_value;
  if (!std::isfinite(x)) return 0.0;
  if (!std::isfinite(n)) return 2.0 * (0.5 * bm::erfc(-x / std::sqrt(2.0), Policy()));
  const double nx = 1.0 + (x / n) * x;
  double val;
  if (nx > 1e100) {
    const double lval = -0.5 * n * (2.0 * std::log(std::fabs(x)) - std::log(n)) -
                        log_beta(0.5 * n, 0.5) - std::log(0.5 * n);
    val = std::exp(lval);
  } else {
    val = (n > x * x) ? bm::ibetac(0.5, n / 2.0, x * x / (n + x * x), Policy())
                      : bm::ibeta(n / 2.0, 0.5, 1.0 / nx, Policy());
  }
  return 2.0 * (val / 2.0);
}

std::vector<double> p_adjust_bh(const std::vector<double>& p) {
  const std::size_t n = p.size();
  if (n <= 1) return p;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  std::vector<double> out(n);
  double running = inf_value;
  for (std::size_t k = 0; k < n; ++k) {
    const auto i = static_cast<double>(n - k);  // R's i <- lp:1L
    const double value = static_cast<double>(n) / i * p[order[k]];
    running = std::min(running, value);
    out[order[k]] = std::min(1.0, running);
  }
  return out;
}

Moderated ebayes(const LinearFit& fit) {
  const double df = fit.df_residual;
  require(df > 0.0, "", "limma",
          "no residual degrees of freedom in the linear model fits (as many pseudobulk groups as "
          "coefficients); more (sample, cluster) groups are needed");
  require(
      std::any_of(fit.sigma.begin(), fit.sigma.end(), [](double s) { return std::isfinite(s); }),
      "", "limma", "no finite residual standard deviations");
  const std::int64_t n_genes = fit.n_genes, q = fit.n_coef;
  std::vector<double> var(static_cast<std::size_t>(n_genes));
  for (std::int64_t g = 0; g < n_genes; ++g) {
    const double s = fit.sigma[static_cast<std::size_t>(g)];
    var[static_cast<std::size_t>(g)] = s * s;
  }
  Moderated out;
  // squeezeVar.
  require(n_genes > 0, "", "limma", "no genes");
  if (n_genes == 1) {
    out.s2_prior = var[0];
    out.df_prior = 0.0;
    out.s2_post = var;
  } else {
    const FDistFit prior = fit_f_dist(var, df, &out.warnings);
    require(!std::isnan(prior.df2), "", "limma", "could not estimate the prior degrees of freedom");
    out.s2_prior = prior.scale;
    out.df_prior = prior.df2;
    out.s2_post.resize(var.size());
    for (std::size_t g = 0; g < var.size(); ++g)
      out.s2_post[g] = std::isfinite(prior.df2)
                           ? (df * var[g] + prior.df2 * prior.scale) / (df + prior.df2)
                           : prior.scale;
  }
  const double df_pooled = df * static_cast<double>(n_genes);
  out.df_total = std::min(df + out.df_prior, df_pooled);

  out.t.resize(static_cast<std::size_t>(n_genes * q));
  out.p_value.resize(static_cast<std::size_t>(n_genes * q));
  const double df_total = out.df_total;
  const double* coefficients = fit.coefficients.data();
  const double* su = fit.stdev_unscaled.data();
  const double* s2_post = out.s2_post.data();
  double* t = out.t.data();
  double* p = out.p_value.data();
  // One (gene, coefficient) per index; nothing shared.
  Kokkos::parallel_for("kotml::map::ebayes_p_values",
                       Kokkos::RangePolicy<HostExecSpace>(0, n_genes * q), [=](std::int64_t i) {
                         const std::int64_t g = i / q, k = i % q;
                         t[i] = coefficients[i] / su[k] / std::sqrt(s2_post[g]);
                         p[i] = two_sided_t_p(t[i], df_total);
                       });
  Kokkos::fence();
  return out;
}

std::vector<std::int32_t> r_level_order(const Pseudobulk& pb) {
  std::vector<std::int32_t> levels = pb.tested_clusters;
  const auto name = [&](std::int32_t c) {
    return "c_" + std::to_string(pb.cluster_rank[static_cast<std::size_t>(c)]);
  };
  std::sort(levels.begin(), levels.end(),
            [&](std::int32_t a, std::int32_t b) { return name(a) < name(b); });
  return levels;
}

namespace {

DeStats coefficient_stats(const LinearFit& fit, const Moderated& eb, std::int64_t k) {
  DeStats s;
  const auto n = static_cast<std::size_t>(fit.n_genes);
  const auto q = static_cast<std::size_t>(fit.n_coef);
  s.logfc.resize(n);
  s.t.resize(n);
  s.p_value.resize(n);
  for (std::size_t g = 0; g < n; ++g) {
    s.logfc[g] = fit.coefficients[g * q + static_cast<std::size_t>(k)];
    s.t[g] = eb.t[g * q + static_cast<std::size_t>(k)];
    s.p_value[g] = eb.p_value[g * q + static_cast<std::size_t>(k)];
  }
  s.adj_p_value = p_adjust_bh(s.p_value);
  s.s2_prior = eb.s2_prior;
  s.df_prior = eb.df_prior;
  s.df_total = eb.df_total;
  return s;
}

void add_warnings(std::vector<std::string>* sink, const std::vector<std::string>& found,
                  const std::string& where) {
  if (!sink) return;
  for (const auto& w : found) sink->push_back(where + ": " + w);
}

}  // namespace

std::vector<DeStats> limma_one_vs_all(const Pseudobulk& pb, std::vector<std::string>* warnings) {
  std::vector<DeStats> out(pb.cluster_rank.size());
  const std::int64_t n = pb.n_groups;
  for (const std::int32_t c : pb.tested_clusters) {
    std::vector<double> design(static_cast<std::size_t>(n * 2));
    for (std::int64_t i = 0; i < n; ++i) {
      design[static_cast<std::size_t>(2 * i)] = 1.0;
      design[static_cast<std::size_t>(2 * i + 1)] =
          pb.group_cluster[static_cast<std::size_t>(i)] == c ? 1.0 : 0.0;
    }
    const LinearFit fit = lm_fit(pb.values, n, pb.n_genes, design, 2);
    const Moderated eb = ebayes(fit);
    add_warnings(warnings, eb.warnings, "one-vs-all limma of cluster " + std::to_string(c));
    out[static_cast<std::size_t>(c)] = coefficient_stats(fit, eb, 1);
  }
  return out;
}

AllVsAll limma_all_vs_all(const Pseudobulk& pb, std::vector<std::string>* warnings) {
  const std::vector<std::int32_t> levels = r_level_order(pb);
  const auto k = static_cast<std::int64_t>(levels.size());
  const std::int64_t n = pb.n_groups;
  std::vector<std::int64_t> column(pb.cluster_rank.size(), -1);
  for (std::int64_t j = 0; j < k; ++j)
    column[static_cast<std::size_t>(levels[static_cast<std::size_t>(j)])] = j;
  std::vector<double> design(static_cast<std::size_t>(n * k), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    design[static_cast<std::size_t>(
        i * k + column[static_cast<std::size_t>(pb.group_cluster[static_cast<std::size_t>(i)])])] =
        1.0;
  const LinearFit fit1 = lm_fit(pb.values, n, pb.n_genes, design, k);

  AllVsAll out;
  for (std::int64_t a = 0; a < k; ++a)
    for (std::int64_t b = a + 1; b < k; ++b) {
      out.first.push_back(levels[static_cast<std::size_t>(a)]);
      out.second.push_back(levels[static_cast<std::size_t>(b)]);
    }
  const auto q = static_cast<std::int64_t>(out.first.size());
  std::vector<double> contrasts(static_cast<std::size_t>(k * q), 0.0);
  for (std::int64_t j = 0; j < q; ++j) {
    contrasts[static_cast<std::size_t>(
        column[static_cast<std::size_t>(out.first[static_cast<std::size_t>(j)])] * q + j)] = 1.0;
    contrasts[static_cast<std::size_t>(
        column[static_cast<std::size_t>(out.second[static_cast<std::size_t>(j)])] * q + j)] = -1.0;
  }
  const LinearFit fit2 = contrasts_fit(fit1, contrasts, q);
  const Moderated eb = ebayes(fit2);
  add_warnings(warnings, eb.warnings, "all-vs-all limma");
  out.stats.reserve(static_cast<std::size_t>(q));
  for (std::int64_t j = 0; j < q; ++j) out.stats.push_back(coefficient_stats(fit2, eb, j));
  return out;
}

}  // namespace kotml::map
