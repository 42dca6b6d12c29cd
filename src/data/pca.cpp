// Block Lanczos PCA with implicit centring (see pca.hpp).

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
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
using Partials = Kokkos::View<double***, Kokkos::LayoutRight, MemSpace>;

/// Columns of a block handled by one thread: its partial sums live in registers.
constexpr std::int64_t panel = 8;

/// The cells' CSR as the kernels read it: 32-bit column indices (features are
/// far fewer than 2^31) to cut the bytes streamed per stored value.
struct Cells {
  std::int64_t rows = 0, cols = 0;
  Vector<const std::int64_t> indptr;
  Vector<const std::int32_t> indices;
  Vector<const float> values;
};

Cells to_cells(const HostCsr& x) {
  return Cells{x.rows, x.cols, detail::stage(x.indptr), detail::stage(x.indices), detail::stage(x.values)};
}

/// Rows per chunk: a function of the row count only, so the chunk sums below
/// are added in the same order for any thread count; at most 256 chunks.
std::int64_t chunk_rows(std::int64_t rows) { return std::max<std::int64_t>(512, (rows + 255) / 256); }

/// C V = A^T (A V) in one pass over the cells, A = X - 1 mu^T. For each row r and
/// panel of columns: b_r = x_r V - mu^T V (registers), then partial(chunk, j, :)
/// += x_rj b_r for the row's stored j, and sums(chunk, :) += b_r. One thread per
/// (chunk, panel) owns its slices, so nothing is shared.
struct GramChunks {
  Cells x;
  Matrix<const double> v;        // features × l
  Vector<const double> shift;    // mu^T V, length l
  Partials partial;              // chunks × features × l
  Matrix<double> sums;           // chunks × l
  std::int64_t rows_per_chunk, panels;

  /// The chunk's rows for columns c0 .. c0 + width; width is a compile-time
  /// constant for full panels so the column loops unroll.
  template <std::int64_t Width>
  KOKKOS_INLINE_FUNCTION void rows(const std::int64_t chunk, const std::int64_t c0, const std::int64_t width) const {
    const std::int64_t w = Width > 0 ? Width : width;
    double total[panel] = {0, 0, 0, 0, 0, 0, 0, 0};
    const std::int64_t begin = chunk * rows_per_chunk;
    const std::int64_t end = begin + rows_per_chunk < x.rows ? begin + rows_per_chunk : x.rows;
    for (std::int64_t r = begin; r < end; ++r) {
      double b[panel] = {0, 0, 0, 0, 0, 0, 0, 0};
      const std::int64_t p0 = x.indptr(r), p1 = x.indptr(r + 1);
      for (std::int64_t p = p0; p < p1; ++p) {
        const double value = static_cast<double>(x.values(p));
        const double* vj = &v(x.indices(p), c0);
        for (std::int64_t c = 0; c < w; ++c) b[c] += value * vj[c];
      }
      for (std::int64_t c = 0; c < w; ++c) {
        b[c] -= shift(c0 + c);
        total[c] += b[c];
      }
      for (std::int64_t p = p0; p < p1; ++p) {
        const double value = static_cast<double>(x.values(p));
        double* out = &partial(chunk, x.indices(p), c0);
        for (std::int64_t c = 0; c < w; ++c) out[c] += value * b[c];
      }
    }
    for (std::int64_t c = 0; c < w; ++c) sums(chunk, c0 + c) = total[c];
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    const std::int64_t chunk = item / panels;
    const std::int64_t c0 = (item % panels) * panel;
    const auto l = static_cast<std::int64_t>(v.extent(1));
    const std::int64_t width = l - c0 < panel ? l - c0 : panel;
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t c = 0; c < width; ++c) partial(chunk, j, c0 + c) = 0.0;
    if (width == panel)
      rows<panel>(chunk, c0, width);
    else
      rows<0>(chunk, c0, width);
  }
};

