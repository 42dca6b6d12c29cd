// Preprocessing against scanpy 1.11 (fixtures made by
// tests/data/fixtures/make_prep_fixtures.py) and against exact dense algebra:
// normalize_total + log1p, 'seurat' highly variable genes (plain, cutoffs,
// batches), PCA principal angles, and the whole `prep` pipeline's output file.

#include <gtest/gtest.h>
#include <mpi.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/data/hvg.hpp"
#include "kotml/data/normalize_total.hpp"
#include "kotml/data/pca.hpp"
#include "kotml/data/prep.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;
using namespace kotml::data;
using Mat = Eigen::MatrixXd;

namespace {

std::string fixture(const std::string& name) { return test::test_source_path("data/fixtures/" + name); }

HostCsr normalised_input() {
  const io::AnnDataReader reader(fixture("prep_input.h5ad"));
  HostCsr x = reader.read_csr<float>("X");
  normalize_total(x, 1e4);
  log1p(x);
  return x;
}

std::vector<std::uint8_t> flags(const io::Column& c) {
  std::vector<std::uint8_t> out;
  for (const double v : c.numbers) out.push_back(v != 0.0);
  return out;
}

std::vector<std::int32_t> batches(std::int64_t& n) {
  const io::AnnDataReader reader(fixture("prep_input.h5ad"));
  const auto column = reader.obs("batch");
  n = static_cast<std::int64_t>(column.categories.size());
  return column.codes;
}

/// Largest principal angle between the column spaces of a and b (orthonormalised).
double largest_principal_angle(const Mat& a, const Mat& b) {
  const Mat qa = Eigen::HouseholderQR<Mat>(a).householderQ() * Mat::Identity(a.rows(), a.cols());
  const Mat qb = Eigen::HouseholderQR<Mat>(b).householderQ() * Mat::Identity(b.rows(), b.cols());
  const Eigen::JacobiSVD<Mat> svd(qa.transpose() * qb);
  return std::acos(std::min(1.0, svd.singularValues().minCoeff()));
}

double angle(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return std::acos(std::min(1.0, std::fabs(a.dot(b)) / (a.norm() * b.norm())));
}

}  // namespace

TEST(NormalizeTotal, RowsSumToTargetAndZeroRowsStay) {
  HostCsr x;
  x.rows = 3;
  x.cols = 4;
  x.indptr = {0, 2, 2, 5};
  x.indices = {0, 3, 0, 1, 2};
  x.values = {1, 3, 2, 2, 4};
  normalize_total(x, 100);
  EXPECT_FLOAT_EQ(x.values[0], 25.0f);
  EXPECT_FLOAT_EQ(x.values[1], 75.0f);
  EXPECT_FLOAT_EQ(x.values[2] + x.values[3] + x.values[4], 100.0f);
  log1p(x);
  EXPECT_FLOAT_EQ(x.values[0], std::log1p(25.0f));
  const auto c = check_values(x);
  EXPECT_EQ(c.non_finite, 0);
  EXPECT_EQ(c.negative, 0);
  EXPECT_GT(c.non_integer, 0);
}

TEST(Hvg, SeuratTopGenesMatchScanpy) {
  const auto x = normalised_input();
  const io::AnnDataReader expected(fixture("prep_scanpy.h5ad"));
  const io::AnnDataReader input(fixture("prep_input.h5ad"));
  HvgOptions o;
  o.n_top_genes = 60;
  const auto r = highly_variable_genes(x, o, input.var_names());
  EXPECT_EQ(r.highly_variable, flags(expected.var("highly_variable")));
  EXPECT_EQ(r.selected().size(), 60u);
  const auto means = expected.var("means").numbers;
  const auto dispersions = expected.var("dispersions").numbers;
  const auto norm = expected.var("dispersions_norm").numbers;
  for (std::size_t g = 0; g < means.size(); ++g) {
    EXPECT_NEAR(r.means[g], means[g], 1e-6 * (1 + std::fabs(means[g]))) << g;
    ASSERT_EQ(std::isnan(r.dispersions[g]), std::isnan(dispersions[g])) << g;
    if (!std::isnan(dispersions[g])) {
      EXPECT_NEAR(r.dispersions[g], dispersions[g], 1e-5) << g;
      EXPECT_NEAR(r.dispersions_norm[g], norm[g], 1e-5) << g;
    }
  }
  // The silent gene 7 has no dispersion and is never selected.
  EXPECT_TRUE(std::isnan(r.dispersions[7]));
  EXPECT_FALSE(r.highly_variable[7]);
}

