// GGML-OT's two-class Gaussian-mixture cohort (ggml_ot.data.synthetic_gmm.synth_gmm)
// with our own random streams.
//
// The class signal lives in a latent 2-D plane: class 0 puts its two signal modes
// on archetypes (r - s, 0) and (0, r + s), class 1 on (r + s, 0) and (0, r - s)
// (r = signal_means_offset, s = signal_mean_shift), with anisotropic covariances.
// Noise modes sit at the plane's origin. The other n_dim - 2 coordinates are
// nuisance: noise modes have means on a sphere and low-rank spiked covariances,
// signal modes small full-rank ones. Every patient jitters means, rotates and
// scales covariances; the plane is rotated by global_rotation; then a Haar-random
// orthogonal Q mixes all coordinates: x = [x_rot, x_nuisance] Qᵀ.
//
// Host code builds the mixture parameters (Eigen, one parameter stream in a fixed
// order); one kernel draws every cell from its own stream.

#include <Eigen/Dense>
#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"
#include "kotml/data/samplers.hpp"
#include "kotml/data/simulate.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
constexpr double pi = 3.14159265358979323846;

// ------------------------------------------------------------ host geometry
Mat rotation(double degrees) {
  const double t = degrees * pi / 180.0;
  Mat r(2, 2);
  r << std::cos(t), -std::sin(t), std::sin(t), std::cos(t);
  return r;
}

/// Symmetrises and lifts eigenvalues to at least 1e-8, as GGML-OT's _project_psd.
Mat project_psd(const Mat& c) {
  if (c.size() == 0) return c;
  const Mat sym = 0.5 * (c + c.transpose());
  Eigen::SelfAdjointEigenSolver<Mat> eig(sym);
  const Vec values = eig.eigenvalues().cwiseMax(1e-8);
  return eig.eigenvectors() * values.asDiagonal() * eig.eigenvectors().transpose();
}

Mat gaussian_matrix(random::Stream& rng, Eigen::Index rows, Eigen::Index cols) {
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = rng.normal();
  return m;
}

/// Orthonormal basis of a Gaussian matrix's columns (numpy.linalg.qr's Q).
Mat orthonormal_columns(random::Stream& rng, Eigen::Index rows, Eigen::Index cols) {
  const Mat g = gaussian_matrix(rng, rows, cols);
  Eigen::HouseholderQR<Mat> qr(g);
  return qr.householderQ() * Mat::Identity(rows, cols);
}

/// Haar-distributed orthogonal matrix: QR of a Gaussian matrix with the signs of
/// R's diagonal moved into Q (Mezzadri 2007), as scipy's ortho_group.
Mat haar_orthogonal(random::Stream& rng, Eigen::Index n) {
  const Mat g = gaussian_matrix(rng, n, n);
  Eigen::HouseholderQR<Mat> qr(g);
  Mat q = qr.householderQ() * Mat::Identity(n, n);
  const Mat r = qr.matrixQR().triangularView<Eigen::Upper>();
  for (Eigen::Index j = 0; j < n; ++j)
    if (r(j, j) < 0) q.col(j) *= -1.0;
  return q;
}

std::vector<double> dirichlet(random::Stream& rng, std::size_t n, double concentration) {
  std::vector<double> p(n);
  double total = 0;
  for (auto& v : p) total += (v = sample::gamma(rng, concentration));
  for (auto& v : p) v /= total;
  return p;
}

Mat random_rotation_like_identity(random::Stream& rng, Eigen::Index n, double jitter) {
  if (n < 2 || jitter == 0.0) return Mat::Identity(n, n);
  if (n == 2) return rotation(rng.uniform(-jitter, jitter));
  Mat r = Mat::Identity(n, n);
  for (Eigen::Index step = 0; step < std::max<Eigen::Index>(1, n / 2); ++step) {
    const auto i = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(n)));
    auto j = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(n - 1)));
    if (j >= i) ++j;
    const double t = rng.uniform(-jitter, jitter) * pi / 180.0;
    Mat g = Mat::Identity(n, n);
    g(i, i) = std::cos(t);
    g(j, j) = std::cos(t);
    g(i, j) = -std::sin(t);
    g(j, i) = std::sin(t);
    r = g * r;
  }
  return r;
}

