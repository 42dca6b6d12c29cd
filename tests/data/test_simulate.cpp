// The synthetic cohorts: the distributions GGML-OT's generators specify, where the
// class signal sits, the negative-binomial law of scrna counts, determinism, and
// the .h5ad files they write.

#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/data/simulate.hpp"
#include "kotml/io/anndata.hpp"
#include "support/cli_runner.hpp"

using namespace kotml::data;

namespace {

struct Stats {
  double n = 0, mean = 0, sd = 0, min = 1e300, max = -1e300;
};

template <class Pick>
Stats stats_of(const SimulatedData& d, std::int64_t feature, Pick pick) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < d.n_obs; ++i)
    if (pick(i)) v.push_back(d.value(i, feature));
  Stats s;
  s.n = static_cast<double>(v.size());
  for (const double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= s.n;
  for (const double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(s.sd / (s.n - 1));
  return s;
}

}  // namespace

// ------------------------------------------------------------------ toy2d
TEST(Toy2d, LayoutAndNamesAsGgmlSynthAnndata) {
  const auto d = simulate_toy2d(Toy2dOptions{});
  EXPECT_EQ(d.n_obs, 3 * 10 * 300);
  EXPECT_EQ(d.n_vars, 2);
  EXPECT_EQ(d.var_names, (std::vector<std::string>{"gene_0", "gene_1"}));
  const auto& sample = d.obs_column("sample");
  const auto& group = d.obs_column("patient_group");
  const auto& type = d.obs_column("cell_type");
  EXPECT_EQ(std::set<std::string>(sample.begin(), sample.end()).size(), 30u);
  // Donor (c, p) holds 100 cells of each mode, class mode first.
  const std::int64_t first_of_1_3 = (1 * 10 + 3) * 300;
  EXPECT_EQ(sample[first_of_1_3], "sample_1_3");
  EXPECT_EQ(group[first_of_1_3], "group_1");
  EXPECT_EQ(type[first_of_1_3], "mode_0");
  EXPECT_EQ(type[first_of_1_3 + 100], "mode_1");
  EXPECT_EQ(type[first_of_1_3 + 299], "mode_2");
}

TEST(Toy2d, ClassSignalOnlyInTheClassModeX) {
  Toy2dOptions o;
  const auto d = simulate_toy2d(o);
  const auto& group = d.obs_column("patient_group");
  const auto& type = d.obs_column("cell_type");
  for (int c = 0; c < 3; ++c) {
    const std::string g = "group_" + std::to_string(c);
    // Class mode: x ~ 1.25 · N(10 + m_c, 1.5) -> mean 18.75 / 25 / 31.25, sd 1.875.
    const auto x = stats_of(d, 0, [&](std::int64_t i) { return group[i] == g && type[i] == "mode_0"; });
    EXPECT_EQ(x.n, 1000);
    EXPECT_NEAR(x.mean, 1.25 * (10 + o.class_means[c]), 5 * 1.875 / std::sqrt(x.n));
    EXPECT_NEAR(x.sd, 1.875, 5 * 1.875 / std::sqrt(2 * (x.n - 1)));
    // Shared modes do not depend on the class: x ~ 1.25 · N(0 | 40, 1.5), y ~ 10 · N(0 | 50, 1.5).
    const auto s1x = stats_of(d, 0, [&](std::int64_t i) { return group[i] == g && type[i] == "mode_1"; });
    const auto s2x = stats_of(d, 0, [&](std::int64_t i) { return group[i] == g && type[i] == "mode_2"; });
    const auto s2y = stats_of(d, 1, [&](std::int64_t i) { return group[i] == g && type[i] == "mode_2"; });
    EXPECT_NEAR(s1x.mean, 0.0, 5 * 1.875 / std::sqrt(s1x.n));
    EXPECT_NEAR(s2x.mean, 50.0, 5 * 1.875 / std::sqrt(s2x.n));
    EXPECT_NEAR(s2y.mean, 500.0, 5 * 15.0 / std::sqrt(s2y.n));
    EXPECT_NEAR(s2y.sd, 15.0, 1.0);
  }
  // Class-mode y is uniform on noise_scale · [7.5 + o, 12.5 + o] for the donor's offset.
  const auto& sample = d.obs_column("sample");
  for (int p = 0; p < 10; ++p) {
    const double o_p = o.offsets[p];
    const std::string donor = "sample_2_" + std::to_string(p);
    const auto y = stats_of(d, 1, [&](std::int64_t i) { return sample[i] == donor && type[i] == "mode_0"; });
    EXPECT_GE(y.min, 10 * (7.5 + o_p));
    EXPECT_LE(y.max, 10 * (12.5 + o_p));
    EXPECT_NEAR(y.mean, 10 * (10 + o_p), 5 * 10 * 5 / std::sqrt(12 * y.n));
    EXPECT_NEAR(y.sd, 10 * 5 / std::sqrt(12.0), 2.5);
  }
}