TEST(Hvg, SeuratCutoffsAndBatchesMatchScanpy) {
  const auto x = normalised_input();
  const io::AnnDataReader expected(fixture("prep_scanpy.h5ad"));
  const io::AnnDataReader input(fixture("prep_input.h5ad"));
  const auto cut = highly_variable_genes(x, HvgOptions{}, input.var_names());
  EXPECT_EQ(cut.highly_variable, flags(expected.var("hv_cutoffs")));
  EXPECT_GT(cut.selected().size(), 0u);

  HvgOptions o;
  o.n_top_genes = 60;
  std::int64_t n_batches = 0;
  const auto batch = batches(n_batches);
  ASSERT_EQ(n_batches, 3);
  const auto r = highly_variable_genes(x, o, input.var_names(), batch, n_batches);
  EXPECT_EQ(r.highly_variable, flags(expected.var("hv_batch")));
  const auto nbatches = expected.var("hv_batch_nbatches").numbers;
  const auto norm = expected.var("hv_batch_dispersions_norm").numbers;
  for (std::size_t g = 0; g < nbatches.size(); ++g) {
    EXPECT_EQ(static_cast<double>(r.highly_variable_nbatches[g]), nbatches[g]) << g;
    ASSERT_EQ(std::isnan(r.dispersions_norm[g]), std::isnan(norm[g])) << g;
    if (!std::isnan(norm[g])) {
      EXPECT_NEAR(r.dispersions_norm[g], norm[g], 1e-5) << g;
    }
  }
}

/// The three ways pca() can reach its eigenpairs.
struct PcaMethod {
  PcaOperator op;
  PcaSolver solver;
  const char* name;
};
constexpr PcaMethod pca_methods[] = {{PcaOperator::gram, PcaSolver::lanczos, "Lanczos on the Gram matrix"},
                                     {PcaOperator::gram, PcaSolver::dense, "dense on the Gram matrix"},
                                     {PcaOperator::cells, PcaSolver::lanczos, "Lanczos on the cells"}};

PcaResult pca_by(const PcaMethod& method, const HostCsr& x, PcaOptions o) {
  o.op = method.op;
  o.solver = method.solver;
  return pca(x, o);
}

/// scanpy's HVG flags on the fixture, their gene indices, and those columns of
/// the normalised input.
struct ScanpyHvg {
  std::vector<std::uint8_t> flags;
  std::vector<std::int64_t> genes;
  HostCsr x;
};

ScanpyHvg scanpy_hvg_input() {
  ScanpyHvg h;
  h.flags = flags(io::AnnDataReader(fixture("prep_scanpy.h5ad")).var("highly_variable"));
  for (std::size_t g = 0; g < h.flags.size(); ++g)
    if (h.flags[g]) h.genes.push_back(static_cast<std::int64_t>(g));
  h.x = select_columns(normalised_input(), h.genes);
  return h;
}

