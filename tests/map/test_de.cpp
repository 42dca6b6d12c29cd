// pairOT's differential-expression step against its peers, through fixtures
// made by tests/map/fixtures/de_make_fixtures.py:
//  * pseudobulk against pairOT's numpy/scipy/pandas recipe (float32);
//  * limma (one-vs-all, all-vs-all, the eBayes prior, trigammaInverse, the
//    t-distribution p-values) against R limma 3.54.1 run with pairOT's calls;
//  * AUROC against scikit-learn's roc_auc_score;
// plus invariants of the downsampling, pairOT's float32 AUROC rules, bad input,
// and the tables gathered over 1, 2 and 3 ranks against one rank's.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/map/auroc.hpp"
#include "kotml/map/de_tables.hpp"
#include "kotml/map/genes.hpp"
#include "kotml/map/limma.hpp"
#include "kotml/map/pseudobulk.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;
using namespace kotml::map;

namespace {

io::h5::File fixture() {
  return io::h5::File::open_read(test::test_source_path("map/fixtures/de_fixture.h5"));
}

struct CountsData {
  data::HostCsr counts;
  Labels samples, clusters;
};

CountsData counts_data() {
  const auto f = fixture();
  CountsData d;
  const auto shape = f.read<std::int64_t>("counts/shape");
  d.counts.rows = shape[0];
  d.counts.cols = shape[1];
  d.counts.indptr = f.read<std::int64_t>("counts/indptr");
  d.counts.indices = f.read<kotml::io::SparseIndex>("counts/indices");
  d.counts.values = f.read<float>("counts/values");
  d.samples.codes = f.read<std::int32_t>("counts/sample");
  d.samples.names = f.read_strings("counts/sample_names");
  d.clusters.codes = f.read<std::int32_t>("counts/cluster");
  d.clusters.names = f.read_strings("counts/cluster_names");
  return d;
}

/// A pseudobulk given directly (groups × genes), clusters renamed by first
/// appearance in group order, as the fixture script does for these matrices.
Pseudobulk direct_pseudobulk(const std::string& name) {
  const auto f = fixture();
  Pseudobulk pb;
  pb.values = f.read<double>(name + "/values");
  pb.group_sample = f.read<std::int32_t>(name + "/sample");
  pb.group_cluster = f.read<std::int32_t>(name + "/cluster");
  pb.n_groups = static_cast<std::int64_t>(pb.group_cluster.size());
  pb.n_genes = static_cast<std::int64_t>(pb.values.size()) / pb.n_groups;
  const std::int32_t n_codes =
      *std::max_element(pb.group_cluster.begin(), pb.group_cluster.end()) + 1;
  pb.cluster_rank.assign(static_cast<std::size_t>(n_codes), -1);
  std::int32_t next = 0;
  for (const std::int32_t c : pb.group_cluster)
    if (pb.cluster_rank[static_cast<std::size_t>(c)] < 0)
      pb.cluster_rank[static_cast<std::size_t>(c)] = next++;
  for (std::int32_t c = 0; c < n_codes; ++c)
    if (pb.cluster_rank[static_cast<std::size_t>(c)] >= 0) pb.tested_clusters.push_back(c);
  return pb;
}

/// |a − b| ≤ rel · max(|a|, |b|) or |a − b| ≤ floor.
struct Close {
  double rel, floor;
  double worst = 0;  // largest |a − b| / max(|a|, |b|, floor / rel)
  bool operator()(double a, double b) {
    if (a == b) return true;
    const double diff = std::fabs(a - b);
    worst = std::max(worst, diff / std::max({std::fabs(a), std::fabs(b), floor / rel}));
    return diff <= floor || diff <= rel * std::max(std::fabs(a), std::fabs(b));
  }
};

// Tolerances against R: 1e-6 relative. Absolute floors: logFC 1e-12 (constant
// genes have logFC 0 up to QR rounding, ~1e-15, in R and here); p-values 1e-300
// (nothing in the fixtures comes near it; the smallest R p-value is ~1e-17).
constexpr double rel_tol = 1e-6;

/// R's results of one fit kind: stats is (logFC, t, P.Value, adj.P.Val) ×
/// rows × genes, prior (s2.prior, df.prior, df.total) × rows.
struct RFits {
  std::vector<double> stats, prior;
  std::int64_t rows = 0, genes = 0;
  double stat(int field, std::int64_t row, std::int64_t gene) const {
    return stats[static_cast<std::size_t>((field * rows + row) * genes + gene)];
  }
  double prior_of(int field, std::int64_t row) const {
    return prior[static_cast<std::size_t>(field * rows + row)];
  }
};

RFits r_fits(const io::h5::File& f, const std::string& group) {
  RFits r;
  r.stats = f.read<double>(group + "/stats");
  r.prior = f.read<double>(group + "/prior");
  const auto shape = f.shape(group + "/stats");
  r.rows = shape[1];
  r.genes = shape[2];
  return r;
}

void expect_stats_match(const DeStats& s, const RFits& r, std::int64_t row, const std::string& what,
                        double* worst_logfc, double* worst_p, double* worst_adj) {
  ASSERT_EQ(static_cast<std::int64_t>(s.logfc.size()), r.genes);
  Close c_lfc{rel_tol, 1e-12}, c_t{rel_tol, 1e-9}, c_p{rel_tol, 1e-300}, c_adj{rel_tol, 1e-300};
  for (std::int64_t g = 0; g < r.genes; ++g) {
    const auto i = static_cast<std::size_t>(g);
    EXPECT_TRUE(c_lfc(s.logfc[i], r.stat(0, row, g)))
        << what << " gene " << g << " logFC " << s.logfc[i] << " R " << r.stat(0, row, g);
    EXPECT_TRUE(c_t(s.t[i], r.stat(1, row, g)))
        << what << " gene " << g << " t " << s.t[i] << " R " << r.stat(1, row, g);
    EXPECT_TRUE(c_p(s.p_value[i], r.stat(2, row, g)))
        << what << " gene " << g << " P.Value " << s.p_value[i] << " R " << r.stat(2, row, g);
    EXPECT_TRUE(c_adj(s.adj_p_value[i], r.stat(3, row, g)))
        << what << " gene " << g << " adj.P.Val " << s.adj_p_value[i] << " R " << r.stat(3, row, g);
  }
  *worst_logfc = std::max(*worst_logfc, c_lfc.worst);
  *worst_p = std::max(*worst_p, c_p.worst);
  *worst_adj = std::max(*worst_adj, c_adj.worst);
}

void expect_prior_match(const DeStats& s, const RFits& r, std::int64_t row,
                        const std::string& what) {
  Close c{1e-9, 0.0};
  EXPECT_TRUE(c(s.s2_prior, r.prior_of(0, row)))
      << what << " s2.prior " << s.s2_prior << " R " << r.prior_of(0, row);
  if (std::isinf(r.prior_of(1, row))) {
    EXPECT_TRUE(std::isinf(s.df_prior)) << what << " df.prior " << s.df_prior << " R Inf";
  } else {
    EXPECT_TRUE(c(s.df_prior, r.prior_of(1, row)))
        << what << " df.prior " << s.df_prior << " R " << r.prior_of(1, row);
  }
  EXPECT_TRUE(c(s.df_total, r.prior_of(2, row)))
      << what << " df.total " << s.df_total << " R " << r.prior_of(2, row);
}

/// Checks limma_one_vs_all / limma_all_vs_all on pb against R's results in group.
void check_limma_against_r(const Pseudobulk& pb, const std::string& group) {
  const auto f = fixture();
  double worst_lfc = 0, worst_p = 0, worst_adj = 0;
  const RFits r_ova = r_fits(f, group + "/ova");
  ASSERT_EQ(r_ova.genes, pb.n_genes);
  const auto ova = limma_one_vs_all(pb);
  for (const std::int32_t c : pb.tested_clusters) {
    const std::string what = group + " OVA cluster " + std::to_string(c);
    const DeStats& s = ova[static_cast<std::size_t>(c)];
    expect_prior_match(s, r_ova, c, what);
    expect_stats_match(s, r_ova, c, what, &worst_lfc, &worst_p, &worst_adj);
  }
  const auto ava = limma_all_vs_all(pb);
  const auto pair_a = f.read<std::int32_t>(group + "/ava/pair_a");
  const auto pair_b = f.read<std::int32_t>(group + "/ava/pair_b");
  // R's combn order over the sorted levels "c_i".
  EXPECT_EQ(ava.first, pair_a);
  EXPECT_EQ(ava.second, pair_b);
  ASSERT_EQ(ava.stats.size(), pair_a.size());
  RFits r_ava = r_fits(f, group + "/ava");
  r_ava.prior.resize(3 * static_cast<std::size_t>(r_ava.rows));  // one prior for all contrasts
  for (int field = 2; field >= 0; --field)
    for (std::int64_t k = 0; k < r_ava.rows; ++k)
      r_ava.prior[static_cast<std::size_t>(field * r_ava.rows + k)] =
          r_ava.prior[static_cast<std::size_t>(field)];
  for (std::size_t k = 0; k < ava.stats.size(); ++k) {
    const std::string what =
        group + " AVA " + std::to_string(pair_a[k]) + " - " + std::to_string(pair_b[k]);
    expect_prior_match(ava.stats[k], r_ava, static_cast<std::int64_t>(k), what);
    expect_stats_match(ava.stats[k], r_ava, static_cast<std::int64_t>(k), what, &worst_lfc,
                       &worst_p, &worst_adj);
  }
  std::cout << "[ limma vs R ] " << group << ": largest relative deviation logFC " << worst_lfc
            << ", P.Value " << worst_p << ", adj.P.Val " << worst_adj << "\n";
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ------------------------------------------------------------------ pseudobulk

TEST(Pseudobulk, EqualsPairotRecipe) {
  const CountsData d = counts_data();
  const Pseudobulk pb = pseudobulk(d.counts, d.samples, d.clusters);
  const auto f = fixture();
  EXPECT_EQ(pb.group_sample, f.read<std::int32_t>("counts/pseudobulk/sample"));
  EXPECT_EQ(pb.group_cluster, f.read<std::int32_t>("counts/pseudobulk/cluster"));
  EXPECT_EQ(pb.group_cells, f.read<std::int64_t>("counts/pseudobulk/n_cells"));
  EXPECT_EQ(pb.tested_clusters, (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(pb.skipped_clusters, (std::vector<std::int32_t>{4}));  // "rare DC": one cell per sample
  EXPECT_EQ(pb.cluster_rank[4], -1);
  const auto ref = f.read<double>("counts/pseudobulk/values");
  ASSERT_EQ(pb.values.size(), ref.size());
  std::size_t exact = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    // Both are float32 values; log1pf of numpy and of the C library may differ
    // in the last bit, nothing else may.
    const float a = static_cast<float>(pb.values[i]), b = static_cast<float>(ref[i]);
    EXPECT_EQ(static_cast<double>(a), pb.values[i]);
    EXPECT_LE(std::fabs(a - b), std::nextafter(std::max(a, b), 1e30f) - std::max(a, b)) << i;
    exact += a == b;
  }
  std::cout << "[ pseudobulk ] " << exact << " of " << ref.size()
            << " values bit-equal to numpy's\n";
  EXPECT_GE(exact, ref.size() * 99 / 100);
}

TEST(Pseudobulk, RepeatsPairotsFloat32SumsForNonIntegerCounts) {
  // Counts × 1000.37 (float32): group totals near 1e8, where the float32 order
  // of numpy's pairwise sums decides the last bits.
  CountsData d = counts_data();
  for (float& v : d.counts.values) v = v * 1000.37f;
  const Pseudobulk pb = pseudobulk(d.counts, d.samples, d.clusters);
  const auto ref = fixture().read<double>("counts/pseudobulk/values_times_1000.37");
  ASSERT_EQ(pb.values.size(), ref.size());
  std::size_t exact = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) exact += pb.values[i] == ref[i];
  std::cout << "[ pseudobulk ] counts x 1000.37: " << exact << " of " << ref.size()
            << " values bit-equal\n";
  EXPECT_EQ(exact, ref.size());
}

TEST(Pseudobulk, SumsAndScalesAGroup) {
  // 2 samples × 2 clusters; (s1, c1) has one cell only.
  data::HostCsr x;
  x.rows = 7;
  x.cols = 3;
  x.indptr = {0, 2, 3, 5, 6, 7, 9, 9};
  x.indices = {0, 2, 1, 0, 1, 2, 0, 1, 2};
  x.values = {1, 3, 4, 2, 2, 5, 1, 3, 3};
  Labels samples{{1, 0, 0, 1, 0, 1, 0}, {"a", "b"}};
  Labels clusters{{1, 1, 0, 1, 0, 0, 1}, {"x", "y"}};
  const Pseudobulk pb = pseudobulk(x, samples, clusters);
  // First appearance: sample 1, then 0; cluster 1 ("c_0"), then 0 ("c_1").
  EXPECT_EQ(pb.group_sample, (std::vector<std::int32_t>{1, 0, 0}));
  EXPECT_EQ(pb.group_cluster, (std::vector<std::int32_t>{1, 1, 0}));
  EXPECT_EQ(pb.group_cells, (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(pb.cluster_rank, (std::vector<std::int32_t>{1, 0}));
  ASSERT_EQ(pb.n_groups, 3);
  // Group (1, 1): cells 0 and 3, sums {1, 0, 3 + 5}, total 9.
  EXPECT_EQ(pb.values[0], static_cast<double>(std::log1p(1.0f * (100000.0f / 9.0f))));
  EXPECT_EQ(pb.values[1], 0.0);
  EXPECT_EQ(pb.values[2], static_cast<double>(std::log1p(8.0f * (100000.0f / 9.0f))));
  // Group (0, 1): cells 1 and 6 (empty), sums {0, 4, 0}.
  EXPECT_EQ(pb.values[4], static_cast<double>(std::log1p(4.0f * (100000.0f / 4.0f))));
  // Group (0, 0): cells 2 and 4, sums {2 + 1, 2, 0}, total 5.
  EXPECT_EQ(pb.values[6], static_cast<double>(std::log1p(3.0f * (100000.0f / 5.0f))));
  EXPECT_EQ(pb.values[7], static_cast<double>(std::log1p(2.0f * (100000.0f / 5.0f))));
  EXPECT_EQ(pb.values[8], 0.0);
}

// ------------------------------------------------------------------- limma

TEST(Limma, SpecialFunctionsEqualR) {
  const auto f = fixture();
  const auto x = f.read<double>("special/trigamma_inverse_x");
  const auto y = f.read<double>("special/trigamma_inverse");
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(trigamma_inverse(x[i]), y[i], 1e-12 * y[i]) << "trigammaInverse(" << x[i] << ")";
  EXPECT_TRUE(std::isnan(trigamma_inverse(-1.0)));
  const auto t = f.read<double>("special/pt_t");
  const auto df = f.read<double>("special/pt_df");
  const auto p = f.read<double>("special/pt_p");
  Close close{1e-12, 1e-300};
  for (std::size_t i = 0; i < t.size(); ++i)
    EXPECT_TRUE(close(two_sided_t_p(t[i], df[i]), p[i]))
        << "2 pt(-|" << t[i] << "|, " << df[i] << ") = " << two_sided_t_p(t[i], df[i]) << ", R "
        << p[i];
  std::cout << "[ special ] largest relative deviation of p from R: " << close.worst << "\n";
  EXPECT_NEAR(two_sided_t_p(1.959963984540054, std::numeric_limits<double>::infinity()), 0.05,
              1e-15);
}

TEST(Limma, BenjaminiHochbergAsPAdjust) {
  // p.adjust(c(0.01, 0.04, 0.03, 0.04, 0.5, 0.001), "BH") in R:
  // 0.030 0.048 0.048 0.048 0.500 0.006
  const auto q = p_adjust_bh({0.01, 0.04, 0.03, 0.04, 0.5, 0.001});
  const std::vector<double> r{0.03, 0.048, 0.048, 0.048, 0.5, 0.006};
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_NEAR(q[i], r[i], 1e-15) << i;
}

TEST(Limma, PseudobulkOfCountsEqualsR) {
  // R's input is the fixture's pseudobulk (numpy's float32); kotml's own
  // pseudobulk supplies the groups' order and the renaming.
  const CountsData d = counts_data();
  Pseudobulk pb = pseudobulk(d.counts, d.samples, d.clusters);
  pb.values = fixture().read<double>("counts/pseudobulk/values");
  check_limma_against_r(pb, "counts/limma");
}

TEST(Limma, EdgeCasesEqualR) {
  // All-zero genes, constant genes, a cluster with a single group and genes
  // that only its group expresses.
  check_limma_against_r(direct_pseudobulk("edge"), "edge/limma");
}

TEST(Limma, InfinitePriorDegreesOfFreedomEqualR) {
  const Pseudobulk pb = direct_pseudobulk("infdf");
  const auto ava = limma_all_vs_all(pb);
  EXPECT_TRUE(std::isinf(ava.stats[0].df_prior));
  EXPECT_EQ(ava.stats[0].df_total, 9.0 * static_cast<double>(pb.n_genes));  // df.pooled
  check_limma_against_r(pb, "infdf/limma");
}

TEST(Limma, ElevenClustersAndFarTailEqualR) {
  // R's levels: c_0, c_1, c_10, c_2, …; p-values down to ~1e-33.
  const Pseudobulk pb = direct_pseudobulk("many");
  const auto levels = r_level_order(pb);
  ASSERT_EQ(levels.size(), 11u);
  EXPECT_EQ(pb.cluster_rank[static_cast<std::size_t>(levels[2])], 10);
  EXPECT_EQ(pb.cluster_rank[static_cast<std::size_t>(levels[3])], 2);
  check_limma_against_r(pb, "many/limma");
}

TEST(Limma, ContrastsOfOrthogonalDesignMatchDirectFit) {
  // For ~0 + cluster, a contrast's stdev.unscaled is √(1/n_a + 1/n_b) and its
  // coefficient the difference of the cluster means.
  const Pseudobulk pb = direct_pseudobulk("edge");
  const auto ava = limma_all_vs_all(pb);
  const std::int32_t a = ava.first[0], b = ava.second[0];
  double mean_a = 0, mean_b = 0;
  int n_a = 0, n_b = 0;
  const std::int64_t gene = 20;
  for (std::int64_t i = 0; i < pb.n_groups; ++i) {
    const double v = pb.values[static_cast<std::size_t>(i * pb.n_genes + gene)];
    if (pb.group_cluster[static_cast<std::size_t>(i)] == a) mean_a += v, ++n_a;
    if (pb.group_cluster[static_cast<std::size_t>(i)] == b) mean_b += v, ++n_b;
  }
  EXPECT_NEAR(ava.stats[0].logfc[gene], mean_a / n_a - mean_b / n_b, 1e-12);
}

TEST(Limma, NoResidualDegreesOfFreedomIsAnError) {
  Pseudobulk pb;
  pb.n_groups = 3;
  pb.n_genes = 4;
  pb.values = {1, 2, 3, 4, 2, 2, 1, 0, 5, 1, 1, 1};
  pb.group_sample = {0, 0, 0};
  pb.group_cluster = {0, 1, 2};
  pb.cluster_rank = {0, 1, 2};
  pb.tested_clusters = {0, 1, 2};
  const std::string message = error_of([&] { limma_all_vs_all(pb); });
  EXPECT_NE(message.find("no residual degrees of freedom"), std::string::npos) << message;
}

// ------------------------------------------------------------------- AUROC

TEST(Auroc, EqualsScikitLearn) {
  const CountsData d = counts_data();
  const data::HostCsr by_gene = data::transpose(d.counts);
  std::vector<std::int32_t> cluster = d.clusters.codes;
  for (auto& c : cluster)
    if (c == 4) c = -1;  // the skipped cluster, as in the fixture
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  for (std::int32_t a = 0; a < 4; ++a)
    for (std::int32_t b = 0; b < 4; ++b)
      if (a != b) pairs.emplace_back(a, b);
  const AurocResult r = auroc(by_gene, cluster, 5, pairs);
  const auto f = fixture();
  const auto ova = f.read<double>("counts/auroc/ova");  // clusters × genes
  const auto ava = f.read<double>("counts/auroc/ava");  // clusters × clusters × genes
  const std::int64_t n = r.n_genes;
  double worst = 0;
  for (std::int64_t g = 0; g < n; ++g) {
    for (std::int32_t c = 0; c < 4; ++c) {
      const double mine = r.ova[static_cast<std::size_t>(g * 5 + c)],
                   ref = ova[static_cast<std::size_t>(c * n + g)];
      EXPECT_NEAR(mine, ref, 1e-12) << "OVA gene " << g << " cluster " << c;
      worst = std::max(worst, std::fabs(mine - ref));
    }
    EXPECT_EQ(r.ova[static_cast<std::size_t>(g * 5 + 4)], 0.5);  // no cells: pairOT's 0.5
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const auto [a, b] = pairs[k];
      const double mine = r.ava[static_cast<std::size_t>(g) * pairs.size() + k];
      const double ref = ava[static_cast<std::size_t>((a * 5 + b) * n + g)];
      EXPECT_NEAR(mine, ref, 1e-12) << "AVA gene " << g << " " << a << " vs " << b;
      worst = std::max(worst, std::fabs(mine - ref));
    }
  }
  std::cout << "[ auroc vs scikit-learn ] largest deviation " << worst << "\n";
  EXPECT_EQ(r.ova[0], 0.5);  // gene 0 is all zeros
}

TEST(Auroc, TiesAndZerosByHand) {
  // One gene, cells (cluster: value): 0:{0, 2, 2}, 1:{2, 5, 0, 0}.
  data::HostCsr x;
  x.rows = 1;
  x.cols = 7;
  x.indptr = {0, 4};
  x.indices = {1, 2, 3, 4};
  x.values = {2, 2, 2, 5};
  const std::vector<std::int32_t> cluster{0, 0, 0, 1, 1, 1, 1};
  const AurocResult r = auroc(x, cluster, 2, {{0, 1}, {1, 0}});
  // Pairs (a > b) + ½ ties: cluster 0 values {0,2,2} vs {2,5,0,0}:
  // 0: ties 2 zeros (1), beats none → 1; 2: beats 2 zeros (2) + tie with 2 (0.5), twice → 5.
  const double u = 1.0 + 5.0;
  EXPECT_EQ(r.ova[0], u / 12.0);
  EXPECT_EQ(r.ava[0], u / 12.0);
  EXPECT_EQ(r.ava[1], 1.0 - u / 12.0);
  EXPECT_EQ(r.ova[0] + r.ova[1], 1.0);
}

TEST(Auroc, DownsamplingKeepsSmallClustersWhole) {
  std::vector<std::int32_t> cluster;
  for (int i = 0; i < 300; ++i) cluster.push_back(i % 3 == 0 ? 0 : (i % 3 == 1 ? 1 : -1));
  for (int i = 0; i < 40; ++i) cluster.push_back(2);
  const auto keep = downsample_cells(cluster, 3, 60, 5);
  std::vector<int> kept(3, 0);
  for (std::size_t i = 0; i < keep.size(); ++i) {
    if (cluster[i] < 0) {
      EXPECT_EQ(keep[i], 0);
    }
    if (keep[i]) ++kept[static_cast<std::size_t>(cluster[i])];
  }
  EXPECT_EQ(kept, (std::vector<int>{60, 60, 40}));
  EXPECT_EQ(keep, downsample_cells(cluster, 3, 60, 5));
  EXPECT_NE(keep, downsample_cells(cluster, 3, 60, 6));
  const auto all = downsample_cells(cluster, 3, 0, 5);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], cluster[i] >= 0 ? 1 : 0);
  EXPECT_EQ(all, downsample_cells(cluster, 3, 100, 5));  // every cluster ≤ 100 cells
}

// --------------------------------------------------------------- DE tables

TEST(DeTables, CombineLimmaAndPairotsFloat32Auroc) {
  const CountsData d = counts_data();
  const DeTables t = de_tables(d.counts, d.samples, d.clusters, {0, 0});
  EXPECT_EQ(t.clusters, (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(t.skipped_clusters, (std::vector<std::int32_t>{4}));
  EXPECT_TRUE(t.ova[4].empty());
  EXPECT_FALSE(error_of([&] { t.one_vs_all(4); }).empty());
  EXPECT_FALSE(error_of([&] { t.all_vs_all(0, 4); }).empty());

  const auto f = fixture();
  const auto ova_ref = f.read<double>("counts/auroc/ova");
  const auto ava_ref = f.read<double>("counts/auroc/ava");
  const std::int64_t n = t.n_genes;
  // OVA: float32 of the exact AUROC (4 clusters: no second-of-two rule).
  for (const std::int32_t c : t.clusters)
    for (std::int64_t g = 0; g < n; ++g)
      EXPECT_NEAR(t.one_vs_all(c).auroc[static_cast<std::size_t>(g)],
                  static_cast<float>(ova_ref[static_cast<std::size_t>(c * n + g)]), 1e-7);
  // AVA: logFC flips sign, p-values are shared, AUROCs are complementary, the
  // cluster whose name sorts second gets float(1 − float(first)).
  for (const std::int32_t a : t.clusters)
    for (const std::int32_t b : t.clusters) {
      if (a >= b) continue;
      const DeTable& ab = t.all_vs_all(a, b);
      const DeTable& ba = t.all_vs_all(b, a);
      const bool a_first = d.clusters.names[static_cast<std::size_t>(a)] <
                           d.clusters.names[static_cast<std::size_t>(b)];
      for (std::int64_t g = 0; g < n; ++g) {
        const auto i = static_cast<std::size_t>(g);
        EXPECT_EQ(ab.logfc[i], -ba.logfc[i]);
        EXPECT_EQ(ab.p_value[i], ba.p_value[i]);
        EXPECT_EQ(ab.adj_p_value[i], ba.adj_p_value[i]);
        const double exact_ab = ava_ref[static_cast<std::size_t>((a * 5 + b) * n + g)];
        const float first = static_cast<float>(a_first ? exact_ab : 1.0 - exact_ab);
        const float second = static_cast<float>(1.0 - static_cast<double>(first));
        EXPECT_EQ(a_first ? ab.auroc[i] : ba.auroc[i], first) << g;
        EXPECT_EQ(a_first ? ba.auroc[i] : ab.auroc[i], second) << g;
      }
    }
  // limma parts equal R's (the tables' limma is run on kotml's own pseudobulk).
  const RFits r = r_fits(f, "counts/limma/ova");
  Close c{rel_tol, 1e-12};
  for (const std::int32_t k : t.clusters)
    for (std::int64_t g = 0; g < n; ++g) {
      EXPECT_TRUE(c(t.one_vs_all(k).logfc[static_cast<std::size_t>(g)], r.stat(0, k, g)))
          << k << " " << g;
      EXPECT_TRUE(c(t.one_vs_all(k).adj_p_value[static_cast<std::size_t>(g)], r.stat(3, k, g)))
          << k << " " << g;
    }
  EXPECT_FALSE(t.warnings.empty());  // all-zero genes: limma's zero-variance warning
}

TEST(DeTables, TwoClustersDeriveTheSecondAuroc) {
  CountsData d = counts_data();
  // Keep clusters "B cell" (0) and "T cell" (3) only.
  data::HostCsr x;
  x.cols = d.counts.cols;
  x.indptr = {0};
  Labels s{{}, d.samples.names}, c{{}, {"T cell", "B cell"}};  // codes: 0 = T, 1 = B
  for (std::int64_t i = 0; i < d.counts.rows; ++i) {
    const std::int32_t code = d.clusters.codes[static_cast<std::size_t>(i)];
    if (code != 0 && code != 3) continue;
    for (std::int64_t k = d.counts.indptr[static_cast<std::size_t>(i)];
         k < d.counts.indptr[static_cast<std::size_t>(i) + 1]; ++k) {
      x.indices.push_back(d.counts.indices[static_cast<std::size_t>(k)]);
      x.values.push_back(d.counts.values[static_cast<std::size_t>(k)]);
    }
    x.indptr.push_back(static_cast<std::int64_t>(x.values.size()));
    s.codes.push_back(d.samples.codes[static_cast<std::size_t>(i)]);
    c.codes.push_back(code == 3 ? 0 : 1);
    ++x.rows;
  }
  const DeTables t = de_tables(x, s, c, {0, 0});
  // "B cell" sorts first: its AUROC is float(exact); "T cell" gets float(1 − that).
  const AurocResult r = auroc(data::transpose(x), c.codes, 2, {});
  for (std::int64_t g = 0; g < t.n_genes; ++g) {
    const auto i = static_cast<std::size_t>(g);
    const float first = static_cast<float>(r.ova[i * 2 + 1]);
    EXPECT_EQ(t.one_vs_all(1).auroc[i], first);
    EXPECT_EQ(t.one_vs_all(0).auroc[i], static_cast<float>(1.0 - static_cast<double>(first)));
    EXPECT_NEAR(t.one_vs_all(0).logfc[i], -t.one_vs_all(1).logfc[i], 1e-12);
  }
}

TEST(DeTables, BadInputIsOneLineError) {
  const CountsData d = counts_data();
  const auto expect_error = [](const std::function<void()>& body, const std::string& words) {
    const std::string message = error_of(body);
    EXPECT_NE(message.find(words), std::string::npos) << "message: '" << message << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos);
  };
  CountsData bad = d;
  bad.counts.values[5] = -1.0f;
  expect_error([&] { de_tables(bad.counts, bad.samples, bad.clusters); }, "raw counts");
  bad = d;
  bad.counts.values[7] = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { de_tables(bad.counts, bad.samples, bad.clusters); }, "NaN");
  bad = d;
  bad.clusters.codes[3] = 9;
  expect_error([&] { de_tables(bad.counts, bad.samples, bad.clusters); }, "categories");
  bad = d;
  bad.samples.codes.pop_back();
  expect_error([&] { de_tables(bad.counts, bad.samples, bad.clusters); }, "labels for");
  // One cluster only.
  bad = d;
  std::fill(bad.clusters.codes.begin(), bad.clusters.codes.end(), 2);
  expect_error([&] { de_tables(bad.counts, bad.samples, bad.clusters); }, "at least 2");
  // Two clusters, one of them without a group of two cells in any sample.
  bad = d;
  for (std::size_t i = 0; i < bad.clusters.codes.size(); ++i)
    bad.clusters.codes[i] = bad.clusters.codes[i] == 4 ? 4 : 0;
  expect_error([&] { de_tables(bad.counts, bad.samples, bad.clusters); },
               "1 cluster(s) with a pseudobulk group");
  expect_error([&] { auroc(data::transpose(bad.counts), std::vector<std::int32_t>(3, 0), 1, {}); },
               "labels for");
}

// ------------------------------------------------------------ pairOT itself

TEST(DeTables, EqualPairotsOwnTablesOnItsTestData) {
  // pairot.pp.rank_genes_limma on the query half of pairOT's test fixture
  // (pbmc68k_reduced pseudo-counts, 5 clusters, 3 donors, 60 genes; made by
  // fixtures/de_pairot_fixture.py): limma through rpy2, AUROC in Cython.
  const auto f = io::h5::File::open_read(test::test_source_path("map/fixtures/de_pairot.h5"));
  CountsData d;
  const auto shape = f.read<std::int64_t>("counts/shape");
  d.counts.rows = shape[0];
  d.counts.cols = shape[1];
  d.counts.indptr = f.read<std::int64_t>("counts/indptr");
  d.counts.indices = f.read<kotml::io::SparseIndex>("counts/indices");
  d.counts.values = f.read<float>("counts/values");
  d.samples = {f.read<std::int32_t>("counts/sample"), f.read_strings("counts/sample_names")};
  d.clusters = {f.read<std::int32_t>("counts/cluster"), f.read_strings("counts/cluster_names")};
  const DeTables t =
      de_tables(d.counts, d.samples, d.clusters);  // n_samples_auroc 10000: no downsampling
  const auto n = static_cast<std::int64_t>(d.clusters.names.size());
  const std::int64_t genes = t.n_genes;
  ASSERT_EQ(t.clusters.size(), static_cast<std::size_t>(n));
  Close c_lfc{rel_tol, 1e-12}, c_p{rel_tol, 1e-300}, c_adj{rel_tol, 1e-300};
  std::int64_t auroc_equal = 0, auroc_total = 0;
  const auto compare = [&](const DeTable& table, const std::string& group, std::int64_t row,
                           const std::string& what) {
    const auto logfc = f.read<double>(group + "/logFC");
    const auto p = f.read<double>(group + "/P.Value");
    const auto adj = f.read<double>(group + "/adj.P.Val");
    const auto au = f.read<float>(group + "/auroc");
    for (std::int64_t g = 0; g < genes; ++g) {
      const auto i = static_cast<std::size_t>(row * genes + g);
      const auto j = static_cast<std::size_t>(g);
      EXPECT_TRUE(c_lfc(table.logfc[j], logfc[i]))
          << what << " gene " << g << " logFC " << table.logfc[j] << " pairOT " << logfc[i];
      EXPECT_TRUE(c_p(table.p_value[j], p[i]))
          << what << " gene " << g << " P.Value " << table.p_value[j] << " pairOT " << p[i];
      EXPECT_TRUE(c_adj(table.adj_p_value[j], adj[i]))
          << what << " gene " << g << " adj.P.Val " << table.adj_p_value[j] << " pairOT " << adj[i];
      // pairOT's float32 AUROC, bit for bit.
      EXPECT_EQ(table.auroc[j], au[i]) << what << " gene " << g;
      auroc_equal += table.auroc[j] == au[i];
      ++auroc_total;
    }
  };
  for (std::int32_t a = 0; a < n; ++a) {
    compare(t.one_vs_all(a), "ova", a, "OVA " + d.clusters.names[static_cast<std::size_t>(a)]);
    for (std::int32_t b = 0; b < n; ++b)
      if (a != b)
        compare(t.all_vs_all(a, b), "ava", a * n + b,
                "AVA " + d.clusters.names[static_cast<std::size_t>(a)] + " vs " +
                    d.clusters.names[static_cast<std::size_t>(b)]);
  }
  std::cout << "[ pairOT ] largest relative deviation logFC " << c_lfc.worst << ", P.Value "
            << c_p.worst << ", adj.P.Val " << c_adj.worst << "; AUROC bit-equal " << auroc_equal
            << " of " << auroc_total << "\n";
}

// -------------------------------------------------------------------- MPI

TEST(DeTablesMpi, GatheredTablesEqualOneRankBitForBit) {
  const dist::Comm comm;
  const CountsData d = counts_data();
  // 20 cells per cluster for the AUROC: the large clusters are downsampled.
  const DeOptions options{20, 11};
  const DeTables one = de_tables(d.counts, d.samples, d.clusters, options);
  // Each rank holds only its block of cells.
  const dist::Block cells = dist::block_of(d.counts.rows, comm.size(), comm.rank());
  std::vector<std::int64_t> every_gene(static_cast<std::size_t>(d.counts.cols));
  std::iota(every_gene.begin(), every_gene.end(), 0);
  const auto mine = data::select_columns(d.counts, every_gene, cells.begin, cells.end);
  const DeTables all = de_tables(comm, mine, cells.begin, d.samples, d.clusters, options);
  const auto same_bits = [](const auto& a, const auto& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
  };
  ASSERT_EQ(one.ova.size(), all.ova.size());
  ASSERT_EQ(one.ava.size(), all.ava.size());
  const auto same_table = [&](const DeTable& a, const DeTable& b) {
    return same_bits(a.logfc, b.logfc) && same_bits(a.p_value, b.p_value) &&
           same_bits(a.adj_p_value, b.adj_p_value) && same_bits(a.auroc, b.auroc);
  };
  for (std::size_t i = 0; i < one.ova.size(); ++i)
    EXPECT_TRUE(same_table(one.ova[i], all.ova[i])) << i;
  for (std::size_t i = 0; i < one.ava.size(); ++i)
    EXPECT_TRUE(same_table(one.ava[i], all.ava[i])) << i;
  // Downsampling changed the AUROC of a large cluster (and nothing else).
  const DeTables whole = de_tables(d.counts, d.samples, d.clusters, {0, 0});
  EXPECT_FALSE(same_bits(whole.one_vs_all(3).auroc, one.one_vs_all(3).auroc));
  EXPECT_TRUE(same_bits(whole.one_vs_all(3).logfc, one.one_vs_all(3).logfc));
  // A failure on the ranks' input is agreed on.
  // A failure on one rank's cells (the first cell, rank 0's) is agreed on.
  auto bad = mine;
  if (comm.rank() == 0) {
    ASSERT_FALSE(bad.values.empty());
    bad.values[0] = -2.0f;
  }
  EXPECT_THROW(de_tables(comm, bad, cells.begin, d.samples, d.clusters, options), dist::CollectiveError);
}

/// This rank's block of n cells when the blocks are uneven: rank 0's is empty
/// on 2 and 3 ranks, the last rank's the largest.
std::pair<std::int64_t, std::int64_t> uneven_block(const dist::Comm& comm, std::int64_t n) {
  const auto boundary = [&](int r) -> std::int64_t {
    if (r == comm.size()) return n;
    return r <= 1 ? 0 : n * r / (comm.size() + 1);
  };
  return {boundary(comm.rank()), boundary(comm.rank() + 1)};
}

/// The cells' rows [begin, end) of a one-process matrix, every gene.
data::HostCsr rows_of(const data::HostCsr& x, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> every_gene(static_cast<std::size_t>(x.cols));
  std::iota(every_gene.begin(), every_gene.end(), 0);
  return data::select_columns(x, every_gene, begin, end);
}

TEST(DeTablesMpi, GeneBlocksHoldTheTransposeOfTheWholeMatrix) {
  const dist::Comm comm;
  const CountsData d = counts_data();
  const std::int64_t n = d.counts.rows;
  const auto block_of_rank = uneven_block(comm, n);
  const std::int64_t begin = block_of_rank.first, end = block_of_rank.second;
  const auto block = data::transpose_to_column_blocks(comm, rows_of(d.counts, begin, end), begin, n);
  const auto whole = data::transpose(d.counts);
  const dist::Block genes = dist::block_of(d.counts.cols, comm.size(), comm.rank());
  ASSERT_EQ(block.rows, genes.end - genes.begin);
  ASSERT_EQ(block.cols, n);
  const auto base = whole.indptr[static_cast<std::size_t>(genes.begin)];
  for (std::int64_t j = 0; j <= block.rows; ++j)
    ASSERT_EQ(block.indptr[static_cast<std::size_t>(j)], whole.indptr[static_cast<std::size_t>(genes.begin + j)] - base);
  for (std::size_t k = 0; k < block.values.size(); ++k) {
    ASSERT_EQ(block.indices[k], whole.indices[static_cast<std::size_t>(base) + k]) << k;
    ASSERT_EQ(std::memcmp(&block.values[k], &whole.values[static_cast<std::size_t>(base) + k], sizeof(float)), 0) << k;
  }
  // Blocks that do not tile the cells are kotml's bug, refused on every rank.
  EXPECT_THROW(data::transpose_to_column_blocks(comm, rows_of(d.counts, 0, 1), 0, n), InternalError);
}

TEST(DeTablesMpi, PseudobulkSumsAddCellsInCellOrderOnAnyRanks) {
  const dist::Comm comm;
  CountsData d = counts_data();
  // Large non-integer "counts": float32 group sums that round, so that the order
  // of the additions shows in their bits.
  for (auto& v : d.counts.values) v = v * 1234.567f + 0.3f;
  const Pseudobulk pb = pseudobulk(d.counts, d.samples, d.clusters);

  // The sums as pairOT's ones @ X adds them: cell after cell.
  Pseudobulk in_cell_order = pseudobulk_groups(d.samples, d.clusters, d.counts.cols);
  std::vector<float> sums(static_cast<std::size_t>(in_cell_order.n_groups * d.counts.cols), 0.0f),
      reversed(sums.size(), 0.0f);
  for (std::int64_t i = 0; i < d.counts.rows; ++i) {
    const auto g = in_cell_order.group_of_cell[static_cast<std::size_t>(i)];
    if (g < 0) continue;
    for (auto k = d.counts.indptr[static_cast<std::size_t>(i)]; k < d.counts.indptr[static_cast<std::size_t>(i) + 1]; ++k)
      sums[static_cast<std::size_t>(g * d.counts.cols + d.counts.indices[static_cast<std::size_t>(k)])] +=
          d.counts.values[static_cast<std::size_t>(k)];
  }
  for (std::int64_t i = d.counts.rows - 1; i >= 0; --i) {
    const auto g = in_cell_order.group_of_cell[static_cast<std::size_t>(i)];
    if (g < 0) continue;
    for (auto k = d.counts.indptr[static_cast<std::size_t>(i)]; k < d.counts.indptr[static_cast<std::size_t>(i) + 1]; ++k)
      reversed[static_cast<std::size_t>(g * d.counts.cols + d.counts.indices[static_cast<std::size_t>(k)])] +=
          d.counts.values[static_cast<std::size_t>(k)];
  }
  ASSERT_NE(std::memcmp(sums.data(), reversed.data(), sums.size() * sizeof(float)), 0)
      << "the data must make the order of the additions visible";
  scale_group_sums(in_cell_order, sums);
  ASSERT_EQ(pb.values.size(), in_cell_order.values.size());
  EXPECT_EQ(std::memcmp(pb.values.data(), in_cell_order.values.data(), pb.values.size() * sizeof(double)), 0);

  // Spread over the ranks: the tables of the one-process run, bit for bit.
  const DeOptions options{0, 0};
  const DeTables one = de_tables(d.counts, d.samples, d.clusters, options);
  const dist::Block cells = dist::block_of(d.counts.rows, comm.size(), comm.rank());
  const DeTables all = de_tables(comm, rows_of(d.counts, cells.begin, cells.end), cells.begin, d.samples,
                                 d.clusters, options);
  for (const std::int32_t c : one.clusters) {
    const auto& a = one.one_vs_all(c).logfc;
    const auto& b = all.one_vs_all(c).logfc;
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0) << c;
  }
}

