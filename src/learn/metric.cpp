#include "kotml/learn/metric.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"

namespace kotml::learn {

MetricMatrix initial_metric(std::int64_t k, std::int64_t d, std::uint64_t seed) {
  if (k < 1) throw Error::option("n-comps", "must be at least 1, got " + std::to_string(k));
  if (k > d)
    throw Error::option("n-comps", "must not exceed the " + std::to_string(d) +
                                       " features of the cohort, got " + std::to_string(k));
  random::Stream stream(seed, random::Purpose::metric_init, 0);
  Eigen::MatrixXd gaussian(d, k);
  // Row-major draw order (feature by feature), fixed for reproducibility.
  for (Eigen::Index i = 0; i < d; ++i)
    for (Eigen::Index j = 0; j < k; ++j) gaussian(i, j) = stream.normal();
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(gaussian);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(d, k);
  const Eigen::MatrixXd r = qr.matrixQR().topLeftCorner(k, k).triangularView<Eigen::Upper>();
  // Fixing the sign of R's diagonal makes Q unique, hence Haar-distributed.
  for (Eigen::Index j = 0; j < k; ++j)
    if (r(j, j) < 0) q.col(j) *= -1.0;
  MetricMatrix a("metric_A", static_cast<std::size_t>(k), static_cast<std::size_t>(d));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < d; ++j) a(static_cast<std::size_t>(i), static_cast<std::size_t>(j)) = q(j, i);
  return a;
}

RegNorm parse_reg_norm(const std::string& text) {
  if (text == "fro" || text == "2") return RegNorm::frobenius;
  if (text == "1" || text == "l1") return RegNorm::l1;
  throw Error::option("reg-type", "must be 'fro' (Frobenius) or '1' (elementwise L1), got '" + text + "'");
}

std::string to_string(RegNorm norm) { return norm == RegNorm::frobenius ? "fro" : "1"; }

double regularizer_value(const MetricMatrix& a, RegNorm norm, double reg) {
  const double* v = a.data();
  const std::size_t n = a.size();
  double total = 0.0;
  if (norm == RegNorm::frobenius) {
    for (std::size_t i = 0; i < n; ++i) total += v[i] * v[i];
    return reg * std::sqrt(total);
  }
  for (std::size_t i = 0; i < n; ++i) total += std::fabs(v[i]);
  return reg * total;
}

void add_regularizer_gradient(const MetricMatrix& a, RegNorm norm, double reg, std::vector<double>& grad) {
  const double* v = a.data();
  const std::size_t n = a.size();
  if (norm == RegNorm::frobenius) {
    const double length = regularizer_value(a, norm, 1.0);
    if (length == 0.0) return;
    for (std::size_t i = 0; i < n; ++i) grad[i] += reg * v[i] / length;
    return;
  }
  for (std::size_t i = 0; i < n; ++i) grad[i] += reg * static_cast<double>((v[i] > 0) - (v[i] < 0));
}

double frobenius_norm(const std::vector<double>& values) {
  double total = 0.0;
  for (double x : values) total += x * x;
  return std::sqrt(total);
}

std::vector<double> gene_loadings(const MetricMatrix& a, const std::vector<double>& feature_to_gene,
                                  std::int64_t n_genes) {
  const auto k = static_cast<std::int64_t>(a.extent(0));
  const auto d = static_cast<std::int64_t>(a.extent(1));
  std::vector<double> loadings(static_cast<std::size_t>(n_genes * k), 0.0);
  if (feature_to_gene.empty()) {
    if (n_genes != d) throw InternalError("gene loadings: features are not genes");
    for (std::int64_t g = 0; g < d; ++g)
      for (std::int64_t c = 0; c < k; ++c) loadings[static_cast<std::size_t>(g * k + c)] = a(static_cast<std::size_t>(c), static_cast<std::size_t>(g));
    return loadings;
  }
  if (static_cast<std::int64_t>(feature_to_gene.size()) != n_genes * d)
    throw InternalError("gene loadings: gene map has the wrong shape");
  for (std::int64_t g = 0; g < n_genes; ++g)
    for (std::int64_t c = 0; c < k; ++c) {
      double s = 0.0;
      for (std::int64_t f = 0; f < d; ++f) s += feature_to_gene[static_cast<std::size_t>(g * d + f)] * a(static_cast<std::size_t>(c), static_cast<std::size_t>(f));
      loadings[static_cast<std::size_t>(g * k + c)] = s;
    }
  return loadings;
}

std::vector<std::int64_t> top_genes(const std::vector<double>& loadings, std::int64_t n_genes,
                                    std::int64_t k, std::int64_t top) {
  const std::int64_t m = std::min(top, n_genes);
  std::vector<std::int64_t> result;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n_genes));
  for (std::int64_t c = 0; c < k; ++c) {
    std::iota(order.begin(), order.end(), std::int64_t(0));
    auto magnitude = [&](std::int64_t g) { return std::fabs(loadings[static_cast<std::size_t>(g * k + c)]); };
    std::partial_sort(order.begin(), order.begin() + m, order.end(), [&](std::int64_t x, std::int64_t y) {
      return magnitude(x) > magnitude(y) || (magnitude(x) == magnitude(y) && x < y);
    });
    result.insert(result.end(), order.begin(), order.begin() + m);
  }
  return result;
}

}  // namespace kotml::learn