TEST(Pca, PrincipalAnglesWithScanpyBelowOneMilliradian) {
  const io::AnnDataReader expected(fixture("prep_scanpy.h5ad"));
  const auto [hv, genes, hvg] = scanpy_hvg_input();
  PcaOptions o;
  o.n_comps = 20;
  const auto r = pca(hvg, o);
  EXPECT_TRUE(r.converged);
  const auto loadings = expected.read_dense<double>("varm/PCs");  // genes × 20
  const auto g_all = static_cast<Eigen::Index>(hv.size());
  const auto k = Eigen::Index(20), h = static_cast<Eigen::Index>(genes.size());
  Mat ours(h, k), theirs(h, k);
  for (Eigen::Index i = 0; i < h; ++i)
    for (Eigen::Index c = 0; c < k; ++c) {
      ours(i, c) = r.components[c * h + i];
      theirs(i, c) = loadings[genes[i] * k + c];
    }
  // Genes outside the HVG set have zero loadings in scanpy's PCs.
  for (Eigen::Index g = 0; g < g_all; ++g) {
    if (hv[g]) continue;
    for (Eigen::Index c = 0; c < k; ++c) ASSERT_EQ(loadings[g * k + c], 0.0);
  }
  EXPECT_LT(largest_principal_angle(ours, theirs), 1e-3);
  for (Eigen::Index c = 0; c < k; ++c) EXPECT_LT(angle(ours.col(c), theirs.col(c)), 1e-3) << "component " << c;
  const auto ratio = expected.uns_array("pca/variance_ratio");
  for (Eigen::Index c = 0; c < k; ++c) EXPECT_NEAR(r.variance_ratio[c], ratio[c], 1e-5 * ratio[0]) << c;
  // Scores agree up to each component's sign.
  const auto scores = expected.read_dense<double>("obsm/X_pca");
  for (Eigen::Index c = 0; c < k; ++c) {
    const double sign = ours.col(c).dot(theirs.col(c)) < 0 ? -1.0 : 1.0;
    double worst = 0, scale = 0;
    for (std::int64_t i = 0; i < r.n_obs; ++i) {
      worst = std::max(worst, std::fabs(r.scores[i * k + c] - sign * scores[i * k + c]));
      scale = std::max(scale, std::fabs(scores[i * k + c]));
    }
    EXPECT_LT(worst, 2e-3 * scale) << "component " << c;
  }
}

/// A random sparse n × g matrix with a planted rank-3 part and a non-zero
/// mean, as CSR and dense.
struct PlantedMatrix {
  HostCsr x;
  Mat dense;
};

PlantedMatrix planted_matrix(std::int64_t n, std::int64_t g) {
  random::Stream s(3, random::Purpose::test_data, 0);
  PlantedMatrix m{HostCsr{}, Mat::Zero(n, g)};
  HostCsr& x = m.x;
  x.rows = n;
  x.cols = g;
  x.indptr.push_back(0);
  std::vector<double> u(n * 3), v(3 * g);
  for (auto& e : u) e = s.normal();
  for (auto& e : v) e = s.normal();
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < g; ++j) {
      if (s.uniform() < 0.4) continue;
      double value = 2.0 + 0.3 * s.normal();
      for (int r = 0; r < 3; ++r) value += (4.0 - r) * u[i * 3 + r] * v[r * g + j];
      x.indices.push_back(j);
      x.values.push_back(static_cast<float>(value));
      m.dense(i, j) = static_cast<float>(value);
    }
    x.indptr.push_back(static_cast<std::int64_t>(x.indices.size()));
  }
  return m;
}

