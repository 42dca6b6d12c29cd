// GGML-OT's 2-D benchmark (ggml_ot.data.synthetic.synth_distributions) with our
// own random streams. Per class c (mean m_c) and nuisance offset o, one donor of
// 3n cells: a class mode x ~ N(10 + m_c, 1.5), y_j ~ U(7.5 + o, 12.5 + o), and two
// shared modes x ~ N(sx, 1.5), y_j ~ N(sy, 1.5) at (0, 0) and (40, 50); then
// x *= 5/4 and y *= noise_scale. Only the class mode's x carries the class.

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"
#include "kotml/data/simulate.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

using detail::to_device;

constexpr double mode_sd = 1.5;
constexpr double x_scale = 5.0 / 4.0;

/// One cell per thread: its values come from its own stream only.
struct Toy2dCellKernel {
  Kokkos::View<const std::int32_t*, MemSpace> cell_donor;
  Kokkos::View<const std::int32_t*, MemSpace> cell_mode;
  Kokkos::View<const double*, MemSpace> donor_class_x;  // 10 + m_c
  Kokkos::View<const double*, MemSpace> donor_offset;   // o
  Matrix<float> x;
  std::uint64_t seed;
  double noise_scale;
  std::int64_t noise_dims;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    random::Stream s(seed, random::Purpose::simulate, cell_stream_base + static_cast<std::uint64_t>(i));
    const std::int32_t donor = cell_donor(i);
    const std::int32_t mode = cell_mode(i);
    if (mode == 0) {
      const double o = donor_offset(donor);
      x(i, 0) = static_cast<float>(x_scale * s.normal(donor_class_x(donor), mode_sd));
      for (std::int64_t j = 0; j < noise_dims; ++j)
        x(i, 1 + j) = static_cast<float>(noise_scale * s.uniform(7.5 + o, 12.5 + o));
    } else {
      // Shared modes at (0, 0) and (40, 50), as GGML-OT's shared_means_x/_y.
      const double sx = mode == 1 ? 0.0 : 40.0;
      const double sy = mode == 1 ? 0.0 : 50.0;
      x(i, 0) = static_cast<float>(x_scale * s.normal(sx, mode_sd));
      for (std::int64_t j = 0; j < noise_dims; ++j)
        x(i, 1 + j) = static_cast<float>(noise_scale * s.normal(sy, mode_sd));
    }
  }
};

void run_toy2d_kernel(const Toy2dCellKernel& kernel, std::int64_t n_cells) {
  Kokkos::parallel_for("kotml::data::simulate_toy2d",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(0, n_cells),
                       kernel);
}

}  // namespace

void Toy2dOptions::validate() const {
  if (cells_per_mode < 1) throw Error::option("cells-per-mode", "must be at least 1");
  if (varying_size && cells_per_mode <= 20)
    throw Error::option("cells-per-mode",
                        "must exceed 20 with --varying-size (sizes are drawn from 20 to n - 1)");
  if (!(noise_scale > 0.0)) throw Error::option("noise-scale", "must be positive");
  if (noise_dims < 1) throw Error::option("noise-dims", "must be at least 1");
  if (class_means.size() < 2) throw Error::option("class-means", "needs at least two classes");
  if (offsets.empty()) throw Error::option("offsets", "needs at least one donor per class");
}

SimulatedData simulate_toy2d(const Toy2dOptions& options) {
  options.validate();
  const auto n_classes = static_cast<std::int64_t>(options.class_means.size());
  const auto per_class = static_cast<std::int64_t>(options.offsets.size());
  const std::int64_t n_donors = n_classes * per_class;

  // Donor sizes first, from the parameter stream, in GGML-OT's donor order.
  random::Stream parameters(options.seed, random::Purpose::simulate, 0);
  std::vector<std::int64_t> size(n_donors, options.cells_per_mode);
  if (options.varying_size)
    for (auto& n : size)
      n = 20 + static_cast<std::int64_t>(
                   parameters.below(static_cast<std::uint64_t>(options.cells_per_mode - 20)));

  SimulatedData data;
  data.kind = "toy2d";
  std::vector<std::int32_t> cell_donor, cell_mode;
  std::vector<double> donor_class_x(n_donors), donor_offset(n_donors);
  std::vector<std::string> sample, group, cell_type;
  for (std::int64_t c = 0; c < n_classes; ++c) {
    for (std::int64_t p = 0; p < per_class; ++p) {
      const std::int64_t d = c * per_class + p;
      donor_class_x[d] = 10.0 + options.class_means[c];
      donor_offset[d] = options.offsets[p];
      const std::string donor_name = "sample_" + std::to_string(c) + "_" + std::to_string(p);
      for (std::int32_t mode = 0; mode < 3; ++mode) {
        for (std::int64_t k = 0; k < size[d]; ++k) {
          cell_donor.push_back(static_cast<std::int32_t>(d));
          cell_mode.push_back(mode);
          sample.push_back(donor_name);
          group.push_back("group_" + std::to_string(c));
          cell_type.push_back("mode_" + std::to_string(mode));
        }
      }
    }
  }
  const auto n_cells = static_cast<std::int64_t>(cell_donor.size());
  const std::int64_t n_features = 1 + options.noise_dims;

  Toy2dCellKernel kernel;
  kernel.cell_donor = to_device("toy2d cell donor", cell_donor);
  kernel.cell_mode = to_device("toy2d cell mode", cell_mode);
  kernel.donor_class_x = to_device("toy2d donor class x", donor_class_x);
  kernel.donor_offset = to_device("toy2d donor offset", donor_offset);
  kernel.x = Matrix<float>(no_init("toy2d X"), n_cells, n_features);
  kernel.seed = options.seed;
  kernel.noise_scale = options.noise_scale;
  kernel.noise_dims = options.noise_dims;
  run_toy2d_kernel(kernel, n_cells);

  data.n_obs = n_cells;
  data.n_vars = n_features;
  data.x = detail::to_host(kernel.x);

  for (std::int64_t j = 0; j < n_features; ++j) data.var_names.push_back("gene_" + std::to_string(j));
  data.obs.emplace_back("sample", std::move(sample));
  data.obs.emplace_back("patient_group", std::move(group));
  data.obs.emplace_back("cell_type", std::move(cell_type));
  data.uns_strings.emplace_back("simulation/kind", "toy2d");
  data.uns_scalars.emplace_back("simulation/seed", static_cast<double>(options.seed));
  data.uns_scalars.emplace_back("simulation/noise_scale", options.noise_scale);
  data.uns_scalars.emplace_back("simulation/cells_per_mode", static_cast<double>(options.cells_per_mode));
  data.uns.push_back({"simulation/class_means", options.class_means,
                      {static_cast<std::int64_t>(options.class_means.size())}});
  data.uns.push_back({"simulation/offsets", options.offsets,
                      {static_cast<std::int64_t>(options.offsets.size())}});
  return data;
}

}  // namespace kotml::data
