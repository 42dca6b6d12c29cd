// The host-side pairOT pipeline against pairOT 0.1 itself (fixtures made by
// tests/map/fixtures/labels_make_fixtures.py): cluster order, gene alignment,
// shared HVGs, marker filtering and selection, the label distance, marginals and
// rank features; plus hand-made cases for the edges the fixtures do not reach.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/map/features.hpp"
#include "kotml/map/genes.hpp"
#include "kotml/map/label_distance.hpp"
#include "kotml/map/marginals.hpp"
#include "kotml/map/markers.hpp"
#include "labels_fixture.hpp"

using namespace kotml;
using namespace kotml::map;
using kotml::map::fx::PairotFixture;

namespace {

const std::vector<std::string> sides{"query", "reference"};

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

std::vector<std::int64_t> genes_of(const GeneTable& t) { return t.gene; }

ClusterLabels labels_of(const PairotFixture& f, const std::string& side) {
  const io::AnnDataReader reader(f.input(side));
  return cluster_labels(reader.obs(fx::label_column(f.name)).as_strings());
}

/// Columns of `names` in the order of `wanted`.
std::vector<std::int64_t> columns_for(const std::vector<std::string>& names, const std::vector<std::string>& wanted) {
  std::vector<std::int64_t> cols;
  for (const auto& w : wanted) {
    const auto it = std::find(names.begin(), names.end(), w);
    EXPECT_NE(it, names.end()) << w;
    cols.push_back(it - names.begin());
  }
  return cols;
}

GeneTable table(std::vector<std::int64_t> gene, std::vector<double> lfc, std::vector<double> adj = {},
              std::vector<double> auroc = {}) {
  GeneTable t;
  t.gene = std::move(gene);
  t.log_fc = std::move(lfc);
  t.adj_p_value = adj.empty() ? std::vector<double>(t.gene.size(), 0.0) : std::move(adj);
  t.auroc = auroc.empty() ? std::vector<double>(t.gene.size(), 1.0) : std::move(auroc);
  return t;
}

MarkerList list_of(std::vector<std::int64_t> gene) {
  MarkerList l;
  l.gene = std::move(gene);
  for (std::size_t r = 0; r < l.gene.size(); ++r) l.log_fc.push_back(100.0 - static_cast<double>(r));
  l.source.assign(l.gene.size(), -1);
  return l;
}

}  // namespace

// ------------------------------------------------------------------ clusters

TEST(ClusterLabels, SortedNamesAsPairotNumbersThem) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    EXPECT_EQ(labels_of(f, "query").names, f.clusters_query) << name;
    EXPECT_EQ(labels_of(f, "reference").names, f.clusters_reference) << name;
  }
  // pbmc's file order is not sorted; pairOT's (and so kotml's) is.
  const io::AnnDataReader reader(PairotFixture("pbmc").input("query"));
  EXPECT_NE(reader.obs("bulk_labels").categories, PairotFixture("pbmc").clusters_query);

  const auto l = cluster_labels({"b", "a", "c", "a"});
  EXPECT_EQ(l.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(l.codes, (std::vector<std::int32_t>{1, 0, 2, 0}));
  EXPECT_THROW(cluster_labels({"a", ""}), Error);
}

// --------------------------------------------------------------------- genes

TEST(Genes, AlignmentMatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    const io::AnnDataReader q(f.input("query")), r(f.input("reference"));
    const auto a = align_genes(q.var_names(), gene_totals(q.read_csr<float>("X")), r.var_names(),
                               gene_totals(r.read_csr<float>("X")));
    EXPECT_EQ(as_set(a.names), as_set(f.aligned)) << name;
    EXPECT_EQ(a.names.size(), f.aligned.size()) << name;
    EXPECT_TRUE(std::is_sorted(a.query_index.begin(), a.query_index.end())) << "query order";
    for (std::size_t g = 0; g < a.names.size(); ++g) {
      EXPECT_EQ(q.var_names()[static_cast<std::size_t>(a.query_index[g])], a.names[g]);
      EXPECT_EQ(r.var_names()[static_cast<std::size_t>(a.reference_index[g])], a.names[g]);
    }
  }
}