/// w(j, c) = sum over chunks, in chunk order, of partial(chunk, j, c), minus
/// mu_j · (1^T A V)(c).
struct ReduceChunks {
  Partials partial;
  Matrix<const double> sums;
  Vector<const double> mu;
  Matrix<double> w;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    const auto l = static_cast<std::int64_t>(w.extent(1));
    const std::int64_t j = item / l, c = item % l;
    double value = 0, total = 0;
    for (std::size_t chunk = 0; chunk < partial.extent(0); ++chunk) {
      value += partial(chunk, j, c);
      total += sums(chunk, c);
    }
    w(j, c) = value - mu(j) * total;
  }
};

/// out(r, :) = x_r · in - shift, one thread per (row, panel): A·Y for the scores.
struct CellsTimesBlock {
  Cells x;
  Matrix<const double> in;
  Vector<const double> shift;
  Matrix<double> out;
  std::int64_t panels;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    const std::int64_t r = item / panels;
    const std::int64_t c0 = (item % panels) * panel;
    const auto l = static_cast<std::int64_t>(in.extent(1));
    const std::int64_t width = l - c0 < panel ? l - c0 : panel;
    double acc[panel] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (std::int64_t p = x.indptr(r); p < x.indptr(r + 1); ++p) {
      const double value = static_cast<double>(x.values(p));
      const double* row = &in(x.indices(p), c0);
      for (std::int64_t c = 0; c < width; ++c) acc[c] += value * row[c];
    }
    for (std::int64_t c = 0; c < width; ++c) out(r, c0 + c) = acc[c] - shift(c0 + c);
  }
};

/// Per chunk and feature: sum and sum of squares of the stored values.
struct MomentChunks {
  Cells x;
  Partials partial;  // chunks × features × 2
  std::int64_t rows_per_chunk;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t chunk) const {
    for (std::int64_t j = 0; j < x.cols; ++j) partial(chunk, j, 0) = partial(chunk, j, 1) = 0.0;
    const std::int64_t begin = chunk * rows_per_chunk;
    const std::int64_t end = begin + rows_per_chunk < x.rows ? begin + rows_per_chunk : x.rows;
    for (std::int64_t p = x.indptr(begin); p < x.indptr(end); ++p) {
      const double value = static_cast<double>(x.values(p));
      partial(chunk, x.indices(p), 0) += value;
      partial(chunk, x.indices(p), 1) += value * value;
    }
  }
};

/// moments(j, k) = sum over chunks, in order, of partial(chunk, j, k).
struct SumChunks {
  Partials partial;
  Matrix<double> moments;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j) const {
    double s = 0, s2 = 0;
    for (std::size_t chunk = 0; chunk < partial.extent(0); ++chunk) {
      s += partial(chunk, j, 0);
      s2 += partial(chunk, j, 1);
    }
    moments(j, 0) = s;
    moments(j, 1) = s2;
  }
};