TEST(Pca, MatchesDenseSvdAndIsDeterministic) {
  const std::int64_t n = 180, g = 40;
  const auto [x, dense] = planted_matrix(n, g);
  const Mat centred = dense.rowwise() - dense.colwise().mean();
  const Eigen::JacobiSVD<Mat> svd(centred, Eigen::ComputeThinV | Eigen::ComputeThinU);
  PcaOptions o;
  o.n_comps = 6;
  o.tol = 1e-10;
  for (const auto& method : pca_methods) {
    SCOPED_TRACE(method.name);
    const auto a = pca_by(method, x, o);
    const auto b = pca_by(method, x, o);
    EXPECT_EQ(a.op, method.op);
    EXPECT_EQ(a.solver, method.solver);
    EXPECT_EQ(a.components, b.components);
    EXPECT_EQ(a.scores, b.scores);
    ASSERT_TRUE(a.converged);
    for (int c = 0; c < 6; ++c) {
      Eigen::VectorXd ours(g);
      for (std::int64_t j = 0; j < g; ++j) ours(j) = a.components[c * g + j];
      EXPECT_LT(angle(ours, svd.matrixV().col(c)), 1e-7) << c;
      EXPECT_NEAR(a.singular_values[c], svd.singularValues()(c), 1e-8 * svd.singularValues()(0));
      // Largest-magnitude loading positive; scores are the centred data times the axis.
      Eigen::Index at = 0;
      ours.cwiseAbs().maxCoeff(&at);
      EXPECT_GT(ours(at), 0.0);
      const Eigen::VectorXd expected_scores = centred * ours;
      for (std::int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(a.scores[i * 6 + c], expected_scores(i), 1e-8 * svd.singularValues()(0));
    }
  }
  o.n_comps = g;
  EXPECT_THROW(pca(x, o), Error);
}

// The Gram matrix is formed per tile of 512 cells and per pair of 128-feature
// blocks, the pairs shared among the threads: 700 cells × 300 features make two
// tiles (the second part-filled) and blocks of 128, 128 and 44 features, six
// pairs, each of which must land in its own place of C.
TEST(Pca, GramMatrixOverSeveralTilesAndFeatureBlocksMatchesDenseSvd) {
  const std::int64_t n = 700, g = 300;
  const auto [x, dense] = planted_matrix(n, g);
  const Mat centred = dense.rowwise() - dense.colwise().mean();
  const Eigen::JacobiSVD<Mat> svd(centred, Eigen::ComputeThinV);
  PcaOptions o;
  o.n_comps = 8;
  o.op = PcaOperator::gram;
  o.solver = PcaSolver::dense;
  const auto a = pca(x, o);
  const auto b = pca(x, o);
  EXPECT_EQ(a.components, b.components);
  EXPECT_EQ(a.scores, b.scores);
  for (int c = 0; c < o.n_comps; ++c) {
    EXPECT_NEAR(a.singular_values[c], svd.singularValues()(c), 1e-9 * svd.singularValues()(0)) << c;
    if (c >= 3) continue;  // past the planted part the noise's gaps are too narrow for a tight angle
    Eigen::VectorXd ours(g);
    for (std::int64_t j = 0; j < g; ++j) ours(j) = a.components[c * g + j];
    EXPECT_LT(angle(ours, svd.matrixV().col(c)), 1e-7) << c;
  }
}

TEST(Pca, LanczosConvergesBeforeTheFullSpace) {
  // 400 cells × 300 features with a planted rank-8 signal over isotropic noise:
  // the leading 5 axes converge long before the basis spans all 300 features.
  random::Stream s(17, random::Purpose::test_data, 0);
  const std::int64_t n = 400, g = 300, rank = 8;
  Mat u(n, rank), v(rank, g);
  for (Eigen::Index i = 0; i < u.size(); ++i) u.data()[i] = s.normal();
  for (Eigen::Index i = 0; i < v.size(); ++i) v.data()[i] = s.normal();
  HostCsr x;
  x.rows = n;
  x.cols = g;
  x.indptr.push_back(0);
  Mat dense = Mat::Zero(n, g);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < g; ++j) {
      double value = 0.5 * s.normal() + 1.0;
      for (std::int64_t r = 0; r < rank; ++r) value += (3.0 * std::pow(0.8, r)) * u(i, r) * v(r, j);
      x.indices.push_back(j);
      x.values.push_back(static_cast<float>(value));
      dense(i, j) = static_cast<float>(value);
    }
    x.indptr.push_back(static_cast<std::int64_t>(x.indices.size()));
  }
  const Mat centred = dense.rowwise() - dense.colwise().mean();
  const Eigen::JacobiSVD<Mat> svd(centred, Eigen::ComputeThinV);
  PcaOptions o;
  o.n_comps = 5;
  o.tol = 1e-9;
  for (const auto& method : pca_methods) {
    SCOPED_TRACE(method.name);
    const auto r = pca_by(method, x, o);
    ASSERT_TRUE(r.converged);
    if (method.solver == PcaSolver::lanczos) {
      EXPECT_LT(r.basis_size, g / 2);
    }
    for (int c = 0; c < 5; ++c) {
      Eigen::VectorXd ours(g);
      for (std::int64_t j = 0; j < g; ++j) ours(j) = r.components[c * g + j];
      EXPECT_LT(angle(ours, svd.matrixV().col(c)), 1e-6) << c;
      EXPECT_NEAR(r.singular_values[c], svd.singularValues()(c), 1e-8 * svd.singularValues()(0)) << c;
    }
  }
}

