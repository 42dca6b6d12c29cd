// The tiled Sinkhorn against OTT-JAX 0.6 (fixtures/ott_reference.json, made by
// fixtures/make_ott_fixtures.py in float64): potentials within 1e-6 relative,
// the same iteration count and convergence, the same error history. Run with
// stored and with recomputed costs, which must not matter.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "kotml/ot/tiled_sinkhorn.hpp"
#include "support/cli_runner.hpp"
#include "tiled_test_support.hpp"

namespace kotml::ot {
namespace {

struct OttCase {
  std::string name;
  test::HostCloud x, y;
  PointCost cost;
  TiledSinkhornOptions options;
  double absolute_epsilon = 0;
  std::vector<double> f, g, errors;
  int n_iters = 0;
  bool converged = false;
};

test::HostCloud cloud_of(const nlohmann::json& points, const nlohmann::json& weights, const nlohmann::json& labels) {
  test::HostCloud c;
  const auto rows = points.get<std::vector<std::vector<double>>>();
  c.n = static_cast<std::int64_t>(rows.size());
  c.dim = static_cast<int>(rows.at(0).size());
  for (const auto& r : rows) c.points.insert(c.points.end(), r.begin(), r.end());
  c.weights = weights.get<std::vector<double>>();
  c.labels = labels.get<std::vector<std::int32_t>>();
  return c;
}

std::vector<OttCase> load() {
  const std::string path = kotml::test::test_source_path("ot/fixtures/ott_reference.json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const auto json = nlohmann::json::parse(in);
  std::vector<OttCase> cases;
  for (const auto& c : json.at("cases")) {
    OttCase k;
    k.name = c.at("name");
    k.x = cloud_of(c.at("x"), c.at("a"), c.at("x_labels"));
    k.y = cloud_of(c.at("y"), c.at("b"), c.at("y_labels"));
    k.cost.kind = parse_cost(c.at("cost").get<std::string>());
    k.cost.feature_weight = c.at("feature_weight");
    if (c.at("label_weight").get<double>() > 0) {
      const auto table = c.at("label_table").get<std::vector<std::vector<double>>>();
      k.cost.label.row_labels = static_cast<std::int64_t>(table.size());
      k.cost.label.col_labels = static_cast<std::int64_t>(table[0].size());
      for (const auto& r : table) k.cost.label.table.insert(k.cost.label.table.end(), r.begin(), r.end());
      k.cost.label.weight = c.at("label_weight");
    }
    auto& o = k.options;
    o.epsilon = c.at("epsilon");
    o.relative_epsilon = c.at("relative");
    o.tau_a = c.at("tau_a");
    o.tau_b = c.at("tau_b");
    o.threshold = c.at("threshold");
    o.inner_iterations = c.at("inner_iterations");
    o.max_iterations = c.at("max_iterations");
    o.epsilon_init = c.at("epsilon_init");
    o.epsilon_decay = c.at("epsilon_decay");
    o.updates = parse_updates(c.at("updates").get<std::string>());
    k.absolute_epsilon = c.at("absolute_epsilon");
    for (auto [key, out] : {std::make_pair("f", &k.f), std::make_pair("g", &k.g)})
      for (const auto& v : c.at(key)) out->push_back(v.is_null() ? -INFINITY : v.get<double>());
    k.errors = c.at("errors").get<std::vector<double>>();
    k.n_iters = c.at("n_iters");
    k.converged = c.at("converged");
    cases.push_back(std::move(k));
  }
  return cases;
}

/// max |got − want| / max(1, max |want|) over the finite entries; −∞ must match.
double relative_gap(const std::vector<double>& got, const std::vector<double>& want) {
  double scale = 1, worst = 0;
  for (double w : want)
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i])) {
      if (got[i] != want[i]) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  return worst / scale;
}

TEST(TiledSinkhornVsOtt, PotentialsIterationsAndErrorsMatch) {
  const dist::Comm self(MPI_COMM_SELF);
  const auto cases = load();
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    for (auto storage : {CostStorage::stored, CostStorage::online}) {
      SCOPED_TRACE(c.name + (storage == CostStorage::stored ? ", stored" : ", online"));
      auto o = c.options;
      o.storage = storage;
      test::DevicePoints<double> dx(c.x), dy(c.y);
      TiledSinkhorn<double> solver(self, RowBlock::of(c.x.n, 1, 0), dx.view(), dy.view(), c.cost, o);
      const auto report = solver.solve();
      EXPECT_NEAR(report.epsilon, c.absolute_epsilon, 1e-12 * c.absolute_epsilon);
      EXPECT_EQ(report.iterations, c.n_iters);
      EXPECT_EQ(report.converged, c.converged);
      EXPECT_LT(relative_gap(solver.f(), c.f), 1e-6);
      EXPECT_LT(relative_gap(solver.g(), c.g), 1e-6);
      ASSERT_EQ(report.errors.size(), c.errors.size());
      for (std::size_t k = 0; k < c.errors.size(); ++k)
        EXPECT_NEAR(report.errors[k], c.errors[k], 1e-6 * std::max(c.errors[k], 1e-9)) << "check " << k;
    }
  }
}

}  // namespace
}  // namespace kotml::ot
