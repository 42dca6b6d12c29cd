// Randomized block subspace iteration PCA with implicit centring (see pca.hpp).

#include "kotml/data/pca.hpp"

#include <Eigen/Dense>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;
using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;

/// out(r, :) = sum_p values(p) · in(indices(p), :) - shift(:), for every row r of
/// the CSR (indptr, indices, values): X·V - 1 (mu^T V) with the cells' CSR, and
/// X^T·B - mu (1^T B) with the features' CSR (shift scaled per row by `scale`).
struct SparseTimesBlock {
  Vector<const std::int64_t> indptr;
  Vector<const std::int64_t> indices;
  Vector<const float> values;
  Matrix<const double> in;
  Vector<const double> shift;      // length l
  Vector<const double> row_scale;  // per output row, multiplies shift; empty: 1
  Matrix<double> out;
  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const auto r = static_cast<std::int64_t>(team.league_rank());
    const auto l = static_cast<std::int64_t>(in.extent(1));
    const double scale = row_scale.extent(0) > 0 ? row_scale(r) : 1.0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, l), [&](const std::int64_t c) {
      double v = 0;
      for (std::int64_t p = indptr(r); p < indptr(r + 1); ++p) v += static_cast<double>(values(p)) * in(indices(p), c);
      out(r, c) = v - scale * shift(c);
    });
  }
};

/// sums(c) = sum_r m(r, c), each column summed in row order by one thread.
struct ColumnSums {
  Matrix<const double> m;
  Vector<double> sums;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t c) const {
    double s = 0;
    for (std::size_t r = 0; r < m.extent(0); ++r) s += m(r, c);
    sums(c) = s;
  }
};

/// out(r, :) = in(r, :) · right  (right is l × k).
struct BlockTimesSmall {
  Matrix<const double> in;
  Matrix<const double> right;
  Matrix<double> out;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t r) const {
    for (std::size_t c = 0; c < right.extent(1); ++c) {
      double v = 0;
      for (std::size_t a = 0; a < right.extent(0); ++a) v += in(r, a) * right(a, c);
      out(r, c) = v;
    }
  }
};

/// Per feature (row of the features' CSR): sum and sum of squares of its values.
struct FeatureSums {
  Vector<const std::int64_t> indptr;
  Vector<const float> values;
  Vector<double> sums, squares;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j) const {
    double s = 0, s2 = 0;
    for (std::int64_t p = indptr(j); p < indptr(j + 1); ++p) {
      const double v = values(p);
      s += v;
      s2 += v * v;
    }
    sums(j) = s;
    squares(j) = s2;
  }
};

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

void run_sparse_times_block(const SparseTimesBlock& k, std::int64_t rows) {
  Kokkos::parallel_for("kotml::data::pca_sparse_times_block", Kokkos::TeamPolicy<ExecSpace>(rows, Kokkos::AUTO), k);
}
void run_column_sums(const ColumnSums& k, std::int64_t cols) {
  Kokkos::parallel_for("kotml::data::pca_column_sums", Range(0, cols), k);
}
void run_block_times_small(const BlockTimesSmall& k, std::int64_t rows) {
  Kokkos::parallel_for("kotml::data::pca_block_times_small", Range(0, rows), k);
}
void run_feature_sums(const FeatureSums& k, std::int64_t features) {
  Kokkos::parallel_for("kotml::data::pca_feature_sums", Range(0, features), k);
}

Matrix<double> device_copy(const std::string& label, const Mat& m) {
  Matrix<double> d(no_init(label), m.rows(), m.cols());
  Kokkos::deep_copy(d, detail::HostUnmanagedMatrix<const double>(m.data(), m.rows(), m.cols()));
  return d;
}

Mat host_copy(const Matrix<double>& d) {
  Mat m(d.extent(0), d.extent(1));
  Kokkos::deep_copy(detail::HostUnmanagedMatrix<double>(m.data(), m.rows(), m.cols()), d);
  return m;
}

Vector<double> device_vector(const std::string& label, const Vec& v) {
  return detail::to_device(label, std::vector<double>(v.data(), v.data() + v.size()));
}

Mat thin_q(const Mat& m) {
  Eigen::HouseholderQR<Mat> qr(m);
  return qr.householderQ() * Mat::Identity(m.rows(), m.cols());
}

}  // namespace