TEST(Pca, EveryMethodAgreesOnScanpysInput) {
  // The same C reached three ways: the axes, variances and scores agree far
  // below the tolerance against scanpy (Lanczos stops at a 1e-8 residual).
  const auto [hv, genes, hvg] = scanpy_hvg_input();
  PcaOptions o;
  o.n_comps = 20;
  o.op = PcaOperator::cells;
  const auto reference = pca(hvg, o);
  ASSERT_TRUE(reference.converged);
  const auto h = static_cast<Eigen::Index>(genes.size()), k = Eigen::Index(20);
  for (const auto& method : pca_methods) {
    SCOPED_TRACE(method.name);
    const auto r = pca_by(method, hvg, o);
    ASSERT_TRUE(r.converged);
    for (Eigen::Index c = 0; c < k; ++c) {
      Eigen::VectorXd a(h), b(h);
      for (Eigen::Index i = 0; i < h; ++i) {
        a(i) = r.components[c * h + i];
        b(i) = reference.components[c * h + i];
      }
      EXPECT_LT(angle(a, b), 1e-7) << c;
      EXPECT_GT(a.dot(b), 0.0) << "the sign rule picks the same sign, component " << c;
      EXPECT_NEAR(r.variance[c], reference.variance[c], 1e-10 * reference.variance[0]) << c;
    }
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < r.scores.size(); ++i) {
      worst = std::max(worst, std::fabs(r.scores[i] - reference.scores[i]));
      scale = std::max(scale, std::fabs(reference.scores[i]));
    }
    EXPECT_LT(worst, 1e-6 * scale);
  }
  o.op = PcaOperator::cells;
  o.solver = PcaSolver::dense;
  EXPECT_THROW(pca(hvg, o), Error);
}

TEST(Pca, AutomaticOperatorFollowsTheCostOfEach) {
  // Dense columns: forming C (n g² / 2 per cell block) is cheaper than passes
  // over the stored values. Very sparse rows over many features: the cells.
  const auto csr = [](std::int64_t n, std::int64_t g, std::int64_t per_row) {
    HostCsr x;
    x.rows = n;
    x.cols = g;
    x.indptr.push_back(0);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t p = 0; p < per_row; ++p) {
        x.indices.push_back(static_cast<std::int32_t>((i * 7 + p * (g / per_row)) % g));
        x.values.push_back(1.0f);
      }
      x.indptr.push_back(static_cast<std::int64_t>(x.indices.size()));
    }
    return x;
  };
  PcaOptions o;
  o.n_comps = 10;
  EXPECT_EQ(choose_pca_operator(csr(2000, 300, 100), o), PcaOperator::gram);
  EXPECT_EQ(choose_pca_operator(csr(2000, 3000, 3), o), PcaOperator::cells);
  // Over gram_max_features the matrix is never formed, however dense.
  EXPECT_EQ(choose_pca_operator(csr(20, gram_max_features + 1, gram_max_features + 1), o), PcaOperator::cells);
  o.op = PcaOperator::automatic;
  const auto r = pca(csr(2000, 300, 100), o);
  EXPECT_EQ(r.op, PcaOperator::gram);
  // The dense solver when the Lanczos basis may span every feature (max_basis
  // = g); Lanczos when its basis stays a small part of many features.
  EXPECT_EQ(r.solver, PcaSolver::dense);
  EXPECT_EQ(choose_pca_solver(300, o), PcaSolver::dense);
  EXPECT_EQ(choose_pca_solver(gram_max_features, o), PcaSolver::lanczos);
  o.max_basis = 40;
  EXPECT_EQ(choose_pca_solver(3000, o), PcaSolver::lanczos);
}

