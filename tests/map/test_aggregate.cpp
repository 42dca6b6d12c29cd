// Cluster-level outputs against pairOT 0.1 (fixtures of
// tests/map/fixtures/labels_make_fixtures.py): the three mappings from the column
// mass pairOT's own OTT apply() gave, the distance from block sums of its plan,
// select_similar_clusters; the plan itself rebuilt from pairOT's potentials and
// kotml's features and label distance; the per-cluster distance sample; and the
// invariants of the mappings on exact plans.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/map/aggregate.hpp"
#include "kotml/map/features.hpp"
#include "kotml/map/label_distance.hpp"
#include "kotml/map/marginals.hpp"
#include "labels_fixture.hpp"

using namespace kotml;
using namespace kotml::map;
using kotml::map::fx::PairotFixture;

namespace {

ClusterLabels labels_of(const PairotFixture& f, const std::string& side) {
  const io::AnnDataReader reader(f.input(side));
  return cluster_labels(reader.obs(fx::label_column(f.name)).as_strings());
}

std::vector<double> query_cluster_mass(const std::vector<double>& a, const ClusterLabels& q) {
  std::vector<double> mass(q.names.size(), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) mass[static_cast<std::size_t>(q.codes[i])] += a[i];
  return mass;
}

/// scipy.spatial.distance.jensenshannon(p, q, base=2) written out over every entry.
double scipy_jensenshannon(std::vector<double> p, std::vector<double> q) {
  const double sp = std::accumulate(p.begin(), p.end(), 0.0), sq = std::accumulate(q.begin(), q.end(), 0.0);
  double js = 0.0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    p[j] /= sp;
    q[j] /= sq;
    const double m = (p[j] + q[j]) / 2.0;
    if (p[j] > 0) js += p[j] * std::log(p[j] / m);
    if (q[j] > 0) js += q[j] * std::log(q[j] / m);
  }
  return std::sqrt(js / std::log(2.0) / 2.0);
}

}  // namespace

// ------------------------------------------------------------------- mapping

TEST(Mapping, MatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    const auto q = labels_of(f, "query"), r = labels_of(f, "reference");
    const auto kq = static_cast<std::int64_t>(q.names.size()), kr = static_cast<std::int64_t>(r.names.size());
    const auto b = f.doubles("marginals/b");
    const auto mapping =
        cluster_mapping(f.doubles("ot/column_mass"), kq, b, r.codes, kr, query_cluster_mass(f.doubles("marginals/a"), q));
    for (const auto& [method, mine] : {std::pair{"mean", &mapping.mean},
                                      std::pair{"transported_mass", &mapping.transported_mass},
                                      std::pair{"jensen_shannon", &mapping.jensen_shannon}}) {
      const auto expected = f.doubles(std::string("mapping/") + method);
      ASSERT_EQ(mine->size(), expected.size());
      for (std::size_t e = 0; e < expected.size(); ++e)
        EXPECT_NEAR((*mine)[e], expected[e], 1e-12) << name << " " << method << " entry " << e;
    }
  }
}