Mat jitter_covariance(random::Stream& rng, const Mat& cov, double rotation_jitter, double scale_jitter) {
  Mat out = cov;
  if (rotation_jitter > 0) {
    const Mat r = random_rotation_like_identity(rng, cov.rows(), rotation_jitter);
    out = r * out * r.transpose();
  }
  double scale = 1.0;
  if (scale_jitter != 0.0) scale = rng.uniform(std::max(1e-6, 1.0 - scale_jitter), 1.0 + scale_jitter);
  return project_psd(project_psd(out * scale));
}

Mat random_2d_cov(random::Stream& rng, double scale, double anisotropy_low, double anisotropy_high) {
  const double angle = rng.uniform(-180.0, 180.0);
  const double anisotropy = rng.uniform(anisotropy_low, anisotropy_high);
  Mat d = Mat::Zero(2, 2);
  d(0, 0) = scale * std::sqrt(anisotropy);
  d(1, 1) = scale / std::sqrt(anisotropy);
  const Mat r = rotation(angle);
  return project_psd(r * d * r.transpose());
}

std::vector<std::int64_t> positive_counts(random::Stream& rng, std::int64_t total, std::int64_t modes,
                                          double concentration) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(modes), 0);
  if (modes == 0) return counts;
  if (!(concentration > 0.0)) {
    const std::int64_t base = total / modes;
    for (std::int64_t m = 0; m < modes; ++m) counts[m] = base + (m < total - base * modes ? 1 : 0);
    return counts;
  }
  // One cell per mode, the rest multinomial with Dirichlet probabilities.
  const auto p = dirichlet(rng, static_cast<std::size_t>(modes), concentration);
  for (auto& c : counts) c = 1;
  for (std::int64_t k = 0; k < total - modes; ++k) {
    double u = rng.uniform();
    std::int64_t m = 0;
    while (m + 1 < modes && u >= p[m]) u -= p[m++];
    ++counts[m];
  }
  return counts;
}

/// Lower Cholesky factor of a covariance that project_psd made positive definite;
/// a tiny ridge rescues factors that rounding made indefinite.
Mat cholesky(const Mat& cov) {
  if (cov.size() == 0) return cov;
  Eigen::LLT<Mat> llt(cov);
  if (llt.info() == Eigen::Success) return llt.matrixL();
  Eigen::LLT<Mat> ridged(cov + 1e-10 * Mat::Identity(cov.rows(), cov.cols()));
  return ridged.matrixL();
}

// ------------------------------------------------------------ cell kernel
struct Component {
  std::int64_t patient = 0, label = 0, count = 0;
  std::string cell_type, mode_name;
  bool signal = false;
  Vec mean_clean;  // 2
  Mat cov_clean;   // 2×2
  Vec sub_mean;    // n_dim - 2
  Mat sub_cov;     // (n_dim - 2)²
};