void run_gram_chunks(const GramChunks& k, std::int64_t items) {
  Kokkos::parallel_for("kotml::data::pca_gram_chunks", Range(0, items), k);
}
void run_reduce_chunks(const ReduceChunks& k, std::int64_t items) {
  Kokkos::parallel_for("kotml::data::pca_reduce_chunks", Range(0, items), k);
}
void run_cells_times_block(const CellsTimesBlock& k, std::int64_t items) {
  Kokkos::parallel_for("kotml::data::pca_cells_times_block", Range(0, items), k);
}
void run_moment_chunks(const MomentChunks& k, std::int64_t chunks) {
  Kokkos::parallel_for("kotml::data::pca_moment_chunks", Range(0, chunks), k);
}
void run_sum_chunks(const SumChunks& k, std::int64_t features) {
  Kokkos::parallel_for("kotml::data::pca_sum_chunks", Range(0, features), k);
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

/// The centred operator A = X - 1 mu^T of the cells, on the device.
class CentredCells {
 public:
  explicit CentredCells(const HostCsr& x) : x_(to_cells(x)), rows_per_chunk_(chunk_rows(x.rows)) {
    chunks_ = (x.rows + rows_per_chunk_ - 1) / rows_per_chunk_;
  }

  /// Per feature: sum and sum of squares over the cells (features × 2).
  Mat moments() const {
    MomentChunks k{x_, Partials(no_init("pca moment partials"), chunks_, x_.cols, 2), rows_per_chunk_};
    run_moment_chunks(k, chunks_);
    Matrix<double> moments(no_init("pca moments"), x_.cols, 2);
    run_sum_chunks(SumChunks{k.partial, moments}, x_.cols);
    return host_copy(moments);
  }

  void set_mean(const std::vector<double>& mean) {
    mu_ = Eigen::Map<const Vec>(mean.data(), static_cast<Eigen::Index>(mean.size()));
    mu_device_ = detail::to_device("pca mean", mean);
  }

  /// A^T A V (features × l).
  Mat gram_times(const Mat& v) const {
    const auto l = static_cast<std::int64_t>(v.cols());
    GramChunks k{x_,
                 device_copy("pca V", v),
                 device_vector("pca mu^T V", v.transpose() * mu_),
                 Partials(no_init("pca gram partials"), chunks_, x_.cols, l),
                 Matrix<double>(no_init("pca chunk sums"), chunks_, l),
                 rows_per_chunk_,
                 (l + panel - 1) / panel};
    run_gram_chunks(k, chunks_ * k.panels);
    Matrix<double> w(no_init("pca A^T A V"), x_.cols, l);
    run_reduce_chunks(ReduceChunks{k.partial, k.sums, mu_device_, w}, x_.cols * l);
    return host_copy(w);
  }

  /// A Y (cells × l).
  Mat times(const Mat& y) const {
    const auto l = static_cast<std::int64_t>(y.cols());
    CellsTimesBlock k{x_, device_copy("pca Y", y), device_vector("pca mu^T Y", y.transpose() * mu_),
                      Matrix<double>(no_init("pca A Y"), x_.rows, l), (l + panel - 1) / panel};
    run_cells_times_block(k, x_.rows * k.panels);
    return host_copy(k.out);
  }

 private:
  Cells x_;
  std::int64_t rows_per_chunk_ = 0, chunks_ = 0;
  Vec mu_;
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
  CentredCells gram(x);
  const Mat moments = gram.moments();
  result.mean.resize(g);
  const auto nd = static_cast<double>(n);
  double total_variance = 0;
  for (std::int64_t j = 0; j < g; ++j) {
    result.mean[j] = moments(j, 0) / nd;
    total_variance += (moments(j, 1) / nd - result.mean[j] * result.mean[j]) * nd / (nd - 1.0);
  }
  gram.set_mean(result.mean);

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
  // Convergence checks cost an m × m eigensolve: they are spaced by predicting,
  // from the last two residuals, where the residual reaches tol.
  std::int64_t m = 0, next_check = k + b, previous_m = 0;
  double previous_residual = 0;
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
    if (m >= next_check || full) {
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
      std::int64_t step = std::max<std::int64_t>(b, m / 8);
      if (previous_m > 0 && worst < previous_residual && worst > 0) {
        const double rate = (std::log(worst) - std::log(previous_residual)) / static_cast<double>(m - previous_m);
        const double needed = (std::log(o.tol) - std::log(worst)) / rate;
        step = std::max<std::int64_t>(b, std::min<std::int64_t>(static_cast<std::int64_t>(needed) + 1, m / 4 + b));
      }
      previous_m = m;
      previous_residual = worst;
      next_check = m + step;
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
  const Mat scores = gram.times(y);
  result.components.resize(static_cast<std::size_t>(k * g));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < g; ++j) result.components[i * g + j] = y(j, i);
  result.scores.assign(scores.data(), scores.data() + n * k);
  for (std::int64_t i = 0; i < k; ++i) {
    const double s2 = std::max(theta(i), 0.0);
    result.singular_values.push_back(std::sqrt(s2));
    result.variance.push_back(s2 / (nd - 1.0));
    result.variance_ratio.push_back(total_variance > 0 ? s2 / (nd - 1.0) / total_variance : 0.0);
  }
  return result;
}

}  // namespace kotml::data
