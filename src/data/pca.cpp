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

/// out(r, :) = sum_p values(p) · in(indices(p), :) - scale_r · shift(:), for every
/// row r of the CSR (indptr, indices, values): X·V - 1 (mu^T V) with the cells'
/// CSR, and X^T·B - mu (1^T B) with the features' CSR (scale_r = mu_r). A row's
/// block is accumulated value by value, columns innermost (contiguous).
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
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, l), [&](const std::int64_t c) { out(r, c) = -scale * shift(c); });
    team.team_barrier();
    for (std::int64_t p = indptr(r); p < indptr(r + 1); ++p) {
      const double v = static_cast<double>(values(p));
      const std::int64_t j = indices(p);
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, l), [&](const std::int64_t c) { out(r, c) += v * in(j, c); });
    }
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
  Kokkos::parallel_for("kotml::data::pca_sparse_times_block", Kokkos::TeamPolicy<ExecSpace>(rows, 1, Kokkos::AUTO), k);
}
void run_column_sums(const ColumnSums& k, std::int64_t cols) {
  Kokkos::parallel_for("kotml::data::pca_column_sums", Range(0, cols), k);
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

/// The centred operator A = X - 1 mu^T applied as C = A^T A to blocks of
/// feature-space vectors, on the device.
class GramOperator {
 public:
  GramOperator(const HostCsr& x, const std::vector<double>& mean)
      : cells_(to_device(x)), features_(to_device(transpose(x))), mu_(mean.data(), static_cast<Eigen::Index>(mean.size())),
        mu_device_(detail::to_device("pca mean", mean)) {}

  /// B = A V (cells × l), kept on the device.
  Matrix<double> times(const Mat& v) const {
    Matrix<double> b(no_init("pca A V"), cells_.rows, v.cols());
    const Vec shift = v.transpose() * mu_;  // mu^T V
    run_sparse_times_block(SparseTimesBlock{cells_.indptr, cells_.indices, cells_.values, device_copy("pca V", v),
                                            device_vector("pca mu^T V", shift), Vector<const double>(), b},
                           cells_.rows);
    return b;
  }
  /// A^T B (features × l), on the host.
  Mat transpose_times(const Matrix<double>& b) const {
    Vector<double> sums(no_init("pca 1^T B"), b.extent(1));
    run_column_sums(ColumnSums{b, sums}, static_cast<std::int64_t>(b.extent(1)));
    Matrix<double> w(no_init("pca A^T B"), features_.rows, b.extent(1));
    run_sparse_times_block(SparseTimesBlock{features_.indptr, features_.indices, features_.values, b, sums, mu_device_, w},
                           features_.rows);
    return host_copy(w);
  }
  Mat gram_times(const Mat& v) const { return transpose_times(times(v)); }

 private:
  DeviceCsr cells_, features_;
  Eigen::Map<const Vec> mu_;
  Vector<const double> mu_device_;
};

/// Orthogonalises w against the columns of q (two passes of classical
/// Gram–Schmidt, enough for full orthogonality in double) and returns the
/// coefficients of the first pass plus the second.
Mat orthogonalise(const Mat& q, Mat& w) {
  Mat coefficients = q.transpose() * w;
  w -= q * coefficients;
  const Mat again = q.transpose() * w;
  w -= q * again;
  return coefficients + again;
}

}  // namespace