/// Cell i of component c: clean = m + L z[0:2]; latent = [R clean, s + L_s z[2:]];
/// both written per cell; the mixing by Q is a separate kernel.
struct GmmLatentKernel {
  Kokkos::View<const std::int32_t*, MemSpace> cell_component;
  Matrix<const double> mean_clean;  // C × 2
  Matrix<const double> chol_clean;  // C × 4 (row-major 2×2)
  Matrix<const double> sub_mean;    // C × q
  Matrix<const double> chol_sub;    // C × q² (row-major lower factor)
  Matrix<double> clean;             // n × 2
  Matrix<double> latent;            // n × n_dim
  double r00, r01, r10, r11;        // global plane rotation
  std::int64_t q;                   // nuisance dimensions
  std::uint64_t seed;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    random::Stream s(seed, random::Purpose::simulate, cell_stream_base + static_cast<std::uint64_t>(i));
    const std::int32_t c = cell_component(i);
    const double z0 = s.normal(), z1 = s.normal();
    const double x0 = mean_clean(c, 0) + chol_clean(c, 0) * z0;
    const double x1 = mean_clean(c, 1) + chol_clean(c, 2) * z0 + chol_clean(c, 3) * z1;
    clean(i, 0) = x0;
    clean(i, 1) = x1;
    latent(i, 0) = r00 * x0 + r01 * x1;
    latent(i, 1) = r10 * x0 + r11 * x1;
    for (std::int64_t k = 0; k < q; ++k) latent(i, 2 + k) = s.normal();
    // In place: row k of L·z needs z[0..k] only, so go from the last row up.
    for (std::int64_t k = q - 1; k >= 0; --k) {
      double v = sub_mean(c, k);
      for (std::int64_t l = 0; l <= k; ++l) v += chol_sub(c, k * q + l) * latent(i, 2 + l);
      latent(i, 2 + k) = v;
    }
  }
};

/// x = latent · Qᵀ, one cell per thread.
struct GmmMixKernel {
  Matrix<const double> latent;
  Matrix<const double> mixing;  // Q, n_dim × n_dim
  Matrix<float> x;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const auto d = static_cast<std::int64_t>(mixing.extent(0));
    for (std::int64_t j = 0; j < d; ++j) {
      double v = 0;
      for (std::int64_t k = 0; k < d; ++k) v += latent(i, k) * mixing(j, k);
      x(i, j) = static_cast<float>(v);
    }
  }
};

void run_gmm_latent(const GmmLatentKernel& kernel, std::int64_t n) {
  Kokkos::parallel_for("kotml::data::simulate_gmm::latent",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(0, n), kernel);
}

void run_gmm_mix(const GmmMixKernel& kernel, std::int64_t n) {
  Kokkos::parallel_for("kotml::data::simulate_gmm::mix",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(0, n), kernel);
}

std::vector<double> flatten(const Mat& m) {
  std::vector<double> out(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) out[i * m.cols() + j] = m(i, j);
  return out;
}

}  // namespace

void GmmOptions::validate() const {
  if (n_dim < 2) throw Error::option("n-dim", "must be at least 2");
  if (n_patients <= 0 || n_patients % 2 != 0)
    throw Error::option("n-donors", "must be a positive even number (two equal classes)");
  if (n_samples < 2) throw Error::option("cells-per-donor", "must be at least 2");
  if (n_modes < 2) throw Error::option("n-modes", "must be at least 2 (two signal modes)");
  if (n_samples < n_modes)
    throw Error::option("cells-per-donor", "must be at least --n-modes so every mode has cells");
  if (!(signal_mass_ratio > 0.0 && signal_mass_ratio <= 1.0))
    throw Error::option("signal-mass-ratio", "must be in (0, 1]");
  const std::pair<const char*, double> non_negative[] = {
      {"signal-means-offset", signal_means_offset}, {"signal-means-jitter", signal_means_jitter},
      {"noise-means-offset", noise_means_offset},   {"noise-means-jitter", noise_means_jitter},
      {"signal-cov-scale", signal_cov_scale},       {"signal-anisotropy", signal_anisotropy},
      {"cov-rotation-jitter", cov_rotation_jitter}, {"cov-scale-jitter", cov_scale_jitter}};
  for (const auto& [name, value] : non_negative)
    if (!(value >= 0.0) || !std::isfinite(value)) throw Error::option(name, "must be zero or positive");
  if (noise_subspace_rank < 1) throw Error::option("noise-subspace-rank", "must be at least 1");
  if (!std::isfinite(signal_mean_shift) || !std::isfinite(global_rotation))
    throw Error::option("signal-mean-shift", "must be finite");
}