TEST(Mapping, ColumnBlocksGiveTheWhole) {
  const PairotFixture f("pbmc");
  const auto q = labels_of(f, "query"), r = labels_of(f, "reference");
  const auto kq = static_cast<std::int64_t>(q.names.size()), kr = static_cast<std::int64_t>(r.names.size());
  const auto cm = f.doubles("ot/column_mass");
  const auto b = f.doubles("marginals/b");
  const auto m = static_cast<std::int64_t>(b.size());
  const auto qmass = query_cluster_mass(f.doubles("marginals/a"), q);
  const auto whole = cluster_mapping(cm, kq, b, r.codes, kr, qmass);
  // Three column blocks, each with its slice of column_mass (k_q × block).
  const std::vector<std::int64_t> edges{0, 31, 70, m};
  const auto slice = [&](std::int64_t j0, std::int64_t j1) {
    std::vector<double> s;
    for (std::int64_t x = 0; x < kq; ++x) s.insert(s.end(), cm.begin() + x * m + j0, cm.begin() + x * m + j1);
    return s;
  };
  MappingSums sums;
  for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
    const auto s = slice(edges[k], edges[k + 1]);
    const auto part = mapping_sums(s.data(), kq, edges[k + 1] - edges[k], b.data() + edges[k], r.codes.data() + edges[k], kr);
    if (k == 0) sums = part;
    else sums.add(part);
  }
  const auto sizes = cluster_sizes(r.codes, kr);
  std::vector<double> totals(static_cast<std::size_t>(kq), 0.0);
  for (std::int64_t x = 0; x < kq; ++x)
    for (std::int64_t y = 0; y < kr; ++y) totals[static_cast<std::size_t>(x)] += sums.ratio[static_cast<std::size_t>(x * kr + y)];
  std::vector<double> js(static_cast<std::size_t>(kq * kr), 0.0);
  for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
    const auto s = slice(edges[k], edges[k + 1]);
    const auto part = jensen_shannon_sums(s.data(), kq, edges[k + 1] - edges[k], b.data() + edges[k],
                                          r.codes.data() + edges[k], kr, totals, sizes);
    for (std::size_t e = 0; e < js.size(); ++e) js[e] += part[e];
  }
  const auto blocks = finish_mapping(sums, js, sizes, qmass);
  for (std::size_t e = 0; e < whole.mean.size(); ++e) {
    EXPECT_NEAR(blocks.mean[e], whole.mean[e], 1e-14);
    EXPECT_NEAR(blocks.transported_mass[e], whole.transported_mass[e], 1e-14);
    EXPECT_NEAR(blocks.jensen_shannon[e], whole.jensen_shannon[e], 1e-13);
  }
}

TEST(Mapping, ExactPlansSumToOneAndJensenShannonIsScipys) {
  // Query clusters {0,0,1,2}, reference clusters {0,1,1,0,2}; balanced marginals.
  const std::vector<std::int32_t> qc{0, 0, 1, 2}, rc{0, 1, 1, 0, 2};
  const auto a = marginal(qc, 3, MarginalKind::balanced), b = marginal(rc, 3, MarginalKind::balanced);
  const ClusterLabels ql{{"a", "b", "c"}, qc};
  const auto qmass = query_cluster_mass(a, ql);
  // An exact coupling with marginals (a, b): T = a bᵀ + ε·(a zero-sum perturbation).
  std::vector<double> plan(4 * 5);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 5; ++j) plan[i * 5 + j] = a[i] * b[j];
  const double d = 0.01;
  plan[0 * 5 + 0] += d;
  plan[0 * 5 + 1] -= d;
  plan[3 * 5 + 0] -= d;
  plan[3 * 5 + 1] += d;
  std::vector<double> cm(3 * 5, 0.0);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 5; ++j) cm[static_cast<std::size_t>(qc[i]) * 5 + j] += plan[i * 5 + j];
  const auto mapping = cluster_mapping(cm, 3, b, rc, 3, qmass);
  for (std::size_t y = 0; y < 3; ++y) {
    double column = 0.0;
    for (std::size_t x = 0; x < 3; ++x) column += mapping.mean[x * 3 + y];
    EXPECT_NEAR(column, 1.0, 1e-15) << "mean column " << y;
  }
  for (std::size_t x = 0; x < 3; ++x) {
    double row = 0.0;
    for (std::size_t y = 0; y < 3; ++y) row += mapping.transported_mass[x * 3 + y];
    EXPECT_NEAR(row, 1.0, 1e-15) << "transported_mass row " << x;
  }
  for (std::size_t x = 0; x < 3; ++x)
    for (std::size_t y = 0; y < 3; ++y) {
      std::vector<double> p(5), ind(5);
      for (std::size_t j = 0; j < 5; ++j) {
        p[j] = cm[x * 5 + j] / b[j];
        ind[j] = rc[j] == static_cast<std::int32_t>(y);
      }
      EXPECT_NEAR(mapping.jensen_shannon[x * 3 + y], 1.0 - scipy_jensenshannon(p, ind), 1e-14);
    }
  // Every query cluster sending all of its mass to y alone, spread as b: JS = 0, score 1.
  const std::vector<double> one{0.5 * b[0], 0, 0, 0.5 * b[3], 0};
  const auto own = cluster_mapping(one, 1, b, rc, 3, {1.0});
  EXPECT_NEAR(own.jensen_shannon[0], 1.0, 1e-7);
  EXPECT_NEAR(own.jensen_shannon[1], 0.0, 1e-15);  // disjoint supports: JS distance 1
}

// ------------------------------------------------------------------ distance