TEST(Prep, WritesScanpyLayoutAndCohortsUseItsPcs) {
  test::TempDir dir;
  PrepOptions o;
  o.input = fixture("prep_input.h5ad");
  o.output = dir.file("out.h5ad");
  o.hvg.n_top_genes = 60;
  o.n_comps_given = true;
  o.pca.n_comps = 20;
  const auto report = run_prep(o);
  EXPECT_EQ(report.n_hvg, 60);
  EXPECT_TRUE(report.pca_converged);

  const io::AnnDataReader out(o.output);
  const io::AnnDataReader in(o.input);
  const io::AnnDataReader expected(fixture("prep_scanpy.h5ad"));
  const auto x = normalised_input();
  const auto written = out.read_csr<float>("X");
  EXPECT_EQ(written.values, x.values);
  const auto counts = out.read_csr<float>("layers/counts");
  const auto input_counts = in.read_csr<float>("X");
  EXPECT_EQ(counts.values, input_counts.values);
  EXPECT_EQ(counts.indices, input_counts.indices);
  EXPECT_EQ(counts.indptr, input_counts.indptr);
  EXPECT_TRUE(out.file().same_object("layers/counts/indices", "X/indices"));
  EXPECT_EQ(flags(out.var("highly_variable")), flags(expected.var("highly_variable")));
  EXPECT_EQ(out.obs("batch").as_strings(), in.obs("batch").as_strings());
  EXPECT_EQ(out.matrix_info("obsm/X_pca").cols, 20);
  const auto pcs = out.read_dense<double>("varm/PCs");
  const auto hv = flags(out.var("highly_variable"));
  for (std::size_t g = 0; g < hv.size(); ++g) {
    if (hv[g]) continue;
    for (int c = 0; c < 20; ++c) EXPECT_EQ(pcs[g * 20 + c], 0.0);
  }

  // A cohort on the embedding carries the loadings back to genes.
  const dist::Comm comm(MPI_COMM_WORLD);
  CohortOptions co;
  co.input = o.output;
  co.patient_col = "batch";
  co.label_col = "batch";
  co.use_rep = "X_pca";
  co.n_cells = 30;
  const Cohort cohort = build_cohort(co, comm);
  EXPECT_EQ(cohort.dim, 20);
  EXPECT_EQ(cohort.feature_names.front(), "PC1");
  EXPECT_EQ(cohort.gene_loadings, pcs);
  EXPECT_EQ(cohort.gene_names, in.var_names());
}