SimulatedData simulate_gmm(const GmmOptions& o) {
  o.validate();
  random::Stream rng(o.seed, random::Purpose::simulate, 0);
  const std::int64_t n_noise = o.n_modes - 2;
  const Eigen::Index q = o.n_dim - 2;

  // Signal archetypes and their covariances in the clean plane.
  Mat signal_means(4, 2);
  signal_means << o.signal_means_offset - o.signal_mean_shift, 0.0,  //
      o.signal_means_offset + o.signal_mean_shift, 0.0,              //
      0.0, o.signal_means_offset + o.signal_mean_shift,              //
      0.0, o.signal_means_offset - o.signal_mean_shift;
  const double major = o.signal_cov_scale * std::sqrt(o.signal_anisotropy);
  const double minor = o.signal_cov_scale / std::sqrt(o.signal_anisotropy);
  const double diagonals[4][2] = {
      {major * 0.9, minor * 4.0}, {major * 1.8, minor * 0.4}, {minor * 1.5, major * 1.6}, {minor * 2.5, major * 0.7}};
  const double angles[4] = {20.0, -5.0, -10.0 + rng.uniform(-10.0, 10.0), rng.uniform(-10.0, 10.0)};
  std::vector<Mat> signal_covs;
  for (int m = 0; m < 4; ++m) {
    Mat d = Mat::Zero(2, 2);
    d(0, 0) = diagonals[m][0];
    d(1, 1) = diagonals[m][1];
    const Mat r = rotation(angles[m]);
    signal_covs.push_back(project_psd(r * d * r.transpose()));
  }
  std::vector<Mat> noise_covs;
  for (std::int64_t m = 0; m < n_noise; ++m)
    noise_covs.push_back(random_2d_cov(rng, o.signal_cov_scale * 0.55, 1.0,
                                       std::max(1.5, o.signal_anisotropy / 2.0)));

  // Nuisance subspace: two full-rank covariances shared by the signal modes
  // (A-modes use the first, B-modes the second), sphere means and spiked
  // covariances for the noise modes.
  std::vector<Mat> signal_sub_covs;
  {
    const double scale = std::max(0.05, o.signal_cov_scale * 0.08);
    const double lo = std::max(1e-4, 0.1 * scale);
    const double hi = std::max(lo, 2.0 * scale - lo);
    for (int m = 0; m < 2; ++m) {
      if (q == 0) {
        signal_sub_covs.emplace_back(0, 0);
        continue;
      }
      const Mat basis = orthonormal_columns(rng, q, q);
      Vec values(q);
      for (Eigen::Index k = 0; k < q; ++k) values(k) = rng.uniform(lo, hi);
      signal_sub_covs.push_back(project_psd(basis * values.asDiagonal() * basis.transpose()));
    }
  }
  std::vector<Vec> noise_sub_means;
  for (std::int64_t m = 0; m < n_noise; ++m) {
    Vec dir(q);
    for (Eigen::Index k = 0; k < q; ++k) dir(k) = rng.normal();
    if (q > 0) dir /= dir.norm() + 1e-12;
    const double radius = rng.uniform(o.noise_means_offset * 0.9, o.noise_means_offset * 1.1);
    noise_sub_means.push_back(dir * radius);
  }
  std::vector<Mat> noise_sub_covs;
  {
    const double scale = std::max(0.1, o.signal_cov_scale * 0.45);
    const Eigen::Index rank = std::min<Eigen::Index>(std::max<Eigen::Index>(1, o.noise_subspace_rank), q);
    const double floor = std::max(1e-4, 0.15 * scale);
    const double budget = std::max(0.0, scale * static_cast<double>(q) - floor * static_cast<double>(q));
    for (std::int64_t m = 0; m < n_noise; ++m) {
      if (q == 0) {
        noise_sub_covs.emplace_back(0, 0);
        continue;
      }
      const Mat u = orthonormal_columns(rng, q, rank);
      const auto w = dirichlet(rng, static_cast<std::size_t>(rank), 2.0);
      Vec strengths(rank);
      for (Eigen::Index k = 0; k < rank; ++k) strengths(k) = budget * w[k];
      noise_sub_covs.push_back(
          project_psd(floor * Mat::Identity(q, q) + u * strengths.asDiagonal() * u.transpose()));
    }
  }
  const Mat mixing = haar_orthogonal(rng, o.n_dim);
  const Mat plane_rotation = rotation(o.global_rotation);

  // Per-patient components, in GGML-OT's order: class 0 patients, then class 1;
  // two signal modes, then the noise modes.
  std::vector<Component> components;
  const std::int64_t per_class = o.n_patients / 2;
  std::int64_t patient = 0;
  for (std::int64_t label = 0; label < 2; ++label) {
    for (std::int64_t k = 0; k < per_class; ++k, ++patient) {
      const int signal_index[2] = {label == 0 ? 0 : 1, label == 0 ? 2 : 3};
      std::vector<std::int64_t> signal_counts, noise_counts;
      if (n_noise == 0) {
        signal_counts = positive_counts(rng, o.n_samples, 2, o.signal_weight_concentration);
      } else {
        auto signal_total = static_cast<std::int64_t>(
            std::nearbyint(static_cast<double>(o.n_samples) * o.signal_mass_ratio));
        signal_total = std::min(std::max<std::int64_t>(signal_total, 2), o.n_samples - n_noise);
        signal_counts = positive_counts(rng, signal_total, 2, o.signal_weight_concentration);
        noise_counts = positive_counts(rng, o.n_samples - signal_counts[0] - signal_counts[1], n_noise,
                                       o.noise_weight_concentration);
      }
      for (int s = 0; s < 2; ++s) {
        const int idx = signal_index[s];
        Component c;
        c.patient = patient;
        c.label = label;
        c.count = signal_counts[s];
        c.signal = true;
        c.mode_name = idx < 2 ? "A" : "B";
        c.cell_type = c.mode_name;
        c.mean_clean = signal_means.row(idx).transpose();
        if (o.signal_means_jitter != 0.0) c.mean_clean(idx < 2 ? 0 : 1) += rng.normal(0.0, o.signal_means_jitter);
        c.cov_clean = jitter_covariance(rng, signal_covs[idx], o.cov_rotation_jitter, o.cov_scale_jitter);
        c.sub_mean = Vec::Zero(q);
        if (o.signal_means_jitter != 0.0)
          for (Eigen::Index d = 0; d < q; ++d) c.sub_mean(d) += rng.normal(0.0, o.signal_means_jitter);
        c.sub_cov = jitter_covariance(rng, signal_sub_covs[idx < 2 ? 0 : 1], o.cov_rotation_jitter,
                                      o.cov_scale_jitter);
        components.push_back(std::move(c));
      }
      for (std::int64_t m = 0; m < n_noise; ++m) {
        Component c;
        c.patient = patient;
        c.label = label;
        c.count = noise_counts[m];
        c.mode_name = "Noise";
        c.cell_type = "noise_" + std::to_string(m);
        c.mean_clean = Vec(2);
        c.mean_clean(0) = rng.normal(0.0, o.noise_means_jitter);
        c.mean_clean(1) = rng.normal(0.0, o.noise_means_jitter);
        c.cov_clean = jitter_covariance(rng, noise_covs[m], o.cov_rotation_jitter, o.cov_scale_jitter);
        c.sub_mean = noise_sub_means[m];
        if (o.noise_means_jitter != 0.0)
          for (Eigen::Index d = 0; d < q; ++d) c.sub_mean(d) += rng.normal(0.0, o.noise_means_jitter);
        c.sub_cov = jitter_covariance(rng, noise_sub_covs[m], o.cov_rotation_jitter, o.cov_scale_jitter);
        components.push_back(std::move(c));
      }
    }
  }

  // Component tables for the kernel, and the cells' obs columns.
  const auto n_components = static_cast<std::int64_t>(components.size());
  const std::int64_t qq = std::max<std::int64_t>(q, 1);
  std::vector<double> mean_clean(n_components * 2), chol_clean(n_components * 4),
      sub_mean(n_components * qq, 0.0), chol_sub(n_components * qq * qq, 0.0);
  std::vector<std::int32_t> cell_component;
  SimulatedData data;
  data.kind = "gmm";
  std::vector<std::string> sample, group, cell_type, mode_name, signal_noise;
  std::vector<double> label_column;
  for (std::int64_t c = 0; c < n_components; ++c) {
    const auto& comp = components[c];
    const Mat l = cholesky(comp.cov_clean);
    mean_clean[c * 2] = comp.mean_clean(0);
    mean_clean[c * 2 + 1] = comp.mean_clean(1);
    chol_clean[c * 4 + 0] = l(0, 0);
    chol_clean[c * 4 + 2] = l(1, 0);
    chol_clean[c * 4 + 3] = l(1, 1);
    const Mat ls = cholesky(comp.sub_cov);
    for (Eigen::Index k = 0; k < q; ++k) {
      sub_mean[c * qq + k] = comp.sub_mean(k);
      for (Eigen::Index j = 0; j <= k; ++j) chol_sub[c * qq * qq + k * qq + j] = ls(k, j);
    }
    for (std::int64_t i = 0; i < comp.count; ++i) {
      cell_component.push_back(static_cast<std::int32_t>(c));
      sample.push_back("patient_" + std::to_string(comp.patient));
      group.push_back("class_" + std::to_string(comp.label));
      cell_type.push_back(comp.cell_type);
      mode_name.push_back(comp.mode_name);
      signal_noise.push_back(comp.signal ? "signal" : "noise");
      label_column.push_back(static_cast<double>(comp.label));
    }
  }
  const auto n_cells = static_cast<std::int64_t>(cell_component.size());

  GmmLatentKernel latent_kernel;
  latent_kernel.cell_component = detail::to_device("gmm cell component", cell_component);
  latent_kernel.mean_clean = detail::to_device("gmm mean clean", mean_clean, n_components, 2);
  latent_kernel.chol_clean = detail::to_device("gmm chol clean", chol_clean, n_components, 4);
  latent_kernel.sub_mean = detail::to_device("gmm sub mean", sub_mean, n_components, qq);
  latent_kernel.chol_sub = detail::to_device("gmm chol sub", chol_sub, n_components, qq * qq);
  Matrix<double> clean(no_init("gmm clean"), n_cells, 2);
  Matrix<double> latent(no_init("gmm latent"), n_cells, o.n_dim);
  latent_kernel.clean = clean;
  latent_kernel.latent = latent;
  latent_kernel.r00 = plane_rotation(0, 0);
  latent_kernel.r01 = plane_rotation(0, 1);
  latent_kernel.r10 = plane_rotation(1, 0);
  latent_kernel.r11 = plane_rotation(1, 1);
  latent_kernel.q = q;
  latent_kernel.seed = o.seed;
  run_gmm_latent(latent_kernel, n_cells);

  GmmMixKernel mix_kernel;
  mix_kernel.latent = latent;
  mix_kernel.mixing = detail::to_device("gmm mixing", flatten(mixing), o.n_dim, o.n_dim);
  Matrix<float> x(no_init("gmm X"), n_cells, o.n_dim);
  mix_kernel.x = x;
  run_gmm_mix(mix_kernel, n_cells);

  data.n_obs = n_cells;
  data.n_vars = o.n_dim;
  data.x = detail::to_host(x);
  for (std::int64_t j = 0; j < o.n_dim; ++j) data.var_names.push_back("gene_" + std::to_string(j));
  data.obs.emplace_back("sample", std::move(sample));
  data.obs.emplace_back("patient_group", std::move(group));
  data.obs.emplace_back("cell_type", std::move(cell_type));
  data.obs.emplace_back("mode_name", std::move(mode_name));
  data.obs.emplace_back("signal_noise", std::move(signal_noise));
  data.obs_numeric.emplace_back("label", std::move(label_column));

  const auto clean_host = detail::to_host(clean);
  const auto latent_host = detail::to_host(latent);
  std::vector<double> rotated(static_cast<std::size_t>(n_cells * 2));
  for (std::int64_t i = 0; i < n_cells; ++i) {
    rotated[i * 2] = latent_host[i * o.n_dim];
    rotated[i * 2 + 1] = latent_host[i * o.n_dim + 1];
  }
  data.obsm.push_back({"X_clean", clean_host, {n_cells, 2}});
  data.obsm.push_back({"X_rotated", rotated, {n_cells, 2}});

  // Ground truth: the mixing, the aggregate plane mixture, and each patient's
  // exact mixture in observation space.
  data.uns.push_back({"Q_mixing", flatten(mixing), {o.n_dim, o.n_dim}});
  data.uns.push_back({"R_rotation", flatten(plane_rotation), {2, 2}});
  {
    const std::int64_t m = o.n_modes + 2;  // 4 signal archetypes + noise modes
    std::vector<double> means2(m * 2, 0.0), covs2, means_rot, covs_rot;
    for (int a = 0; a < 4; ++a) {
      means2[a * 2] = signal_means(a, 0);
      means2[a * 2 + 1] = signal_means(a, 1);
    }
    std::vector<Mat> all_covs(signal_covs);
    all_covs.insert(all_covs.end(), noise_covs.begin(), noise_covs.end());
    for (const auto& c : all_covs) {
      const auto flat = flatten(c);
      covs2.insert(covs2.end(), flat.begin(), flat.end());
      const auto rot = flatten(project_psd(plane_rotation * c * plane_rotation.transpose()));
      covs_rot.insert(covs_rot.end(), rot.begin(), rot.end());
    }
    for (std::int64_t a = 0; a < m; ++a) {
      Vec v(2);
      v << means2[a * 2], means2[a * 2 + 1];
      const Vec r = plane_rotation * v;
      means_rot.push_back(r(0));
      means_rot.push_back(r(1));
    }
    data.uns.push_back({"agg_means_2d", means2, {m, 2}});
    data.uns.push_back({"agg_covs_2d", covs2, {m, 2, 2}});
    data.uns.push_back({"agg_means_rot", means_rot, {m, 2}});
    data.uns.push_back({"agg_covs_rot", covs_rot, {m, 2, 2}});
  }
  {
    const std::int64_t d = o.n_dim;
    std::vector<double> means, covs, weights;
    for (const auto& comp : components) {
      Vec padded_mean = Vec::Zero(d);
      padded_mean.head(2) = plane_rotation * comp.mean_clean;
      if (q > 0) padded_mean.tail(q) = comp.sub_mean;
      const Vec mean = mixing * padded_mean;
      Mat padded_cov = Mat::Zero(d, d);
      padded_cov.topLeftCorner(2, 2) = project_psd(plane_rotation * comp.cov_clean * plane_rotation.transpose());
      if (q > 0) padded_cov.bottomRightCorner(q, q) = comp.sub_cov;
      const auto cov = flatten(project_psd(mixing * padded_cov * mixing.transpose()));
      for (Eigen::Index k = 0; k < d; ++k) means.push_back(mean(k));
      covs.insert(covs.end(), cov.begin(), cov.end());
      weights.push_back(static_cast<double>(comp.count) / static_cast<double>(o.n_samples));
    }
    data.uns.push_back({"gmm_means", means, {o.n_patients, o.n_modes, d}});
    data.uns.push_back({"gmm_covs", covs, {o.n_patients, o.n_modes, d, d}});
    data.uns.push_back({"gmm_weights", weights, {o.n_patients, o.n_modes}});
  }
  data.uns_scalars.emplace_back("n_noise", static_cast<double>(n_noise));
  data.uns_scalars.emplace_back("n_modes", static_cast<double>(o.n_modes));
  data.uns_strings.emplace_back("simulation/kind", "gmm");
  data.uns_scalars.emplace_back("simulation/seed", static_cast<double>(o.seed));
  data.uns_scalars.emplace_back("simulation/signal_mean_shift", o.signal_mean_shift);
  return data;
}

}  // namespace kotml::data