TEST(Distance, MatchesPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    DistanceSums s(f.k("query"), f.k("reference"));
    s.mass = f.doubles("ot/block_mass");
    s.weighted_cost = f.doubles("ot/block_cost");
    s.cost = f.doubles("ot/block_cost_sum");
    s.count = f.ints("ot/block_count");
    const auto d = cluster_distance(s);
    const auto expected = f.doubles("distance");
    ASSERT_EQ(d.size(), expected.size());
    for (std::size_t e = 0; e < d.size(); ++e) EXPECT_NEAR(d[e], expected[e], 1e-12) << name << " entry " << e;
  }
}

TEST(Distance, UnweightedMeanWithoutMassAndAdd) {
  DistanceSums s(1, 2);
  s.mass = {1e-16, 2e-16};
  s.weighted_cost = {1.2e-16, 1.4e-16};
  s.cost = {6.0, 9.0};
  s.count = {4, 3};
  const auto d = cluster_distance(s);
  EXPECT_EQ(d[0], 1.5);  // mass <= 1e-16: C / N
  EXPECT_DOUBLE_EQ(d[1], 0.7);
  DistanceSums t = s;
  t.add(s);
  EXPECT_EQ(t.count, (std::vector<std::int64_t>{8, 6}));
  const auto e = cluster_distance(t);
  EXPECT_DOUBLE_EQ(e[0], 1.2);  // 2e-16 > 1e-16: S / W
  EXPECT_DOUBLE_EQ(e[1], 0.7);
  s.mass[0] = 0;
  s.count[0] = 0;
  EXPECT_THROW(cluster_distance(s), Error);
}

TEST(Distance, PlanFromPotentialsWithKotmlCostGivesPairotsBlocks) {
  // pairOT's cost: λ_f·½(1 − x·y/(‖x‖‖y‖ + 1e-8)) + λ_l·Dlab[ℓ_i, ℓ_j], Dlab cast to
  // float32 and λ_l·Dlab computed in float32 (jax weak typing), the rest in double.
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    std::vector<std::vector<float>> feat;
    std::vector<ClusterLabels> labels;
    for (const std::string side : {"query", "reference"}) {
      const io::AnnDataReader reader(f.input(side));
      const auto names = reader.var_names();
      std::vector<std::int64_t> cols;
      for (const auto& g : f.hvg) cols.push_back(std::find(names.begin(), names.end(), g) - names.begin());
      feat.push_back(rank_features(data::select_columns(reader.read_csr<float>("X"), cols)));
      labels.push_back(labels_of(f, side));
    }
    const auto dlab = label_distance_from_de(f.de("query"), f.de("reference"), f.allowed()).distance;
    const auto g = f.hvg.size();
    const auto n = feat[0].size() / g, m = feat[1].size() / g;
    const auto kr = static_cast<std::size_t>(f.k("reference"));
    const auto fp = f.doubles("ot/f"), gp = f.doubles("ot/g");
    const double eps = 0.05;
    DistanceSums s(f.k("query"), f.k("reference"));
    std::vector<double> norm_x(n), norm_y(m);
    for (std::size_t i = 0; i < n; ++i) {
      double v = 0;
      for (std::size_t c = 0; c < g; ++c) v += double(feat[0][i * g + c]) * feat[0][i * g + c];
      norm_x[i] = std::sqrt(v);
    }
    for (std::size_t j = 0; j < m; ++j) {
      double v = 0;
      for (std::size_t c = 0; c < g; ++c) v += double(feat[1][j * g + c]) * feat[1][j * g + c];
      norm_y[j] = std::sqrt(v);
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        double dot = 0;
        for (std::size_t c = 0; c < g; ++c) dot += double(feat[0][i * g + c]) * feat[1][j * g + c];
        const auto x = static_cast<std::size_t>(labels[0].codes[i]), y = static_cast<std::size_t>(labels[1].codes[j]);
        const float label = 1.5f * static_cast<float>(dlab[x * kr + y]);
        const double c = 0.5 * (0.5 * (1.0 - dot / (norm_x[i] * norm_y[j] + 1e-8))) + static_cast<double>(label);
        const double t = std::exp((fp[i] + gp[j] - c) / eps);
        const auto e = x * kr + y;
        s.mass[e] += t;
        s.weighted_cost[e] += t * c;
        s.cost[e] += c;
        ++s.count[e];
      }
    const auto mass = f.doubles("ot/block_mass"), cost = f.doubles("ot/block_cost"),
               cost_sum = f.doubles("ot/block_cost_sum");
    for (std::size_t e = 0; e < mass.size(); ++e) {
      EXPECT_NEAR(s.mass[e], mass[e], 1e-10 * mass[e] + 1e-300) << name << " block " << e;
      EXPECT_NEAR(s.weighted_cost[e], cost[e], 1e-10 * cost[e] + 1e-300) << name << " block " << e;
      EXPECT_NEAR(s.cost[e], cost_sum[e], 1e-10 * cost_sum[e]) << name << " block " << e;
    }
  }
}