TEST(Toy2d, DeterministicInTheSeedAndVaryingSizesInRange) {
  Toy2dOptions o;
  o.seed = 9;
  o.noise_dims = 3;
  o.varying_size = true;
  const auto a = simulate_toy2d(o);
  const auto b = simulate_toy2d(o);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.obs_column("sample"), b.obs_column("sample"));
  EXPECT_EQ(a.n_vars, 4);
  o.seed = 10;
  const auto c = simulate_toy2d(o);
  EXPECT_NE(a.x.size() == c.x.size() && a.x == c.x, true);
  std::map<std::string, std::int64_t> size;
  for (const auto& s : a.obs_column("sample")) ++size[s];
  std::set<std::int64_t> distinct;
  for (const auto& [donor, n] : size) {
    EXPECT_EQ(n % 3, 0);
    EXPECT_GE(n / 3, 20);
    EXPECT_LE(n / 3, 99);
    distinct.insert(n);
  }
  EXPECT_GT(distinct.size(), 10u);
}

// ------------------------------------------------------------------ gmm
TEST(Gmm, GeometryMixingAndPerDonorMixtures) {
  GmmOptions o;
  const auto d = simulate_gmm(o);
  ASSERT_EQ(d.n_obs, 6 * 250);
  ASSERT_EQ(d.n_vars, 10);
  const auto& q_array = d.uns_array("Q_mixing");
  const Eigen::Map<const Eigen::Matrix<double, 10, 10, Eigen::RowMajor>> q(q_array.values.data());
  EXPECT_LT((q.transpose() * q - Eigen::Matrix<double, 10, 10>::Identity()).norm(), 1e-12);

  // Archetypes (r - s, 0), (r + s, 0), (0, r + s), (0, r - s) with r = 12, s = 1.
  const auto& archetypes = d.uns_array("agg_means_2d");
  ASSERT_EQ(archetypes.shape, (std::vector<std::int64_t>{12, 2}));
  const double expected[4][2] = {{11, 0}, {13, 0}, {0, 13}, {0, 11}};
  for (int a = 0; a < 4; ++a) {
    EXPECT_EQ(archetypes.values[a * 2], expected[a][0]);
    EXPECT_EQ(archetypes.values[a * 2 + 1], expected[a][1]);
  }

  // x = [x_rot, nuisance] Qᵀ: the first two mixed-back coordinates are X_rotated,
  // and X_rotated = X_clean Rᵀ with R the 30° rotation.
  const auto& rotated = d.obsm_array("X_rotated").values;
  const auto& clean = d.obsm_array("X_clean").values;
  const double t = 30.0 * M_PI / 180.0;
  double worst_mix = 0, worst_rot = 0;
  for (std::int64_t i = 0; i < d.n_obs; ++i) {
    for (int c = 0; c < 2; ++c) {
      double v = 0;
      for (int j = 0; j < 10; ++j) v += d.value(i, j) * q(j, c);
      worst_mix = std::max(worst_mix, std::fabs(v - rotated[i * 2 + c]) / (1 + std::fabs(v)));
    }
    const double rx = std::cos(t) * clean[i * 2] - std::sin(t) * clean[i * 2 + 1];
    const double ry = std::sin(t) * clean[i * 2] + std::cos(t) * clean[i * 2 + 1];
    worst_rot = std::max({worst_rot, std::fabs(rx - rotated[i * 2]), std::fabs(ry - rotated[i * 2 + 1])});
  }
  EXPECT_LT(worst_mix, 1e-5);
  EXPECT_LT(worst_rot, 1e-12);

  // Cells per donor and mode: 20% in the two signal modes, the rest even.
  const auto& sample = d.obs_column("sample");
  const auto& type = d.obs_column("cell_type");
  std::map<std::pair<std::string, std::string>, int> count;
  for (std::int64_t i = 0; i < d.n_obs; ++i) ++count[{sample[i], type[i]}];
  EXPECT_EQ((count[{"patient_0", "A"}]), 25);
  EXPECT_EQ((count[{"patient_5", "B"}]), 25);
  EXPECT_EQ((count[{"patient_3", "noise_7"}]), 25);

  // Each donor-mode's cells scatter around that donor's exact mixture component.
  const auto& means = d.uns_array("gmm_means").values;
  const auto& covs = d.uns_array("gmm_covs").values;
  const auto& weights = d.uns_array("gmm_weights").values;
  std::int64_t start = 0;
  for (std::int64_t component = 0; component < 6 * 10; ++component) {
    const auto n = static_cast<std::int64_t>(std::llround(weights[component] * 250));
    for (int j = 0; j < 10; ++j) {
      double m = 0;
      for (std::int64_t i = start; i < start + n; ++i) m += d.value(i, j);
      m /= static_cast<double>(n);
      const double sd = std::sqrt(covs[component * 100 + j * 10 + j] / static_cast<double>(n));
      EXPECT_NEAR(m, means[component * 10 + j], 5 * sd + 1e-4) << "component " << component << " dim " << j;
    }
    start += n;
  }
  EXPECT_EQ(start, d.n_obs);

  // Class signal: class 0's A mode sits at x ≈ 11, class 1's at x ≈ 13 in the
  // clean plane (before jitter of sd 0.75 per donor).
  for (std::int64_t patient = 0; patient < 6; ++patient) {
    double mx = 0;
    int n = 0;
    for (std::int64_t i = 0; i < d.n_obs; ++i)
      if (sample[i] == "patient_" + std::to_string(patient) && type[i] == "A") {
        mx += clean[i * 2];
        ++n;
      }
    mx /= n;
    EXPECT_NEAR(mx, patient < 3 ? 11.0 : 13.0, 5 * 0.75) << patient;
  }
}