TEST(GeneTotalsMpi, SameBitsForAnySplitOfTheCells) {
  const dist::Comm comm;
  // 301 cells, 3 genes: fractions, fractions beside large values (their double
  // sums round differently in another order), and integer counts.
  data::HostCsr x;
  x.rows = 301;
  x.cols = 3;
  x.indptr.assign(1, 0);
  for (std::int64_t i = 0; i < x.rows; ++i) {
    const float column_values[3] = {0.1f * static_cast<float>(i % 7 + 1), i % 2 ? 3.0e7f + 0.25f : 0.3f,
                                    static_cast<float>(i % 5)};
    for (int j = 0; j < 3; ++j) {
      if (column_values[j] == 0.0f) continue;
      x.indices.push_back(j);
      x.values.push_back(column_values[j]);
    }
    x.indptr.push_back(static_cast<std::int64_t>(x.values.size()));
  }
  const auto whole = gene_totals(x);
  const dist::Block cells = dist::block_of(x.rows, comm.size(), comm.rank());
  const auto split = gene_totals(comm, rows_of(x, cells.begin, cells.end));
  ASSERT_EQ(whole.size(), split.size());
  EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(double)), 0);
  // The integer column is exact; the others are the exact sums rounded once.
  double integers = 0;
  for (std::int64_t i = 0; i < x.rows; ++i) integers += static_cast<double>(i % 5);
  EXPECT_EQ(whole[2], integers);
  // Exact in long double's 64 bits (the second column needs 57), rounded once.
  long double exact[2] = {0, 0};
  for (std::int64_t i = 0; i < x.rows; ++i) {
    for (std::int64_t p = x.indptr[static_cast<std::size_t>(i)]; p < x.indptr[static_cast<std::size_t>(i) + 1]; ++p)
      if (x.indices[static_cast<std::size_t>(p)] < 2)
        exact[x.indices[static_cast<std::size_t>(p)]] += static_cast<long double>(x.values[static_cast<std::size_t>(p)]);
  }
  EXPECT_EQ(whole[0], static_cast<double>(exact[0]));
  EXPECT_EQ(whole[1], static_cast<double>(exact[1]));
  // A count too large for the exact sum, on rank 0's cells only: every rank
  // throws the agreed error (none waits in the allreduce).
  auto huge = rows_of(x, cells.begin, cells.end);
  if (comm.rank() == 0) {
    ASSERT_FALSE(huge.values.empty());
    huge.values[0] = 1e38f;
  }
  EXPECT_THROW(gene_totals(comm, huge), dist::CollectiveError);
}