TEST(Genes, StrictThresholdOnBothSidesAndUniqueNames) {
  const std::vector<std::string> qn{"A", "B", "C", "D"}, rn{"D", "C", "B", "E"};
  const auto a = align_genes(qn, {11, 10, 10.5, 50}, rn, {10.0001, 100, 11, 20});
  EXPECT_EQ(a.names, (std::vector<std::string>{"C", "D"}));
  EXPECT_EQ(a.reference_index, (std::vector<std::int64_t>{1, 0}));
  EXPECT_THROW(align_genes({"A", "A"}, {20, 20}, rn, {20, 20, 20, 20}), Error);

  data::HostCsr x;
  x.rows = 2;
  x.cols = 3;
  x.indptr = {0, 2, 3};
  x.indices = {0, 2, 2};
  x.values = {1.5f, 2.0f, 4.0f};
  EXPECT_EQ(gene_totals(x), (std::vector<double>{1.5, 0.0, 6.0}));
}

TEST(Genes, SharedHvgMatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    const io::AnnDataReader q(f.input("query")), r(f.input("reference"));
    const auto xq = q.read_csr<float>("X"), xr = r.read_csr<float>("X");
    const auto a = align_genes(q.var_names(), gene_totals(xq), r.var_names(), gene_totals(xr));
    SharedHvgOptions o;
    o.n_top_genes = static_cast<std::int64_t>(f.hvg.size());
    // Both datasets are below n_samples, as in the fixture: every row.
    EXPECT_EQ(hvg_sample_rows(xq.rows, o, 0).size(), static_cast<std::size_t>(xq.rows));
    const auto hvg = shared_highly_variable_genes(dist::Comm(), data::select_columns(xq, a.query_index),
                                                  data::select_columns(xr, a.reference_index), a.names, o);
    std::vector<std::string> chosen;
    for (const auto g : hvg.selected()) chosen.push_back(a.names[static_cast<std::size_t>(g)]);
    EXPECT_EQ(as_set(chosen), as_set(f.hvg)) << name;
  }
}

TEST(Genes, HvgSampleRowsAreSeededDistinctAndSorted) {
  SharedHvgOptions o;
  o.n_samples = 40;
  o.seed = 5;
  const auto a = hvg_sample_rows(100, o, 0);
  ASSERT_EQ(a.size(), 40u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<std::int64_t>(a.begin(), a.end()).size(), 40u);
  EXPECT_GE(a.front(), 0);
  EXPECT_LT(a.back(), 100);
  EXPECT_EQ(a, hvg_sample_rows(100, o, 0));
  EXPECT_NE(a, hvg_sample_rows(100, o, 1));
  o.seed = 6;
  EXPECT_NE(a, hvg_sample_rows(100, o, 0));
  o.n_samples = 0;
  EXPECT_EQ(hvg_sample_rows(7, o, 0).size(), 7u);
}

// ------------------------------------------------------------------- markers

TEST(Markers, FilterMatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    for (const auto& side : sides) {
      const auto de = f.de(side);
      for (const bool gene_filtering : {true, false}) {
        const std::string group = gene_filtering ? "markers" : "markers_unfiltered";
        const auto expected = f.filtered(group, side);
        const auto got = filter_de_results(de, {}, gene_filtering ? f.allowed() : std::vector<std::uint8_t>{});
        const std::int64_t k = de.n_clusters;
        std::size_t rows = 0, expected_rows = 0;
        for (const auto& e : expected) expected_rows += e.size();
        for (std::int64_t x = 0; x < k; ++x)
          for (std::int64_t y = 0; y < k; ++y) {
            const auto& mine = x == y ? got.ova[static_cast<std::size_t>(x)] : got.pair(x, y);
            EXPECT_EQ(genes_of(mine), expected[static_cast<std::size_t>(x * k + y)])
                << name << " " << side << " " << group << " " << x << " vs " << y;
            rows += mine.size();
          }
        EXPECT_EQ(rows, expected_rows);
        // sim's gene names are not HGNC symbols: pairOT's default filtering keeps none.
        if (name == "pbmc" || !gene_filtering) EXPECT_GT(rows, 0u);
        else EXPECT_EQ(rows, 0u);
      }
    }
  }
}