TEST(Gmm, DeterministicAndValidated) {
  GmmOptions o;
  o.n_dim = 5;
  o.n_patients = 4;
  o.n_samples = 60;
  o.signal_weight_concentration = 2.0;
  o.noise_weight_concentration = 0.5;
  const auto a = simulate_gmm(o), b = simulate_gmm(o);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.n_obs, 4 * 60);
  o.n_patients = 3;
  EXPECT_THROW(simulate_gmm(o), kotml::Error);
}

// ------------------------------------------------------------------ scrna
TEST(Scrna, CountsAreNegativeBinomialAroundTheModelMean) {
  // One type, fixed library, no donor noise, no programmes: every cell draws gene
  // g from NB(L · softmax(baseline)_g, phi).
  ScrnaOptions o;
  o.n_types = 1;
  o.n_planted_types = 0;
  o.n_planted_genes = 0;
  o.markers_fraction = 0.0;
  o.library_log_sd = 0.0;
  o.donor_log_sd = 0.0;
  o.donors_per_class = 4;
  o.cells_per_donor = 500;
  o.n_genes = 60;
  o.library_size = 3000;
  o.nb_dispersion = 0.3;
  const auto d = simulate_scrna(o);
  ASSERT_TRUE(d.sparse);
  const auto& baseline = d.var_numeric[1].second;
  ASSERT_EQ(d.var_numeric[1].first, "baseline_log_rate");
  EXPECT_TRUE(d.uns_array("type_markers").values.empty());
  double total = 0;
  for (const double b : baseline) total += std::exp(b);
  int checked = 0;
  for (std::int64_t g = 0; g < d.n_vars; ++g) {
    const double mu = o.library_size * std::exp(baseline[g]) / total;
    const double variance = mu + o.nb_dispersion * mu * mu;
    const auto s = stats_of(d, g, [](std::int64_t) { return true; });
    EXPECT_NEAR(s.mean, mu, 5 * std::sqrt(variance / s.n)) << "gene " << g;
    if (mu < 2.0) continue;
    EXPECT_NEAR(s.sd * s.sd / variance, 1.0, 0.15) << "gene " << g << " mean " << mu;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(Scrna, PlantedGenesCarryTheClassEffectAndCompositionShifts) {
  ScrnaOptions o;
  o.donors_per_class = 6;
  o.cells_per_donor = 400;
  o.n_genes = 300;
  o.n_types = 4;
  o.n_planted_genes = 8;
  o.n_planted_types = 2;
  o.planted_log_fold = 1.2;
  const auto d = simulate_scrna(o);
  const auto& planted = d.uns_array("planted_genes").values;
  const auto& planted_types = d.uns_array("planted_types").values;
  ASSERT_EQ(planted.size(), 8u);
  double flagged = 0;
  for (const double f : d.var_numeric[0].second) flagged += f;
  EXPECT_EQ(flagged, 8.0);

  // Mean log-normalised expression per (class, planted-or-not type, gene).
  const auto& group = d.obs_column("patient_group");
  const auto& type = d.obs_column("cell_type");
  std::set<std::string> planted_type_names;
  for (const double t : planted_types) planted_type_names.insert("type_" + std::to_string(static_cast<int>(t)));
  std::vector<double> totals(d.n_obs, 0.0);
  for (std::int64_t i = 0; i < d.n_obs; ++i)
    for (std::int64_t p = d.indptr[i]; p < d.indptr[i + 1]; ++p) totals[i] += d.values[p];
  // [class][in planted type][gene]
  std::vector<double> sum(2 * 2 * d.n_vars, 0.0);
  std::vector<double> cells(4, 0.0);
  for (std::int64_t i = 0; i < d.n_obs; ++i) {
    const int c = group[i] == "class_1";
    const int in = planted_type_names.count(type[i]) > 0;
    cells[c * 2 + in] += 1;
    for (std::int64_t p = d.indptr[i]; p < d.indptr[i + 1]; ++p)
      sum[(c * 2 + in) * d.n_vars + d.indices[p]] += std::log1p(d.values[p] / totals[i] * 1e4);
  }
  const auto diff = [&](int in, std::int64_t g) {
    return sum[(2 + in) * d.n_vars + g] / cells[2 + in] - sum[in * d.n_vars + g] / cells[in];
  };
  std::vector<double> other_in, planted_out;
  for (std::int64_t g = 0; g < d.n_vars; ++g) {
    const bool is_planted = std::find(planted.begin(), planted.end(), static_cast<double>(g)) != planted.end();
    if (is_planted) {
      EXPECT_GT(std::fabs(diff(1, g)), 0.5) << "planted gene " << g;
      planted_out.push_back(std::fabs(diff(0, g)));
    } else {
      other_in.push_back(std::fabs(diff(1, g)));
    }
  }
  std::sort(other_in.begin(), other_in.end());
  EXPECT_LT(other_in[other_in.size() * 95 / 100], 0.3);
  for (const double v : planted_out) EXPECT_LT(v, 0.35);

  // Class 1 favours its shifted type.
  const auto shifted = static_cast<int>(d.uns_array("shifted_type").values[1]);
  const auto& props = d.uns_array("class_type_proportions").values;
  EXPECT_GT(props[1 * 4 + shifted], props[0 * 4 + shifted]);
  const std::string shifted_name = "type_" + std::to_string(shifted);
  double share[2] = {0, 0};
  for (std::int64_t i = 0; i < d.n_obs; ++i) share[group[i] == "class_1"] += type[i] == shifted_name;
  EXPECT_GT(share[1], share[0] * 1.3);
}

TEST(Scrna, DeterministicInTheSeed) {
  ScrnaOptions o;
  o.donors_per_class = 2;
  o.cells_per_donor = 50;
  o.n_genes = 80;
  const auto a = simulate_scrna(o), b = simulate_scrna(o);
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values, b.values);
  o.seed = 43;
  const auto c = simulate_scrna(o);
  EXPECT_FALSE(a.values == c.values && a.indices == c.indices);
}

// ------------------------------------------------------------------ files
TEST(SimulatedFiles, RoundTripThroughTheAnnDataReader) {
  kotml::test::TempDir dir;
  ScrnaOptions o;
  o.donors_per_class = 3;
  o.cells_per_donor = 40;
  o.n_genes = 50;
  const auto d = simulate_scrna(o);
  write_h5ad(dir.file("scrna.h5ad"), d);
  const kotml::io::AnnDataReader reader(dir.file("scrna.h5ad"));
  EXPECT_EQ(reader.n_obs(), d.n_obs);
  EXPECT_EQ(reader.n_vars(), d.n_vars);
  const auto csr = reader.read_csr<float>("X");
  EXPECT_EQ(csr.indptr, d.indptr);
  EXPECT_EQ(csr.indices, d.indices);
  EXPECT_EQ(csr.values, d.values);
  EXPECT_EQ(reader.obs("sample").as_strings(), d.obs_column("sample"));
  EXPECT_EQ(reader.obs("cell_type").as_strings(), d.obs_column("cell_type"));
  EXPECT_EQ(reader.var_names(), d.var_names);
  EXPECT_EQ(reader.uns_array("planted_genes"), d.uns_array("planted_genes").values);
  EXPECT_EQ(reader.var("planted").kind, kotml::io::ColumnKind::boolean);

  const auto toy = simulate_toy2d(Toy2dOptions{});
  write_h5ad(dir.file("toy.h5ad"), toy);
  const kotml::io::AnnDataReader toy_reader(dir.file("toy.h5ad"));
  EXPECT_EQ(toy_reader.read_dense<float>("X"), toy.x);
  EXPECT_EQ(toy_reader.obs("patient_group").categories, (std::vector<std::string>{"group_0", "group_1", "group_2"}));

  // The in-memory table exposes the same cells.
  const auto table = d.table();
  const auto rows = table.read_rows("X", {5, 0});
  for (std::int64_t j = 0; j < d.n_vars; ++j) {
    EXPECT_EQ(rows[j], d.value(5, j));
    EXPECT_EQ(rows[d.n_vars + j], d.value(0, j));
  }
}