PcaResult pca(const HostCsr& x, const PcaOptions& o) {
  const std::int64_t n = x.rows, g = x.cols;
  const std::int64_t smaller = std::min(n, g);
  if (o.n_comps < 1 || o.n_comps >= smaller)
    throw Error::option("n-comps", "must be between 1 and min(cells, features) - 1 = " +
                                       std::to_string(smaller - 1) + ", got " + std::to_string(o.n_comps));
  if (o.block_size < 1) throw Error::option("pca-block", "must be positive");
  const std::int64_t k = o.n_comps;
  const std::int64_t b = std::min(o.block_size, g);
  const std::int64_t max_basis =
      std::min(g, o.max_basis > 0 ? std::max(o.max_basis, k + b) : std::max<std::int64_t>(20 * k, 400));

  PcaResult result;
  result.n_obs = n;
  result.n_features = g;
  result.n_comps = k;

  // Feature means and total variance (unbiased), as scanpy's _get_mean_var.
  {
    const DeviceCsr features = to_device(transpose(x));
    FeatureSums moments{features.indptr, features.values, Vector<double>("pca sums", g), Vector<double>("pca squares", g)};
    run_feature_sums(moments, g);
    const auto sums = detail::to_host(moments.sums);
    const auto squares = detail::to_host(moments.squares);
    result.mean.resize(g);
    const auto nd = static_cast<double>(n);
    double total = 0;
    for (std::int64_t j = 0; j < g; ++j) {
      result.mean[j] = sums[j] / nd;
      total += (squares[j] / nd - result.mean[j] * result.mean[j]) * nd / (nd - 1.0);
    }
    result.variance_ratio.assign(1, total);  // total variance, replaced below
  }
  const double total_variance = result.variance_ratio[0];
  result.variance_ratio.clear();
  const GramOperator gram(x, result.mean);

  // Block Lanczos with full reorthogonalisation. basis holds Q_1..Q_j; t is the
  // projected matrix Q^T C Q, filled column block by column block.
  random::Stream stream(o.seed, random::Purpose::pca, 0);
  const auto gaussian_block = [&](std::int64_t cols) {
    Mat m(g, cols);
    for (std::int64_t i = 0; i < g; ++i)
      for (std::int64_t c = 0; c < cols; ++c) m(i, c) = stream.normal();
    return m;
  };
  Mat basis = thin_q(gaussian_block(b));
  Mat t = Mat::Zero(max_basis, max_basis);
  Vec theta;
  Mat ritz;  // columns: eigenvectors of t, by descending Ritz value
  std::int64_t m = 0, last_check = 0;
  const auto solve_projected = [&](std::int64_t size) {
    Mat tm = t.topLeftCorner(size, size);
    tm = 0.5 * (tm + tm.transpose()).eval();
    Eigen::SelfAdjointEigenSolver<Mat> eig(tm);
    theta = eig.eigenvalues().reverse();
    ritz = eig.eigenvectors().rowwise().reverse();
  };
  while (true) {
    const std::int64_t j0 = m;
    const std::int64_t width = basis.cols() - j0;  // the newest block
    Mat w = gram.gram_times(basis.rightCols(width));
    ++result.iterations;
    const Mat coefficients = orthogonalise(basis, w);  // Q^T C Q_new, then w ⟂ Q
    t.block(0, j0, j0 + width, width) = coefficients;
    t.block(j0, 0, width, j0) = coefficients.topRows(j0).transpose();
    m = j0 + width;

    // Next block: w = Q_w R. A rank-deficient w (an invariant subspace) is
    // topped up with fresh random directions, orthogonal to the basis.
    Eigen::HouseholderQR<Mat> qr(w);
    Mat q_w = qr.householderQ() * Mat::Identity(g, width);
    Mat r_full = qr.matrixQR().topRows(width).triangularView<Eigen::Upper>();
    const double scale = std::max(1e-300, std::fabs(t(0, 0)));
    const std::int64_t next = std::min(width, max_basis - m);
    for (std::int64_t c = 0; c < next; ++c) {
      if (std::fabs(r_full(c, c)) > 1e-12 * scale) continue;
      Mat fresh = gaussian_block(1);
      orthogonalise(basis, fresh);
      orthogonalise(q_w.leftCols(c), fresh);
      q_w.col(c) = fresh / fresh.norm();
      r_full.row(c).setZero();
    }

    // Convergence of the leading Ritz pairs: ||C y - theta y|| = ||R s_last||.
    const bool full = m >= max_basis;
    if ((m >= k + b && m - last_check >= std::max<std::int64_t>(b, m / 10)) || full) {
      last_check = m;
      solve_projected(m);
      double worst = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        const double residual = (r_full * ritz.block(j0, i, width, 1)).norm();
        worst = std::max(worst, residual / std::max(theta(i), 1e-300));
      }
      result.residual = worst;
      if (worst <= o.tol || full) {
        result.converged = worst <= o.tol || m == g;
        break;
      }
    }
    Mat grown(g, m + next);
    grown << basis, q_w.leftCols(next);
    basis.swap(grown);
    t.block(m, j0, next, width) = r_full.topRows(next);
    t.block(j0, m, width, next) = r_full.topRows(next).transpose();
  }
  result.basis_size = m;

  // Components y_i = Q s_i with scikit-learn's sign rule; scores A y_i.
  Mat y = basis.leftCols(m) * ritz.leftCols(k);
  for (std::int64_t i = 0; i < k; ++i) {
    Eigen::Index at = 0;
    y.col(i).cwiseAbs().maxCoeff(&at);
    if (y(at, i) < 0) y.col(i) *= -1.0;
  }
  const Mat scores = host_copy(gram.times(y));
  result.components.resize(static_cast<std::size_t>(k * g));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < g; ++j) result.components[i * g + j] = y(j, i);
  result.scores.assign(scores.data(), scores.data() + n * k);
  const auto nd = static_cast<double>(n);
  for (std::int64_t i = 0; i < k; ++i) {
    const double s2 = std::max(theta(i), 0.0);
    result.singular_values.push_back(std::sqrt(s2));
    result.variance.push_back(s2 / (nd - 1.0));
    result.variance_ratio.push_back(total_variance > 0 ? s2 / (nd - 1.0) / total_variance : 0.0);
  }
  return result;
}

}  // namespace kotml::data