TEST(Markers, ScaledJaccardAndSelectionMatchPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    for (const auto& side : sides)
      for (const bool gene_filtering : {true, false}) {
        const std::string group = gene_filtering ? "markers" : "markers_unfiltered";
        const auto filtered =
            filter_de_results(f.de(side), {}, gene_filtering ? f.allowed() : std::vector<std::uint8_t>{});
        const auto overlap = f.doubles(group + "/" + side + "/overlap");
        const auto j = scaled_jaccard(filtered);
        ASSERT_EQ(j.size(), overlap.size());
        for (std::size_t e = 0; e < j.size(); ++e) EXPECT_NEAR(j[e], overlap[e], 1e-15) << name << " " << side;
        const auto selected =
            select_markers(filtered, side == "query" ? SelectOptions::query() : SelectOptions::reference());
        const auto expected = f.selected(group, side);
        for (std::size_t x = 0; x < selected.size(); ++x)
          EXPECT_EQ(selected[x].gene, expected[x]) << name << " " << side << " " << group << " cluster " << x;
      }
  }
}

TEST(Markers, ThresholdsAreInclusiveAndNaNFails) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto t = table({0, 1, 2, 3, 4, 5, 6, 7}, {1.0, 2.0, 0.999, 3.0, 5.0, nan, 4.0, 1.5},
                       {0.05, 0.0, 0.0, 0.0500001, 0.0, 0.0, nan, 0.01}, {0.6, 0.9, 0.9, 0.9, 0.5999, 0.9, 0.9, 0.7});
  const auto out = filter_table(t);
  EXPECT_EQ(out.gene, (std::vector<std::int64_t>{1, 7, 0}));  // logFC descending
  EXPECT_EQ(out.log_fc, (std::vector<double>{2.0, 1.5, 1.0}));
  const auto only = filter_table(t, {}, {1, 0, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(only.gene, (std::vector<std::int64_t>{7, 0}));
  // Equal logFCs keep the table's order.
  EXPECT_EQ(filter_table(table({4, 2, 9}, {2.0, 3.0, 2.0})).gene, (std::vector<std::int64_t>{2, 4, 9}));
}

TEST(Markers, SelectionRefinesDeduplicatesAndCaps) {
  // Three clusters. Top-2 OVA sets: S0 = {1, 2}, S1 = {2, 3}, S2 = {}.
  // J(0,1) = 1/3 · 2/2 = 0.333 >= 0.3: 0 is refined against 1 and 1 against 0;
  // J(x, 2) = 0 and J(2, .) = 0 (empty S2).
  DeResults de(3);
  de.ova[0] = table({1, 2, 7}, {5, 4, 3});
  de.ova[1] = table({2, 3}, {6, 2});
  de.pair(0, 1) = table({7, 8, 9}, {4.5, 3.5, 1.5});  // 7 repeats an OVA gene with a larger logFC
  de.pair(0, 2) = table({11}, {9});
  de.pair(1, 0) = table({3}, {2});
  de.pair(2, 0) = table({12}, {1});
  const auto j = scaled_jaccard(de, 2);
  EXPECT_NEAR(j[0 * 3 + 1], 1.0 / 3.0, 1e-15);
  EXPECT_DOUBLE_EQ(j[0 * 3 + 0], 1.0);
  EXPECT_EQ(j[2 * 3 + 2], 0.0);
  SelectOptions o;
  o.overlap_n_genes = 2;
  o.n_genes_ova = 2;
  o.n_genes_ava = 2;
  const auto sel = select_markers(de, o);
  EXPECT_EQ(sel[0].gene, (std::vector<std::int64_t>{1, 7, 2, 8}));
  EXPECT_EQ(sel[0].source, (std::vector<std::int64_t>{-1, 1, -1, 1}));
  EXPECT_EQ(sel[1].gene, (std::vector<std::int64_t>{2, 3}));  // 3 twice: the OVA one (logFC 2) first
  EXPECT_EQ(sel[1].source, (std::vector<std::int64_t>{-1, -1}));
  EXPECT_TRUE(sel[2].gene.empty());
  o.n_genes_max = 3;
  o.remove_duplicates = false;
  o.n_genes_ova = -1;
  const auto capped = select_markers(de, o);
  EXPECT_EQ(capped[0].gene, (std::vector<std::int64_t>{1, 7, 2}));
  EXPECT_EQ(select_markers(de, o)[1].gene, (std::vector<std::int64_t>{2, 3, 3}));
}

TEST(Markers, GeneListsFromCsv) {
  const kotml::test::TempDir dir;
  const std::string path = dir.file("genes.csv");
  {
    std::ofstream out(path);
    out << "feature_name,origin,filter_type\r\nMT-CO1,Approved symbol,mitochondrial\r\n\"A,B\",x,y\r\nRPL3,,ribosomal\n";
  }
  EXPECT_EQ(read_gene_list(path), (std::vector<std::string>{"MT-CO1", "A,B", "RPL3"}));
  EXPECT_EQ(informative_genes({"MT-CO1", "CD3E", "RPL3", "XYZ"}, {"MT-CO1", "CD3E", "RPL3"}, {"MT-CO1", "RPL3"}),
            (std::vector<std::uint8_t>{0, 1, 0, 0}));
  EXPECT_THROW(read_gene_list(dir.file("missing.csv")), Error);
  {
    std::ofstream out(dir.file("bad.csv"));
    out << "name,origin\nA,b\n";
  }
  EXPECT_THROW(read_gene_list(dir.file("bad.csv")), Error);
}

// ------------------------------------------------------------ label distance

TEST(LabelDistance, MatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    const auto q = f.de("query"), r = f.de("reference");
    for (const bool gene_filtering : {true, false}) {
      const auto got = label_distance_from_de(q, r, gene_filtering ? f.allowed() : std::vector<std::uint8_t>{});
      const auto expected = f.doubles(gene_filtering ? "label_distance" : "label_distance_unfiltered");
      ASSERT_EQ(got.distance.size(), expected.size());
      for (std::size_t e = 0; e < expected.size(); ++e)
        EXPECT_NEAR(got.distance[e], expected[e], 1e-12) << name << " entry " << e;
    }
  }
}