TEST(DeTablesMpi, FetchedRowsAreTheWholeMatrixsRows) {
  const dist::Comm comm;
  const CountsData d = counts_data();
  const std::int64_t n = d.counts.rows;
  const auto block_of_rank = uneven_block(comm, n);
  const std::int64_t begin = block_of_rank.first, end = block_of_rank.second;
  const auto mine = rows_of(d.counts, begin, end);
  // Each rank wants its own ascending selection, rows of every rank among them.
  std::vector<std::int64_t> wanted;
  for (std::int64_t i = 0; i < n; ++i)
    if ((i + comm.rank()) % 3 == 0) wanted.push_back(i);
  const auto fetch = [&](const std::vector<std::int64_t>& rows) {
    data::HostCsr out;
    out.cols = mine.cols;
    out.indptr.assign(1, 0);
    data::fetch_rows(comm, mine, begin, rows, out);
    return out;
  };
  const auto fetched = fetch(wanted);
  ASSERT_EQ(fetched.rows, static_cast<std::int64_t>(wanted.size()));
  ASSERT_EQ(fetched.cols, d.counts.cols);
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    const auto r = static_cast<std::size_t>(wanted[k]);
    const auto length = d.counts.indptr[r + 1] - d.counts.indptr[r];
    ASSERT_EQ(fetched.indptr[k + 1] - fetched.indptr[k], length) << wanted[k];
    for (std::int64_t e = 0; e < length; ++e) {
      const auto from = static_cast<std::size_t>(d.counts.indptr[r] + e);
      const auto to = static_cast<std::size_t>(fetched.indptr[k] + e);
      EXPECT_EQ(fetched.indices[to], d.counts.indices[from]);
      EXPECT_EQ(std::memcmp(&fetched.values[to], &d.counts.values[from], sizeof(float)), 0);
    }
  }
  // Nothing wanted is fine; a list out of order, or a row nobody holds, is kotml's bug on every rank.
  EXPECT_EQ(fetch({}).rows, 0);
  const std::vector<std::int64_t> unordered = comm.rank() == 0 ? std::vector<std::int64_t>{2, 1}
                                                                : std::vector<std::int64_t>{1, 2};
  EXPECT_THROW(fetch(unordered), InternalError);
  EXPECT_THROW(fetch({n}), InternalError);
}