PcaResult pca(const HostCsr& x, const PcaOptions& o) {
  const std::int64_t n = x.rows, g = x.cols;
  const std::int64_t smaller = std::min(n, g);
  if (o.n_comps < 1 || o.n_comps >= smaller)
    throw Error::option("n-comps", "must be between 1 and min(cells, features) - 1 = " +
                                       std::to_string(smaller - 1) + ", got " + std::to_string(o.n_comps));
  const std::int64_t k = o.n_comps;
  const std::int64_t oversample = o.oversample > 0 ? o.oversample : std::max<std::int64_t>(10, k / 2);
  const std::int64_t l = std::min(smaller, k + oversample);

  const HostCsr xt = transpose(x);
  const DeviceCsr cells = to_device(x);
  const DeviceCsr features = to_device(xt);

  // Feature means and total variance (unbiased), as scanpy's _get_mean_var.
  FeatureSums moments{features.indptr, features.values, Vector<double>("pca sums", g), Vector<double>("pca squares", g)};
  run_feature_sums(moments, g);
  const auto sums = detail::to_host(moments.sums);
  const auto squares = detail::to_host(moments.squares);
  PcaResult result;
  result.n_obs = n;
  result.n_features = g;
  result.n_comps = k;
  result.mean.resize(g);
  double total_variance = 0;
  const auto nd = static_cast<double>(n);
  for (std::int64_t j = 0; j < g; ++j) {
    result.mean[j] = sums[j] / nd;
    total_variance += (squares[j] / nd - result.mean[j] * result.mean[j]) * nd / (nd - 1.0);
  }
  const Eigen::Map<const Vec> mu(result.mean.data(), g);
  const auto mu_device = detail::to_device("pca mean", result.mean);

  // Start block: Gaussian, from the PCA stream, orthonormalised.
  Mat v(g, l);
  random::Stream stream(o.seed, random::Purpose::pca, 0);
  for (std::int64_t j = 0; j < g; ++j)
    for (std::int64_t c = 0; c < l; ++c) v(j, c) = stream.normal();
  v = thin_q(v);

  Matrix<double> b(no_init("pca A V"), n, l);
  Matrix<double> w(no_init("pca A^T A V"), g, l);
  Vector<double> column_sums(no_init("pca 1^T A V"), l);
  Vector<const double> no_scale;
  Mat ritz_vectors;  // l × l, columns by descending Ritz value
  Vec theta;
  for (result.iterations = 1; result.iterations <= o.max_iter; ++result.iterations) {
    // B = A V, W = A^T B.
    const Vec shift_v = v.transpose() * mu;  // mu^T V
    run_sparse_times_block(SparseTimesBlock{cells.indptr, cells.indices, cells.values, device_copy("pca V", v),
                                            device_vector("pca mu^T V", shift_v), no_scale, b},
                           n);
    run_column_sums(ColumnSums{b, column_sums}, l);
    run_sparse_times_block(SparseTimesBlock{features.indptr, features.indices, features.values, b, column_sums,
                                            mu_device, w},
                           g);
    const Mat w_host = host_copy(w);

    // Rayleigh–Ritz on span(V): G = V^T A^T A V.
    Mat gram = v.transpose() * w_host;
    gram = 0.5 * (gram + gram.transpose()).eval();
    Eigen::SelfAdjointEigenSolver<Mat> eig(gram);
    theta = eig.eigenvalues().reverse();
    ritz_vectors = eig.eigenvectors().rowwise().reverse();
    const Mat cy = w_host * ritz_vectors;  // A^T A y
    const Mat y = v * ritz_vectors;
    double worst = 0;
    for (std::int64_t i = 0; i < k; ++i) {
      const double t = std::max(theta(i), 1e-300);
      worst = std::max(worst, (cy.col(i) - theta(i) * y.col(i)).norm() / t);
    }
    result.residual = worst;
    if (worst <= o.tol) {
      result.converged = true;
      break;
    }
    if (result.iterations == o.max_iter) break;
    v = thin_q(w_host);
  }
  result.iterations = std::min(result.iterations, o.max_iter);

  // Components y_i = V s_i; scores A y_i = B s_i (B belongs to the final V).
  const Mat y = v * ritz_vectors.leftCols(k);
  Mat s_k = ritz_vectors.leftCols(k);
  Vec sign = Vec::Ones(k);
  for (std::int64_t i = 0; i < k; ++i) {
    Eigen::Index at = 0;
    y.col(i).cwiseAbs().maxCoeff(&at);
    if (y(at, i) < 0) sign(i) = -1.0;
  }
  s_k = s_k * sign.asDiagonal();
  Matrix<double> scores(no_init("pca scores"), n, k);
  run_block_times_small(BlockTimesSmall{b, device_copy("pca S", s_k), scores}, n);
  const Mat scores_host = host_copy(scores);

  result.components.resize(static_cast<std::size_t>(k * g));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < g; ++j) result.components[i * g + j] = sign(i) * y(j, i);
  result.scores.assign(scores_host.data(), scores_host.data() + n * k);
  for (std::int64_t i = 0; i < k; ++i) {
    const double s2 = std::max(theta(i), 0.0);
    result.singular_values.push_back(std::sqrt(s2));
    result.variance.push_back(s2 / (nd - 1.0));
    result.variance_ratio.push_back(total_variance > 0 ? s2 / (nd - 1.0) / total_variance : 0.0);
  }
  return result;
}

}  // namespace kotml::data