TEST(LabelDistance, NumpyLinearQuantile) {
  // Virtual index (n - 1) q; numpy interpolates from the nearer neighbour.
  EXPECT_DOUBLE_EQ(numpy_quantile({4, 1, 3, 2}, 0.33), 2.0 - 1.0 * (1.0 - 0.99));
  EXPECT_DOUBLE_EQ(numpy_quantile({10, 0}, 0.25), 2.5);
  EXPECT_EQ(numpy_quantile({5, 1, 3}, 0.0), 1.0);
  EXPECT_EQ(numpy_quantile({5, 1, 3}, 1.0), 5.0);
  EXPECT_EQ(numpy_quantile({7}, 0.33), 7.0);
  EXPECT_TRUE(std::isnan(numpy_quantile({1, std::numeric_limits<double>::quiet_NaN()}, 0.5)));
  EXPECT_THROW(numpy_quantile({}, 0.5), Error);
  EXPECT_THROW(numpy_quantile({1}, 1.5), Error);
}

TEST(LabelDistance, RanksMissingGenesAndEmptyLists) {
  // Query 0: genes 5, 6 at ranks 0, 1. Reference 0: 6, 5; reference 1: 5 only.
  const std::vector<MarkerList> q{list_of({5, 6}), list_of({})};
  const std::vector<MarkerList> r{list_of({6, 5}), list_of({5})};
  const auto d = rank_distance(q, r);
  const double l1 = std::log1p(1.0), l250 = std::log1p(250.0);
  EXPECT_NEAR(d[0], (l1 + l1) / 2, 1e-15);
  EXPECT_NEAR(d[1], (0.0 + std::fabs(l1 - l250)) / 2, 1e-15);
  EXPECT_EQ(d[2], 250.0);
  EXPECT_EQ(d[3], 250.0);
  // Ranks follow logFC, not the list's order, and a repeated gene keeps its first place.
  MarkerList shuffled;
  shuffled.gene = {6, 5, 6};
  shuffled.log_fc = {1.0, 2.0, 0.5};
  EXPECT_EQ(rank_distance({shuffled}, {list_of({5, 6})})[0], 0.0);
  // Normalisation: entries at or above the 0.33 quantile are 1.
  const auto n = normalise_label_distance({1, 2, 3, 4}, 0.33);
  const double quantile = numpy_quantile({1, 2, 3, 4}, 0.33);
  EXPECT_DOUBLE_EQ(n[0], 1.0 / quantile);
  EXPECT_EQ(n[1], 1.0);
  EXPECT_EQ(n[3], 1.0);
  EXPECT_THROW(normalise_label_distance({0, 0, 0, 5}, 0.33), Error);
}

