// The cohort builder, run at 1, 2 and 3 ranks. The central check: a cohort
// built across all ranks (statistics from every rank's block of donors) is
// bit-identical to the one each rank builds alone (MPI_COMM_SELF), whatever the
// rank count; and donors loaded on only some ranks equal the full build.

#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "kotml/data/cell_source.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/data/simulate.hpp"
#include "kotml/dist/comm.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;
using namespace kotml::data;

namespace {

const dist::Comm& world() {
  static const dist::Comm comm(MPI_COMM_WORLD);
  return comm;
}
const dist::Comm& self() {
  static const dist::Comm comm(MPI_COMM_SELF);
  return comm;
}

/// A file every rank can read: rank 0 writes it into its temporary folder.
class SharedFile {
 public:
  explicit SharedFile(const SimulatedData& data) {
    if (world().is_root()) {
      dir_ = std::make_unique<test::TempDir>();
      path_ = dir_->file("cohort.h5ad");
      write_h5ad(path_, data);
    }
    world().bcast_string(path_);
  }
  ~SharedFile() { world().barrier(); }
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<test::TempDir> dir_;
  std::string path_;
};

void expect_same(const Cohort& a, const Cohort& b) {
  ASSERT_EQ(a.n_donors(), b.n_donors());
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.feature_names, b.feature_names);
  EXPECT_EQ(a.dropped_donors, b.dropped_donors);
  EXPECT_EQ(a.normalization.mean, b.normalization.mean);
  EXPECT_EQ(a.normalization.scale, b.normalization.scale);
  EXPECT_EQ(a.shared_support, b.shared_support);
  for (std::int64_t i = 0; i < a.n_donors(); ++i) {
    const auto &x = a.donors[i], &y = b.donors[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.label, y.label);
    EXPECT_EQ(x.file_index, y.file_index);
    EXPECT_EQ(x.cells, y.cells);
    EXPECT_EQ(x.weights, y.weights);
    if (x.loaded() && y.loaded()) {
      EXPECT_EQ(x.points, y.points) << x.id;  // bitwise
    }
  }
}

SimulatedData small_toy2d() {
  Toy2dOptions o;
  o.cells_per_mode = 60;
  o.varying_size = true;  // donor sizes 3·[20, 59]: some fall below n_cells
  o.seed = 4;
  return simulate_toy2d(o);
}

/// A hand-made table: donors d0..d5 of sizes 4, 9, 12, 7, 15, 10; labels;
/// groups; 3 features.
TableSource hand_table(std::vector<std::string> labels_override = {}, bool with_nan = false) {
  const std::vector<int> sizes = {4, 9, 12, 7, 15, 10};
  const std::vector<std::string> donor_label = {"sick", "healthy", "sick", "healthy", "sick", "healthy"};
  std::vector<std::string> donor, label, group;
  std::vector<float> x;
  int cell = 0;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    for (int k = 0; k < sizes[d]; ++k, ++cell) {
      donor.push_back("d" + std::to_string(d));
      label.push_back(donor_label[d]);
      group.push_back(k % 3 == 0 ? "T" : (k % 3 == 1 ? "B" : "NK"));
      x.push_back(static_cast<float>(0.5 * cell + d));
      x.push_back(static_cast<float>(std::sin(cell)));
      x.push_back(static_cast<float>(d * d) - 0.25f * k);
    }
  }
  if (!labels_override.empty()) label = labels_override;
  if (with_nan) x[3 * 20 + 1] = std::numeric_limits<float>::quiet_NaN();  // a cell of donor d2
  TableSource t("table", cell, 3, x);
  t.set_var_names({"f0", "f1", "f2"});
  t.add_obs("donor", donor);
  t.add_obs("label", label);
  t.add_obs("group", group);
  std::vector<float> embedding;
  for (int i = 0; i < cell; ++i) {
    embedding.push_back(static_cast<float>(i));
    embedding.push_back(static_cast<float>(-i));
  }
  t.add_obsm("X_emb", 2, embedding);
  return t;
}