TEST(Prep, CarriesTheInputsLayersObsmAndVarmOverByteForByte) {
  // An input with a compressed extra layer, an embedding and gene loadings:
  // prep copies them into its (uncompressed) output as they are stored.
  test::TempDir dir;
  const io::AnnDataReader fixture_in(fixture("prep_input.h5ad"));
  io::AnnDataContent c;
  c.n_obs = fixture_in.n_obs();
  c.n_vars = fixture_in.n_vars();
  c.x_is_sparse = true;
  c.x_csr = fixture_in.read_csr<float>("X");
  c.layers.emplace_back("spliced", c.x_csr);
  std::vector<double> umap(static_cast<std::size_t>(c.n_obs * 2)), loadings(static_cast<std::size_t>(c.n_vars * 3));
  std::iota(umap.begin(), umap.end(), 0.5);
  std::iota(loadings.begin(), loadings.end(), -7.0);
  c.obsm.push_back({"X_umap", {umap, {c.n_obs, 2}}});
  c.varm.push_back({"loadings", {loadings, {c.n_vars, 3}}});
  c.compression_level = 4;
  io::write_anndata(dir.file("in.h5ad"), c);

  PrepOptions o;
  o.input = dir.file("in.h5ad");
  o.output = dir.file("out.h5ad");
  o.hvg.n_top_genes = 60;
  run_prep(o);
  const io::AnnDataReader out(o.output);
  const auto spliced = out.read_csr<float>("layers/spliced");
  EXPECT_EQ(spliced.values, c.x_csr.values);
  EXPECT_EQ(spliced.indices, c.x_csr.indices);
  EXPECT_EQ(out.read_dense<double>("obsm/X_umap"), umap);
  EXPECT_EQ(out.read_dense<double>("varm/loadings"), loadings);
  // Copied, not re-encoded: the layer keeps its gzip chunks while prep's own
  // matrices are written without compression.
  const auto h5 = io::h5::File::open_read(o.output);
  EXPECT_TRUE(h5.is_compressed("layers/spliced/data"));
  EXPECT_FALSE(h5.is_compressed("X/data"));

  // A carried entry whose rows do not match obs is named before any work.
  {
    auto in = io::h5::File::open_rw(dir.file("in.h5ad"));
    in.write("obsm/short", std::vector<double>(6, 1.0), {3, 2});
    in.close();
  }
  o.output = dir.file("out2.h5ad");
  try {
    run_prep(o);
    FAIL() << "no error for obsm/short";
  } catch (const Error& e) {
    EXPECT_EQ(e.element(), "obsm/short") << e.what();
  }
  EXPECT_FALSE(test::file_exists(o.output));
}

TEST(Prep, RejectsImpossibleRequestsAndBadValues) {
  test::TempDir dir;
  PrepOptions o;
  o.input = fixture("prep_input.h5ad");
  o.output = dir.file("out.h5ad");
  o.hvg.n_top_genes = 151;
  try {
    run_prep(o);
    FAIL() << "no error for --n-top-genes above the gene count";
  } catch (const Error& e) {
    EXPECT_EQ(e.element(), "--n-top-genes");
  }
  EXPECT_FALSE(test::file_exists(o.output));
  o.hvg.n_top_genes = 60;
  o.n_comps_given = true;
  o.pca.n_comps = 60;
  EXPECT_THROW(run_prep(o), Error);

  // The error prep gives for a file of this content.
  auto error_for = [&](const io::AnnDataContent& content, const std::string& name) -> Error {
    io::write_anndata(dir.file(name), content);
    o.input = dir.file(name);
    try {
      run_prep(o);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "no error for " << name;
    return Error("", "", "");
  };

  // NaN in X.
  io::AnnDataContent bad;
  bad.n_obs = 3;
  bad.n_vars = 2;
  bad.x_dense = {1, 2, 3, std::numeric_limits<float>::quiet_NaN(), 5, 6};
  const auto nan = error_for(bad, "nan.h5ad");
  EXPECT_EQ(nan.element(), "X");
  EXPECT_NE(std::string(nan.what()).find("NaN"), std::string::npos);

  // No cells: said as such (it blamed the HVG cutoffs before).
  io::AnnDataContent empty;
  empty.n_obs = 0;
  empty.n_vars = 2;
  const auto none = error_for(empty, "empty.h5ad");
  EXPECT_NE(std::string(none.what()).find("has 0 cells"), std::string::npos) << none.what();
  EXPECT_FALSE(test::file_exists(o.output));
}