TEST(DistanceSample, AllCellsOfSmallClustersSeededDrawOtherwise) {
  std::vector<std::int32_t> codes;
  for (int i = 0; i < 50; ++i) codes.push_back(i % 5 == 0 ? 1 : 0);  // 40 of cluster 0, 10 of cluster 1
  codes.push_back(2);
  const auto all = distance_sample(codes, 3, 40, 1, Side::query);
  EXPECT_EQ(std::count(all.begin(), all.end(), 1), 51);
  const auto some = distance_sample(codes, 3, 7, 1, Side::query);
  std::vector<int> per(3, 0);
  for (std::size_t i = 0; i < codes.size(); ++i) per[static_cast<std::size_t>(codes[i])] += some[i];
  EXPECT_EQ(per, (std::vector<int>{7, 7, 1}));
  EXPECT_EQ(some, distance_sample(codes, 3, 7, 1, Side::query));
  EXPECT_NE(some, distance_sample(codes, 3, 7, 1, Side::reference));
  EXPECT_NE(some, distance_sample(codes, 3, 7, 2, Side::query));
  EXPECT_THROW(distance_sample(codes, 3, 0, 1, Side::query), Error);
  EXPECT_THROW(distance_sample({0, 3}, 3, 5, 1, Side::query), Error);
}

// ---------------------------------------------------------- similar clusters

TEST(SimilarClusters, MatchPairot) {
  for (const auto& name : fx::fixture_names()) {
    const PairotFixture f(name);
    const auto kq = f.k("query"), kr = f.k("reference");
    const auto distance = f.doubles("distance");
    for (const std::string method : {"mean", "jensen_shannon"}) {
      const auto mapping = f.doubles("mapping/" + method);
      SimilarOptions none;
      none.threshold_mapping = 0.0;
      none.threshold_distance = 2.0;
      SimilarOptions top1;
      top1.n_top = 1;
      for (const auto& [variant, options] :
           {std::pair{"default", SimilarOptions{}}, std::pair{"n_top1", top1}, std::pair{"none", none}}) {
        const std::string group = "similar/" + method + "/" + variant;
        const auto offsets = f.ints(group + "/offsets");
        const auto ref = f.ints(group + "/ref");
        const auto got = select_similar_clusters(mapping, distance, kq, kr, options);
        for (std::int64_t x = 0; x < kq; ++x) {
          const std::vector<std::int64_t> expected(ref.begin() + offsets[static_cast<std::size_t>(x)],
                                                   ref.begin() + offsets[static_cast<std::size_t>(x + 1)]);
          EXPECT_EQ(got[static_cast<std::size_t>(x)], expected) << name << " " << group << " cluster " << x;
        }
      }
    }
  }
}

TEST(SimilarClusters, TopNBeforeFiltersStableTiesNaNLast) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> mapping{0.3, nan, 0.9, 0.3, 0.5};
  const std::vector<double> distance{0.5, 0.1, 1.5, 0.2, 1.0};
  EXPECT_EQ(select_similar_clusters(mapping, distance, 1, 5)[0], (std::vector<std::int64_t>{4, 0, 3}));
  SimilarOptions o;
  o.n_top = 1;  // the best (2) fails the distance threshold: nothing left
  EXPECT_TRUE(select_similar_clusters(mapping, distance, 1, 5, o)[0].empty());
  o.n_top = 3;
  EXPECT_EQ(select_similar_clusters(mapping, distance, 1, 5, o)[0], (std::vector<std::int64_t>{4, 0}));
  o = SimilarOptions{};
  o.threshold_mapping = 0.0;
  o.threshold_distance = 2.0;
  EXPECT_EQ(select_similar_clusters(mapping, distance, 1, 5, o)[0], (std::vector<std::int64_t>{2, 4, 0, 3}));
}