// ----------------------------------------------------------------- marginals

TEST(Marginals, BalancedMatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    for (const auto& side : sides) {
      const auto labels = labels_of(f, side);
      const auto a = marginal(labels.codes, static_cast<std::int64_t>(labels.names.size()), MarginalKind::balanced);
      const auto expected = f.doubles(side == "query" ? "marginals/a" : "marginals/b");
      ASSERT_EQ(a.size(), expected.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], expected[i], 1e-16 + 1e-14 * expected[i]);
      // Every cluster carries 1/K.
      std::vector<double> per(labels.names.size(), 0.0);
      for (std::size_t i = 0; i < a.size(); ++i) per[static_cast<std::size_t>(labels.codes[i])] += a[i];
      for (const double m : per) EXPECT_NEAR(m, 1.0 / static_cast<double>(per.size()), 1e-14);
    }
  }
}

TEST(Marginals, UniformAndErrors) {
  const auto u = marginal({0, 1, 1, 1}, 2, MarginalKind::uniform);
  EXPECT_EQ(u, (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  const auto b = marginal({0, 1, 1, 1}, 2, MarginalKind::balanced);
  EXPECT_DOUBLE_EQ(b[0], 0.5);
  EXPECT_DOUBLE_EQ(b[1], 1.0 / 6.0);
  EXPECT_EQ(parse_marginal_kind("balanced"), MarginalKind::balanced);
  EXPECT_EQ(parse_marginal_kind("uniform"), MarginalKind::uniform);
  EXPECT_THROW(parse_marginal_kind("even"), Error);
  EXPECT_THROW(marginal({0, 2}, 2, MarginalKind::balanced), Error);  // code out of range
  EXPECT_THROW(marginal({0, 0}, 2, MarginalKind::balanced), Error);  // empty cluster
}

// ------------------------------------------------------------------ features

TEST(Features, RankRowsMatchPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    for (const auto& side : sides) {
      const io::AnnDataReader reader(f.input(side));
      // Columns in pairOT's HVG order, so rows compare entry by entry.
      const auto counts = data::select_columns(reader.read_csr<float>("X"), columns_for(reader.var_names(), f.hvg));
      const auto rows = f.ints("features/" + side + "/rows");
      const auto expected = f.doubles("features/" + side + "/values");
      const auto all = rank_features(counts);
      const auto g = static_cast<std::size_t>(counts.cols);
      for (std::size_t k = 0; k < rows.size(); ++k) {
        const auto block = rank_features(counts, rows[k], rows[k] + 1);
        for (std::size_t c = 0; c < g; ++c) {
          EXPECT_EQ(static_cast<double>(block[c]), expected[k * g + c]) << name << " " << side << " row " << rows[k];
          EXPECT_EQ(block[c], all[static_cast<std::size_t>(rows[k]) * g + c]);
        }
      }
    }
  }
}

TEST(Features, AverageRanksOfTiesZerosAndNegatives) {
  // Row 0: 3, 0, -1, 3, (stored 0), 0 -> ranks: -1 -> 1; zeros (3 of them) -> 3;
  // 3s -> 5.5. Row 1: all zero. Row 2: distinct positives among zeros.
  data::HostCsr x;
  x.rows = 3;
  x.cols = 6;
  x.indptr = {0, 4, 4, 7};
  x.indices = {0, 2, 3, 4, 1, 3, 5};
  x.values = {3.0f, -1.0f, 3.0f, 0.0f, 2.5f, 0.5f, 7.0f};
  const auto r = rank_features(x);
  const float c = 3.5f;  // (G + 1) / 2
  const std::vector<float> expected{5.5f - c, 3 - c,   1 - c,   5.5f - c, 3 - c, 3 - c,  //
                                    3.5f - c, 3.5f - c, 3.5f - c, 3.5f - c, 3.5f - c, 3.5f - c,  //
                                    2 - c,    5 - c,   2 - c,   4 - c,   2 - c, 6 - c};
  EXPECT_EQ(r, expected);
  EXPECT_EQ(rank_features(x, 1, 3), std::vector<float>(expected.begin() + 6, expected.end()));
  EXPECT_TRUE(rank_features(x, 2, 2).empty());
  EXPECT_THROW(rank_features(x, 2, 4), Error);
}

TEST(Features, CosineOfRankRowsIsSpearman) {
  // Random sparse counts; Spearman by the textbook route (dense average ranks,
  // Pearson correlation) against the cosine of the kotml rows.
  const std::int64_t n = 20, g = 37;
  data::HostCsr x;
  x.rows = n;
  x.cols = g;
  x.indptr = {0};
  std::uint64_t state = 12345;
  const auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % 6);
  };
  std::vector<double> dense(static_cast<std::size_t>(n * g), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < g; ++j) {
      const int v = next();
      if (v < 3) continue;  // half zeros, ties among the rest
      x.indices.push_back(j);
      x.values.push_back(static_cast<float>(v));
      dense[static_cast<std::size_t>(i * g + j)] = v;
    }
    x.indptr.push_back(static_cast<std::int64_t>(x.indices.size()));
  }
  const auto feat = rank_features(x);
  std::vector<double> ranks(dense.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < g; ++j) {
      double below = 0, equal = 0;
      for (std::int64_t k = 0; k < g; ++k) {
        below += dense[static_cast<std::size_t>(i * g + k)] < dense[static_cast<std::size_t>(i * g + j)];
        equal += dense[static_cast<std::size_t>(i * g + k)] == dense[static_cast<std::size_t>(i * g + j)];
      }
      ranks[static_cast<std::size_t>(i * g + j)] = below + (equal + 1) / 2;
    }
  for (std::int64_t a = 0; a < n; ++a)
    for (std::int64_t b = a + 1; b < n; ++b) {
      double ma = 0, mb = 0;
      for (std::int64_t j = 0; j < g; ++j) {
        ma += ranks[static_cast<std::size_t>(a * g + j)] / g;
        mb += ranks[static_cast<std::size_t>(b * g + j)] / g;
      }
      double sab = 0, saa = 0, sbb = 0, dot = 0, na = 0, nb = 0;
      for (std::int64_t j = 0; j < g; ++j) {
        const double ra = ranks[static_cast<std::size_t>(a * g + j)] - ma, rb = ranks[static_cast<std::size_t>(b * g + j)] - mb;
        sab += ra * rb;
        saa += ra * ra;
        sbb += rb * rb;
        const double fa = feat[static_cast<std::size_t>(a * g + j)], fb = feat[static_cast<std::size_t>(b * g + j)];
        dot += fa * fb;
        na += fa * fa;
        nb += fb * fb;
      }
      EXPECT_NEAR(dot / std::sqrt(na * nb), sab / std::sqrt(saa * sbb), 1e-12);
    }
}

TEST(Features, EmbeddingRowsAsFloat32) {
  const kotml::test::TempDir dir;
  io::AnnDataContent c;
  c.n_obs = 3;
  c.n_vars = 1;
  c.x_dense = {1, 2, 3};
  c.obsm.push_back({"X_emb", {{0.1, 0.2, 1.0 / 3.0, 4, 5, 6}, {3, 2}}});
  c.obsm.push_back({"X_bad", {{0, 0, std::numeric_limits<double>::quiet_NaN(), 0, 0, 0}, {3, 2}}});
  io::write_anndata(dir.file("e.h5ad"), c);
  const io::AnnDataReader reader(dir.file("e.h5ad"));
  EXPECT_EQ(embedding_features(reader, "X_emb", 1, 3), (std::vector<float>{1.0f / 3.0f, 4.0f, 5.0f, 6.0f}));
  EXPECT_EQ(embedding_features(reader, "X_emb", 0, 1), (std::vector<float>{0.1f, 0.2f}));
  EXPECT_THROW(embedding_features(reader, "X_none", 0, 1), Error);
  EXPECT_THROW(embedding_features(reader, "X_bad", 0, 3), Error);
  EXPECT_THROW(embedding_features(reader, "X_emb", 2, 4), Error);
}
