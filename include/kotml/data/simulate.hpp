#pragma once
// Synthetic cohorts: the demo's built-in data and the test beds of the learner.
//
//  toy2d  GGML-OT's 2-D benchmark (synth_distributions): 3 classes × 10 donors,
//         a class mode whose x-position is the only class signal, two shared
//         modes, nuisance offsets along y.
//  gmm    GGML-OT's two-class Gaussian mixture (synth_gmm): signal in a latent 2-D
//         plane, structured nuisance subspace, hidden by a random rotation.
//  scrna  negative-binomial counts that look like single-cell RNA, with a class
//         effect planted in a few genes of a few cell types.
//
// The distributions follow GGML-OT's generators; the random numbers are ours:
// parameters come from random::Stream(seed, Purpose::simulate, 0) drawn in a fixed
// order on the host, and cell i's values from Stream(seed, Purpose::simulate,
// cell_stream_base + i) inside Kokkos kernels, so the output depends on the seed
// only (not on threads or ranks).
//
// obs columns are named as in GGML-OT's synth_anndata: `sample` (donor),
// `patient_group` (donor class), `cell_type`.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kotml::data {

class TableSource;

/// Stream index of cell 0 (parameters use index 0).
inline constexpr std::uint64_t cell_stream_base = 1;

/// A simulated AnnData: X (dense, or CSR counts for scrna), obs/var columns, obsm
/// and uns arrays. write_h5ad writes it with the io writer.
struct SimulatedData {
  struct Array {
    std::string name;
    std::vector<double> values;       // row-major
    std::vector<std::int64_t> shape;  // {n} or {rows, cols}
  };
  std::string kind;
  std::int64_t n_obs = 0;
  std::int64_t n_vars = 0;

  bool sparse = false;
  std::vector<float> x;  // dense n_obs × n_vars (toy2d, gmm)
  std::vector<std::int64_t> indptr;   // CSR (scrna): n_obs + 1
  std::vector<std::int32_t> indices;  // column of each stored value, ascending per row (io::SparseIndex)
  std::vector<float> values;          // stored values (no explicit zeros)

  std::vector<std::string> var_names;
  /// String columns, written as categoricals with sorted categories; the first
  /// three are always sample, patient_group, cell_type.
  std::vector<std::pair<std::string, std::vector<std::string>>> obs;
  std::vector<std::pair<std::string, std::vector<double>>> obs_numeric;
  std::vector<std::pair<std::string, std::vector<double>>> var_numeric;
  std::vector<Array> obsm;
  std::vector<Array> uns;
  std::vector<std::pair<std::string, double>> uns_scalars;
  std::vector<std::pair<std::string, std::string>> uns_strings;

  const std::vector<std::string>& obs_column(const std::string& name) const;
  const Array& uns_array(const std::string& name) const;
  const Array& obsm_array(const std::string& name) const;
  /// Dense value of cell i, feature j (either storage).
  float value(std::int64_t i, std::int64_t j) const;
  /// An in-memory cell source over X (densified for scrna), obs and obsm, to
  /// build a cohort without a file.
  TableSource table() const;
};

struct Toy2dOptions {
  std::int64_t cells_per_mode = 100;  // GGML-OT distribution_size
  double noise_scale = 10.0;          // y multiplier (from_synth default; synth_anndata uses 100)
  std::int64_t noise_dims = 1;        // number of y columns
  bool varying_size = false;          // n ~ U{20, ..., cells_per_mode - 1} per donor
  std::vector<double> class_means = {5.0, 10.0, 15.0};
  std::vector<double> offsets = {1.5, 4.5, 7.5, 10.5, 13.5, 16.5, 19.5, 22.5, 25.5, 28.5};
  std::uint64_t seed = 42;
  void validate() const;
};

struct GmmOptions {
  std::int64_t n_dim = 10;
  std::int64_t n_patients = 6;     // even; half per class
  std::int64_t n_samples = 250;    // cells per patient
  double signal_mass_ratio = 0.2;
  std::int64_t n_modes = 10;       // 2 signal + n_modes-2 noise
  double signal_means_offset = 12.0;
  double signal_means_jitter = 0.75;
  double noise_means_offset = 3.0;
  double noise_means_jitter = 0.75;
  std::int64_t noise_subspace_rank = 2;
  double signal_weight_concentration = 0.0;  // ≤ 0: deterministic equal split
  double noise_weight_concentration = 0.0;   // ≤ 0: deterministic equal split
  double signal_mean_shift = 1.0;
  double signal_cov_scale = 1.2;
  double signal_anisotropy = 12.0;
  double cov_rotation_jitter = 10.0;  // degrees
  double cov_scale_jitter = 0.15;
  double global_rotation = 30.0;      // degrees
  std::uint64_t seed = 42;
  void validate() const;
};

struct ScrnaOptions {
  std::int64_t n_classes = 2;
  std::int64_t donors_per_class = 10;
  std::int64_t cells_per_donor = 500;
  std::int64_t n_genes = 1000;
  std::int64_t n_types = 6;
  double markers_fraction = 0.05;      // genes up-regulated per type programme
  double marker_log_fold = 2.0;        // mean log-fold of a marker in its type
  double baseline_log_sd = 1.2;        // spread of gene baseline log-rates
  double library_size = 2000.0;        // median total counts per cell
  double library_log_sd = 0.35;        // log-normal spread of library sizes
  double nb_dispersion = 0.2;          // phi: variance = mu + phi mu^2
  double donor_log_sd = 0.1;           // donor-level gene noise (log scale)
  double donor_concentration = 50.0;   // Dirichlet concentration of donor type proportions
  std::int64_t n_planted_genes = 10;
  std::int64_t n_planted_types = 2;
  double planted_log_fold = 1.0;       // class effect of the last class (log scale)
  double proportion_shift = 0.7;       // log-shift of one type's proportion per class
  std::uint64_t seed = 42;
  void validate() const;
};

SimulatedData simulate_toy2d(const Toy2dOptions& options);
SimulatedData simulate_gmm(const GmmOptions& options);
SimulatedData simulate_scrna(const ScrnaOptions& options);

/// Writes the simulated data as an .h5ad (atomically).
void write_h5ad(const std::string& path, const SimulatedData& data);

}  // namespace kotml::data