CohortOptions table_options() {
  CohortOptions o;
  o.input = "table";
  o.patient_col = "donor";
  o.label_col = "label";
  o.n_cells = 8;
  return o;
}

std::string collective_error(const CellSource& source, const CohortOptions& o) {
  try {
    build_cohort(source, o, world());
  } catch (const dist::CollectiveError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Cohort, BuiltAcrossRanksEqualsBuiltAloneOnEveryRank) {
  const auto sim = small_toy2d();
  const SharedFile file(sim);
  CohortOptions o;
  o.input = file.path();
  o.n_cells = 90;
  o.normalize = true;
  o.seed = 123;
  const Cohort everyone = build_cohort(o, world());
  const Cohort alone = build_cohort(o, self());
  expect_same(everyone, alone);
  // Some donors had fewer than 90 cells and were dropped; the rest hold 90.
  EXPECT_FALSE(everyone.dropped_donors.empty());
  EXPECT_LT(everyone.n_donors(), 30);
  EXPECT_EQ(everyone.classes, (std::vector<std::string>{"group_0", "group_1", "group_2"}));
  for (const auto& d : everyone.donors) {
    EXPECT_EQ(d.n_points, 90);
    EXPECT_TRUE(d.loaded());
    EXPECT_EQ(static_cast<std::int64_t>(d.points.size()), 90 * 2);
  }
}

TEST(Cohort, ADeclaredShapeWiderThanAnyCellIsRefusedByName) {
  // Found by fuzz_h5ad: a CSR matrix's shape attribute may declare 2^59
  // columns while storing a few values; in obsm, where no var count bounds
  // it, the cohort builder sized its sums by it and failed as "out of
  // memory". Each rank makes its own copy here.
  auto sim = small_toy2d();
  sim.sparse = true;
  sim.indptr.assign(1, 0);
  for (std::int64_t i = 0; i < sim.n_obs; ++i) {
    for (std::int64_t j = 0; j < sim.n_vars; ++j) {
      const float v = sim.x[static_cast<std::size_t>(i * sim.n_vars + j)];
      if (v == 0.0f) continue;
      sim.indices.push_back(j);
      sim.values.push_back(v);
    }
    sim.indptr.push_back(static_cast<std::int64_t>(sim.values.size()));
  }
  sim.x.clear();
  test::TempDir dir;
  const std::string path = dir.file("wide.h5ad");
  write_h5ad(path, sim);
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(H5Ocopy(file, "X", file, "obsm/X_wide", H5P_DEFAULT, H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  const auto declare_columns = [&](std::int64_t columns) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    // Through the open group: HDF5 1.10 cannot write an attribute opened by name.
    const hid_t x = H5Oopen(file, "obsm/X_wide", H5P_DEFAULT);
    const hid_t shape = H5Aopen(x, "shape", H5P_DEFAULT);
    ASSERT_GE(shape, 0);
    const std::int64_t value[2] = {sim.n_obs, columns};
    EXPECT_GE(H5Awrite(shape, H5T_NATIVE_INT64, value), 0);
    H5Aclose(shape);
    H5Oclose(x);
    H5Fclose(file);
  };
  declare_columns(CellSource::max_features);
  EXPECT_EQ(AnnDataSource(path).n_features("obsm/X_wide"), CellSource::max_features);
  for (const std::int64_t columns : {CellSource::max_features + 1, std::int64_t(1) << 59}) {
    declare_columns(columns);
    CohortOptions o;
    o.input = path;
    o.use_rep = "X_wide";
    o.normalize = true;
    try {
      (void)build_cohort(o, self());
      ADD_FAILURE() << "a cohort was built on " << columns << " columns";
    } catch (const Error& e) {
      EXPECT_FALSE(e.is_internal());
      EXPECT_NE(std::string(e.what()).find("obsm/X_wide: has " + std::to_string(columns) +
                                           " columns: more than the 2147483647 features a cell can have"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Cohort, DonorsLoadedOnSomeRanksEqualTheFullBuild) {
  const auto sim = small_toy2d();
  const SharedFile file(sim);
  CohortOptions o;
  o.input = file.path();
  o.n_cells = 60;
  o.normalize = true;
  const Cohort full = build_cohort(o, self());
  Cohort partial = plan_cohort(o, world());
  EXPECT_TRUE(partial.loaded_donors().empty());
  std::vector<GlobalId> mine;
  for (GlobalId i = 0; i < partial.n_donors(); ++i)
    if (i % world().size() == world().rank()) mine.push_back(i);
  load_donors(partial, mine, world());
  EXPECT_EQ(partial.loaded_donors(), mine);
  expect_same(full, partial);
}

TEST(Cohort, SubsamplesAreSeededDistinctSortedAndUniformlyWeighted) {
  const auto sim = small_toy2d();
  const auto table = sim.table();
  CohortOptions o;
  o.input = "toy2d";
  o.n_cells = 50;
  const Cohort a = build_cohort(table, o, world());
  const Cohort b = build_cohort(table, o, world());
  o.seed = 43;
  const Cohort c = build_cohort(table, o, world());
  const auto& sample = sim.obs_column("sample");
  int differing = 0;
  for (std::int64_t i = 0; i < a.n_donors(); ++i) {
    const auto& d = a.donors[i];
    EXPECT_EQ(d.cells, b.donors[i].cells);
    differing += d.cells != c.donors[i].cells;
    ASSERT_EQ(d.cells.size(), 50u);
    EXPECT_TRUE(std::is_sorted(d.cells.begin(), d.cells.end()));
    EXPECT_EQ(std::set<std::int64_t>(d.cells.begin(), d.cells.end()).size(), 50u);
    for (const auto r : d.cells) EXPECT_EQ(sample[r], d.id);
    for (const double w : d.weights) EXPECT_EQ(w, 1.0 / 50);
    // The points are the cells' rows of X.
    for (std::size_t k = 0; k < d.cells.size(); ++k)
      for (int j = 0; j < 2; ++j) EXPECT_EQ(d.points[k * 2 + j], sim.value(d.cells[k], j));
  }
  EXPECT_EQ(differing, a.n_donors());
}

TEST(Cohort, NormalisationIsGgmlZScoreOverAllKeptCells) {
  const auto sim = small_toy2d();
  const auto table = sim.table();
  CohortOptions o;
  o.input = "toy2d";
  o.n_cells = 70;
  const Cohort raw = build_cohort(table, o, world());
  o.normalize = true;
  const Cohort z = build_cohort(table, o, world());
  ASSERT_TRUE(z.normalization.applied);
  ASSERT_FALSE(z.normalization.scalar);
  for (int j = 0; j < 2; ++j) {
    double s = 0, n = 0;
    for (const auto& d : raw.donors)
      for (std::int64_t k = 0; k < d.n_points; ++k) s += d.points[k * 2 + j], n += 1;
    const double mean = s / n;
    double ss = 0;
    for (const auto& d : raw.donors)
      for (std::int64_t k = 0; k < d.n_points; ++k) ss += (d.points[k * 2 + j] - mean) * (d.points[k * 2 + j] - mean);
    const double sd = std::sqrt(ss / (n - 1));  // unbiased, as torch.std
    EXPECT_NEAR(z.normalization.mean[j], mean, 1e-10 * std::fabs(mean) + 1e-12);
    EXPECT_NEAR(z.normalization.scale[j], sd + 1e-6, 1e-10 * sd);
    double zs = 0, zss = 0;
    for (const auto& d : z.donors)
      for (std::int64_t k = 0; k < d.n_points; ++k) {
        zs += d.points[k * 2 + j];
        zss += static_cast<double>(d.points[k * 2 + j]) * d.points[k * 2 + j];
      }
    EXPECT_NEAR(zs / n, 0.0, 1e-5);
    EXPECT_NEAR(std::sqrt((zss - zs * zs / n) / (n - 1)), 1.0, 1e-5);
  }
}

TEST(Cohort, SmallDonorsDroppedOrKeptWhole) {
  const auto table = hand_table();
  auto o = table_options();
  const Cohort dropped = build_cohort(table, o, world());
  EXPECT_EQ(dropped.dropped_donors, (std::vector<std::string>{"d0", "d3"}));
  EXPECT_EQ(dropped.donor_ids(), (std::vector<std::string>{"d1", "d2", "d4", "d5"}));
  EXPECT_EQ(dropped.classes, (std::vector<std::string>{"healthy", "sick"}));
  EXPECT_EQ(dropped.labels(), (std::vector<std::int32_t>{0, 1, 1, 0}));
  for (const auto& d : dropped.donors) EXPECT_EQ(d.index, &d - dropped.donors.data());
  o.keep_small_donors = true;
  const Cohort kept = build_cohort(table, o, world());
  ASSERT_EQ(kept.n_donors(), 6);
  EXPECT_EQ(kept.donors[0].n_points, 4);
  EXPECT_EQ(kept.donors[0].cells, (std::vector<std::int64_t>{0, 1, 2, 3}));
  for (const double w : kept.donors[0].weights) EXPECT_EQ(w, 0.25);
  EXPECT_EQ(kept.donors[1].n_points, 8);
  // Subsampling keys on the donor's place in the file, not in the kept list:
  // donor d1 draws the same cells whether or not d0 was dropped.
  EXPECT_EQ(kept.donors[1].cells, dropped.donors[0].cells);
  o.all_cells = true;
  const Cohort all = build_cohort(table, o, world());
  EXPECT_EQ(all.total_points(), 4 + 9 + 12 + 7 + 15 + 10);
}

TEST(Cohort, NumericDonorsAndLabelsSortByValueAsNumpyUnique) {
  // Donors 10, 9, 2 and labels 10 / 9: numpy.unique orders numbers by value.
  std::vector<std::string> donor, label;
  std::vector<float> x;
  const std::pair<const char*, const char*> cells[] = {{"10", "10"}, {"9", "9"}, {"2", "10"}, {"10", "10"}, {"9", "9"}, {"2", "10"}};
  for (const auto& [d, l] : cells) {
    donor.push_back(d);
    label.push_back(l);
    x.push_back(static_cast<float>(x.size()));
  }
  TableSource t("numbers", 6, 1, x);
  t.add_obs("donor", donor);
  t.add_obs("label", label);
  auto o = table_options();
  o.n_cells = 2;
  const Cohort as_text = build_cohort(t, o, world());
  EXPECT_EQ(as_text.donor_ids(), (std::vector<std::string>{"10", "2", "9"}));
  EXPECT_EQ(as_text.classes, (std::vector<std::string>{"10", "9"}));
  t.mark_numeric("donor");
  t.mark_numeric("label");
  const Cohort as_numbers = build_cohort(t, o, world());
  EXPECT_EQ(as_numbers.donor_ids(), (std::vector<std::string>{"2", "9", "10"}));
  EXPECT_EQ(as_numbers.classes, (std::vector<std::string>{"9", "10"}));
  EXPECT_EQ(as_numbers.labels(), (std::vector<std::int32_t>{1, 0, 1}));
}

TEST(Cohort, SubnormalAndNanNumericDonorsSortByValue) {
  // Found by fuzz_h5ad: a float donor column holding 5e-324 (a subnormal,
  // which std::stod rejects with out_of_range) ended the cohort build with an
  // internal error. NaN sorts last, as numpy.unique puts it.
  const std::vector<std::string> donor = {"5e-324", "1", "nan", "-1e-310", "5e-324", "1", "nan", "-1e-310"};
  const std::vector<std::string> label = {"a", "b", "a", "b", "a", "b", "a", "b"};
  std::vector<float> x(donor.size());
  std::iota(x.begin(), x.end(), 0.0f);
  TableSource t("subnormal", static_cast<std::int64_t>(donor.size()), 1, x);
  t.add_obs("donor", donor);
  t.add_obs("label", label);
  t.mark_numeric("donor");
  auto o = table_options();
  o.n_cells = 2;
  const Cohort c = build_cohort(t, o, world());
  EXPECT_EQ(c.donor_ids(), (std::vector<std::string>{"-1e-310", "5e-324", "1", "nan"}));
}

TEST(Cohort, GroupModeUsesGlobalCentroidsAndGroupFractions) {
  const auto table = hand_table();
  auto o = table_options();
  o.group_by = "group";
  o.n_cells = 100;  // ignored in group mode: no donor is dropped
  const Cohort a = build_cohort(table, o, world());
  const Cohort alone = build_cohort(table, o, self());
  expect_same(a, alone);
  ASSERT_EQ(a.n_donors(), 6);
  EXPECT_TRUE(a.identical_supports);
  EXPECT_EQ(a.groups, (std::vector<std::string>{"B", "NK", "T"}));
  const auto x = table.read_rows("X", [&] {
    std::vector<std::int64_t> all(static_cast<std::size_t>(table.n_obs()));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }());
  const auto group = table.obs_labels("group");
  const auto donor = table.obs_labels("donor");
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    for (int j = 0; j < 3; ++j) {
      double s = 0, n = 0;
      for (std::int64_t i = 0; i < table.n_obs(); ++i)
        if (group[i] == a.groups[g]) s += x[i * 3 + j], n += 1;
      EXPECT_NEAR(a.shared_support[g * 3 + j], s / n, 1e-5 * (1 + std::fabs(s / n)));
    }
  }
  for (const auto& d : a.donors) {
    EXPECT_EQ(d.n_points, 3);
    EXPECT_TRUE(d.shares_support);
    EXPECT_TRUE(d.loaded());
    EXPECT_TRUE(d.points.empty());  // one copy, in shared_support
    double total = 0;
    for (std::size_t g = 0; g < 3; ++g) {
      double count = 0;
      for (std::int64_t i = 0; i < table.n_obs(); ++i) count += donor[i] == d.id && group[i] == a.groups[g];
      EXPECT_DOUBLE_EQ(d.weights[g], count / d.n_cells_total);
      total += d.weights[g];
    }
    EXPECT_NEAR(total, 1.0, 1e-15);
  }
  // GGML-OT's normalize() on a (K, d) support: one scalar mean and SD over all
  // K·d entries.
  o.normalize = true;
  const Cohort z = build_cohort(table, o, world());
  ASSERT_TRUE(z.normalization.scalar);
  double s = 0, ss = 0;
  for (const float v : a.shared_support) s += v;
  const double mean = s / 9;
  for (const float v : a.shared_support) ss += (v - mean) * (v - mean);
  EXPECT_NEAR(z.normalization.mean[0], mean, 1e-5);
  EXPECT_NEAR(z.normalization.scale[0], std::sqrt(ss / 8) + 1e-6, 1e-5);
  for (std::size_t e = 0; e < 9; ++e)
    EXPECT_NEAR(z.shared_support[e], (a.shared_support[e] - mean) / z.normalization.scale[0], 1e-5);
}

TEST(Cohort, EmbeddingFeaturesAndNames) {
  const auto table = hand_table();
  auto o = table_options();
  o.use_rep = "X_emb";
  const Cohort c = build_cohort(table, o, world());
  EXPECT_EQ(c.dim, 2);
  EXPECT_EQ(c.feature_element, "obsm/X_emb");
  EXPECT_EQ(c.feature_names, (std::vector<std::string>{"X_emb_1", "X_emb_2"}));
  const auto& d = c.donors[0];
  for (std::size_t k = 0; k < d.cells.size(); ++k) {
    EXPECT_EQ(d.points[k * 2], static_cast<float>(d.cells[k]));
    EXPECT_EQ(d.points[k * 2 + 1], -static_cast<float>(d.cells[k]));
  }
}

TEST(Cohort, BadInputIsOneCollectiveErrorNamingTheProblem) {
  const auto table = hand_table();
  auto o = table_options();

  auto labels = table.obs_labels("label");
  labels[14] = "healthy";  // cells 13..24 belong to donor d2 (sick)
  const auto two_labels = hand_table(labels);
  EXPECT_NE(collective_error(two_labels, o).find("donor 'd2' has more than one label"), std::string::npos)
      << collective_error(two_labels, o);

  labels = table.obs_labels("label");
  labels[30] = "";
  EXPECT_NE(collective_error(hand_table(labels), o).find("without a label"), std::string::npos);

  labels.assign(labels.size(), "sick");
  EXPECT_NE(collective_error(hand_table(labels), o).find("at least two classes"), std::string::npos);

  auto every_cell = o;
  every_cell.all_cells = true;  // so the NaN cell of donor d2 is read
  EXPECT_NE(collective_error(hand_table({}, true), every_cell).find("NaN or infinite value(s) in the cells of donor 'd2'"),
            std::string::npos)
      << collective_error(hand_table({}, true), every_cell);

  auto bad = o;
  bad.n_cells = 0;
  EXPECT_NE(collective_error(table, bad).find("--n-cells"), std::string::npos);
  bad = o;
  bad.use_rep = "X_umap";
  EXPECT_NE(collective_error(table, bad).find("obsm/X_umap: no such embedding (available: X_emb)"), std::string::npos)
      << collective_error(table, bad);
  bad = o;
  bad.label_col = "disease";
  EXPECT_NE(collective_error(table, bad).find("obs/disease: no such obs column"), std::string::npos);
  bad = o;
  bad.layer = "counts";
  bad.use_rep = "X_emb";
  EXPECT_NE(collective_error(table, bad).find("--use-rep"), std::string::npos);
  bad = o;
  bad.n_cells = 1000;
  EXPECT_NE(collective_error(table, bad).find("no donor has 1000 cells"), std::string::npos);
}

TEST(Cohort, RealKidneyCohortIsRankIndependent) {
  const std::string path = test::shared_data_path("kidney_igan_glomeruli.h5ad");
  if (!test::file_exists(path)) GTEST_SKIP() << "shared data file absent: " << path;
  CohortOptions o;
  o.input = path;
  o.patient_col = "sampleID";
  o.label_col = "status";
  o.n_cells = 40;
  o.normalize = true;
  const Cohort everyone = build_cohort(o, world());
  const Cohort alone = build_cohort(o, self());
  expect_same(everyone, alone);
  EXPECT_EQ(everyone.classes, (std::vector<std::string>{"30-60", "<30", ">60"}));
  EXPECT_EQ(everyone.dim, 14);
  EXPECT_EQ(everyone.n_donors() + static_cast<std::int64_t>(everyone.dropped_donors.size()), 634);
  // Every kept donor has at least 40 glomeruli; every dropped one fewer.
  const AnnDataSource source(path);
  const auto ids = source.obs_labels("sampleID");
  std::map<std::string, std::int64_t> count;
  for (const auto& id : ids) ++count[id];
  for (const auto& d : everyone.donors) {
    EXPECT_GE(count[d.id], 40);
    EXPECT_EQ(d.n_cells_total, count[d.id]);
  }
  for (const auto& id : everyone.dropped_donors) EXPECT_LT(count[id], 40);
}
