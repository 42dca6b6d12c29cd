// The learning pieces that need no OT solver: metric initialisation,
// triplets, hinge loss, regulariser, Adam, stratified batches, checkpoints.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>

#include "kotml/core/error.hpp"
#include "kotml/learn/adam.hpp"
#include "kotml/learn/batches.hpp"
#include "kotml/learn/checkpoint.hpp"
#include "kotml/learn/loss.hpp"
#include "kotml/learn/metric.hpp"
#include "kotml/learn/triplets.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;

namespace {
const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(test::test_source_path("learn/fixtures/learn_reference.json"));
    EXPECT_TRUE(in.good()) << "missing fixture learn_reference.json";
    return nlohmann::json::parse(in);
  }();
  return j;
}
}  // namespace

TEST(LearnMetric, InitialMetricHasOrthonormalRowsAndIsSeeded) {
  for (auto [k, d] : {std::pair<int, int>{5, 20}, {2, 2}, {1, 7}, {10, 1000}}) {
    const auto a = learn::initial_metric(k, d, 42);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        double dot = 0;
        for (int f = 0; f < d; ++f) dot += a(i, f) * a(j, f);
        EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-12) << k << "x" << d;
      }
    const auto again = learn::initial_metric(k, d, 42);
    const auto other = learn::initial_metric(k, d, 43);
    bool differs = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a.data()[i], again.data()[i]);
      differs |= a.data()[i] != other.data()[i];
    }
    EXPECT_TRUE(differs);
  }
  EXPECT_THROW(learn::initial_metric(6, 5, 1), Error);
  EXPECT_THROW(learn::initial_metric(0, 5, 1), Error);
}

TEST(LearnMetric, RegularizerValueAndGradientMatchFiniteDifferences) {
  auto a = learn::initial_metric(3, 4, 9);
  a(0, 1) = 0.0;  // L1 subgradient 0 there, as torch's sign(0)
  for (auto norm : {learn::RegNorm::frobenius, learn::RegNorm::l1}) {
    std::vector<double> grad(a.size(), 0.0);
    learn::add_regularizer_gradient(a, norm, 0.3, grad);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (norm == learn::RegNorm::l1 && a.data()[i] == 0.0) {
        EXPECT_EQ(grad[i], 0.0);
        continue;
      }
      const double h = 1e-6, x = a.data()[i];
      a.data()[i] = x + h;
      const double up = learn::regularizer_value(a, norm, 0.3);
      a.data()[i] = x - h;
      const double down = learn::regularizer_value(a, norm, 0.3);
      a.data()[i] = x;
      EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-7);
    }
  }
  EXPECT_THROW(learn::parse_reg_norm("nuc"), Error);
}

TEST(LearnMetric, TopGenesByMagnitude) {
  // 4 genes × 2 components.
  const std::vector<double> loadings = {0.1, -5.0, -3.0, 0.2, 2.0, 0.0, -3.0, 1.0};
  const auto top = learn::top_genes(loadings, 4, 2, 3);
  EXPECT_EQ(top, (std::vector<std::int64_t>{1, 3, 2, 0, 3, 1}));
}

TEST(LearnTriplets, AllTripletsAreGgmlOts) {
  for (const auto& c : reference()["triplets"]) {
    const auto labels = c["labels"].get<std::vector<int>>();
    const auto set = learn::all_triplets(labels);
    EXPECT_EQ(set.size(), c["n_triplets"].get<std::int64_t>());
    std::vector<std::vector<int>> pairs;
    for (const auto& p : set.pairs) pairs.push_back({p.first, p.second});
    EXPECT_EQ(pairs, c["pairs"].get<std::vector<std::vector<int>>>());
    // Every triplet satisfies label i = label j ≠ label k, and the set visits
    // as many as it counts, chunk c holding positive i = c.
    std::int64_t visited = 0;
    for (std::int64_t c = 0; c < set.chunks(); ++c)
      set.for_each_in_chunk(c, [&](std::int32_t p, std::int32_t q) {
        const auto& ij = set.pairs[static_cast<std::size_t>(p)];
        const auto& jk = set.pairs[static_cast<std::size_t>(q)];
        EXPECT_EQ(labels[static_cast<std::size_t>(ij.first)], labels[static_cast<std::size_t>(ij.second)]);
        EXPECT_NE(labels[static_cast<std::size_t>(jk.first)], labels[static_cast<std::size_t>(jk.second)]);
        EXPECT_TRUE(ij.first == c || ij.second == c);
        ++visited;
      });
    EXPECT_EQ(visited, set.size());
  }
}

TEST(LearnTriplets, SampledTripletCountAndLabels) {
  const std::vector<int> labels = {0, 0, 0, 1, 1, 1, 1, 2, 2, 2};
  random::Stream stream(5, random::Purpose::triplets, 0);
  const auto set = learn::sampled_triplets(labels, 2, stream);
  EXPECT_EQ(set.size(), 10 * 2 * 2 * 2);  // B·t·t·(C−1)
  for (std::int64_t t = 0; t < set.size(); ++t) {
    const auto& ij = set.pairs[static_cast<std::size_t>(set.ij[static_cast<std::size_t>(t)])];
    const auto& jk = set.pairs[static_cast<std::size_t>(set.jk[static_cast<std::size_t>(t)])];
    EXPECT_EQ(labels[static_cast<std::size_t>(ij.first)], labels[static_cast<std::size_t>(ij.second)]);
    EXPECT_NE(labels[static_cast<std::size_t>(jk.first)], labels[static_cast<std::size_t>(jk.second)]);
  }
  EXPECT_THROW(learn::sampled_triplets(labels, 0, stream), Error);
}

TEST(LearnLoss, HingeLossAndPairDerivativesMatchFiniteDifferences) {
  const std::vector<int> labels = {0, 0, 1, 1, 2};
  const auto set = learn::all_triplets(labels);
  std::vector<double> cost(set.pairs.size());
  random::Stream stream(3, random::Purpose::test_data, 0);
  for (std::size_t p = 0; p < cost.size(); ++p)
    cost[p] = set.pairs[p].first == set.pairs[p].second ? 0.0 : stream.uniform(0.2, 2.0);
  const double alpha = 0.7;
  const auto loss = learn::hinge_loss(set, cost, alpha);
  EXPECT_GT(loss.n_active, 0);
  EXPECT_LT(loss.n_active, loss.n_triplets);
  // Brute force over explicit triplets.
  double total = 0.0;
  for (std::size_t i = 0; i < labels.size(); ++i)
    for (std::size_t j = 0; j < labels.size(); ++j)
      for (std::size_t k = 0; k < labels.size(); ++k) {
        if (labels[i] != labels[j] || labels[j] == labels[k]) continue;
        auto at = [&](std::size_t x, std::size_t y) {
          for (std::size_t p = 0; p < set.pairs.size(); ++p)
            if (set.pairs[p].first == static_cast<int>(std::min(x, y)) && set.pairs[p].second == static_cast<int>(std::max(x, y)))
              return cost[p];
          ADD_FAILURE() << "pair missing";
          return 0.0;
        };
        total += std::max(0.0, at(i, j) - at(j, k) + alpha);
      }
  EXPECT_NEAR(loss.value, total / static_cast<double>(loss.n_triplets), 1e-14);
  for (std::size_t p = 0; p < cost.size(); ++p) {
    const double h = 1e-7;
    auto up = cost, down = cost;
    up[p] += h;
    down[p] -= h;
    const double fd = (learn::hinge_loss(set, up, alpha).value - learn::hinge_loss(set, down, alpha).value) / (2 * h);
    EXPECT_NEAR(loss.d_pair_cost[p], fd, 1e-6) << "pair " << p;
  }
}

TEST(LearnAdam, StepsAreTorchs) {
  const auto& r = reference()["adam"];
  learn::AdamOptions options;
  options.lr = r["lr"].get<double>();
  learn::MetricMatrix a("a", 2, 3);
  const auto initial = r["initial"].get<std::vector<double>>();
  std::copy(initial.begin(), initial.end(), a.data());
  learn::Adam adam(options, 6);
  for (std::size_t s = 0; s < r["grads"].size(); ++s) {
    adam.step(a, r["grads"][s].get<std::vector<double>>());
    const auto expected = r["params"][s].get<std::vector<double>>();
    for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(a.data()[i], expected[i], 1e-14) << "step " << s;
  }
  learn::AdamOptions bad;
  bad.lr = 0.0;
  EXPECT_THROW(bad.validate(), Error);
}

TEST(LearnBatches, ClassCompositionIsGgmlOts) {
  for (const auto& c : reference()["batches"]) {
    const auto counts = c["counts"].get<std::vector<int>>();
    std::vector<int> labels;
    for (std::size_t k = 0; k < counts.size(); ++k) labels.insert(labels.end(), static_cast<std::size_t>(counts[k]), static_cast<int>(k));
    const auto batches = learn::stratified_batches(labels, c["batch_size"].get<std::int64_t>(), 1, 0);
    std::vector<std::vector<int>> compositions;
    std::set<std::int64_t> seen;
    for (const auto& b : batches) {
      std::vector<int> comp(counts.size(), 0);
      for (auto i : b) {
        ++comp[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])];
        EXPECT_TRUE(seen.insert(i).second) << "donor drawn twice in an epoch";
      }
      compositions.push_back(comp);
    }
    EXPECT_EQ(seen.size(), labels.size());
    EXPECT_EQ(compositions, c["compositions"].get<std::vector<std::vector<int>>>()) << c.dump();
  }
}

TEST(LearnBatches, EpochsShuffleDifferentlyAndFullBatchIsEverything) {
  std::vector<int> labels(30);
  for (int i = 0; i < 30; ++i) labels[static_cast<std::size_t>(i)] = i % 3;
  EXPECT_NE(learn::stratified_batches(labels, 9, 1, 0), learn::stratified_batches(labels, 9, 1, 1));
  EXPECT_EQ(learn::stratified_batches(labels, 9, 1, 3), learn::stratified_batches(labels, 9, 1, 3));
  const auto full = learn::stratified_batches(labels, 512, 1, 0);
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(full[0].size(), 30u);
  EXPECT_EQ(learn::round_half_even(2.5), 2);
  EXPECT_EQ(learn::round_half_even(3.5), 4);
  EXPECT_EQ(learn::round_half_even(0.5), 0);
  EXPECT_EQ(learn::round_half_even(1.2), 1);
}

TEST(LearnCheckpoint, RoundTripAndRejectsOtherFiles) {
  test::TempDir dir;
  learn::Checkpoint c;
  c.fingerprint = "n_comps=2;seed=7";
  c.epochs_done = 3;
  c.converged = true;
  c.seed = 7;
  c.a = learn::initial_metric(2, 4, 7);
  c.adam_steps = 3;
  c.adam_m.assign(8, 0.25);
  c.adam_v.assign(8, 0.5);
  learn::EpochRecord r;
  r.loss = 0.75;
  r.seconds = 0.01;
  for (std::int64_t e = 1; e <= 3; ++e) {
    r.epoch = e;
    c.history.push_back(r);
  }
  c.warm.first = {0, 2};
  c.warm.second = {1, 3};
  c.warm.offset = {0, 3, 5};
  c.warm.basis = {-1, 2, 0, 1, -1};
  const auto path = dir.file("ckpt.h5");
  learn::write_checkpoint(path, c);
  const auto back = learn::read_checkpoint(path);
  EXPECT_EQ(back.fingerprint, c.fingerprint);
  EXPECT_EQ(back.epochs_done, 3);
  EXPECT_TRUE(back.converged);
  EXPECT_EQ(back.adam_steps, 3);
  EXPECT_EQ(back.adam_v, c.adam_v);
  EXPECT_EQ(back.warm.basis, c.warm.basis);
  EXPECT_EQ(back.warm.offset, c.warm.offset);
  ASSERT_EQ(back.history.size(), 3u);
  EXPECT_EQ(back.history[2].epoch, 3);
  EXPECT_EQ(back.history[1].loss, 0.75);
  for (std::size_t i = 0; i < c.a.size(); ++i) EXPECT_EQ(back.a.data()[i], c.a.data()[i]);
  // Not a checkpoint: a clear error.
  std::ofstream(dir.file("text.h5")) << "not hdf5";
  EXPECT_THROW(learn::read_checkpoint(dir.file("text.h5")), Error);
  EXPECT_THROW(learn::read_checkpoint(dir.file("missing.h5")), Error);
}

namespace {

/// Overwrites one int64 scalar of an HDF5 file in place, as an editor would.
void overwrite_int64(const std::string& path, const char* dataset, std::int64_t value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t d = H5Dopen2(file, dataset, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), 0);
  H5Dclose(d);
  H5Fclose(file);
}

std::string checkpoint_error(const std::string& path) {
  try {
    learn::read_checkpoint(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

// A checkpoint edited by hand (epochs_done 999 or -5 were taken before, with a
// wrong A) is refused by its checksum; one whose fields contradict each other
// is refused whatever its checksum says.
TEST(LearnCheckpoint, RefusesEditedAndInconsistentCheckpoints) {
  test::TempDir dir;
  learn::Checkpoint c;
  c.fingerprint = "n_comps=1;seed=3";
  c.seed = 3;
  c.a = learn::initial_metric(1, 2, 3);
  c.adam_m.assign(2, 0.0);
  c.adam_v.assign(2, 0.0);
  c.warm.offset = {0};
  learn::EpochRecord r;
  r.epoch = 1;
  c.history = {r};
  c.epochs_done = 1;
  c.adam_steps = 1;
  const auto path = dir.file("ckpt.h5");
  learn::write_checkpoint(path, c);
  EXPECT_EQ(checkpoint_error(path), "accepted");
  for (const std::int64_t edited : {std::int64_t{999}, std::int64_t{-5}, std::int64_t{0}}) {
    learn::write_checkpoint(path, c);
    overwrite_int64(path, "progress/epochs_done", edited);
    const auto why = checkpoint_error(path);
    EXPECT_TRUE(why.find("checksum") != std::string::npos || why.find("epochs") != std::string::npos) << why;
  }
  learn::write_checkpoint(path, c);
  overwrite_int64(path, "adam/step", 7);
  EXPECT_NE(checkpoint_error(path).find("checksum"), std::string::npos);

  auto fields = [&](auto&& change) {
    learn::Checkpoint bad = c;
    bad.a = learn::initial_metric(1, 2, 3);
    change(bad);
    learn::write_checkpoint(path, bad);
    return checkpoint_error(path);
  };
  EXPECT_NE(fields([](learn::Checkpoint& b) { b.epochs_done = -5; }).find("negative"), std::string::npos);
  EXPECT_NE(fields([](learn::Checkpoint& b) { b.epochs_done = 999; }).find("epochs_done = 999"), std::string::npos);
  EXPECT_NE(fields([](learn::Checkpoint& b) { b.history[0].epoch = 4; }).find("history/epoch"), std::string::npos);
  EXPECT_NE(fields([](learn::Checkpoint& b) { b.a.data()[1] = std::nan(""); }).find("A: holds NaN"),
            std::string::npos);
  EXPECT_NE(fields([](learn::Checkpoint& b) { b.adam_v[0] = -1.0; }).find("negative"), std::string::npos);
  EXPECT_NE(fields([](learn::Checkpoint& b) {
              b.warm.first = {0};
              b.warm.second = {1};
              b.warm.offset = {0, 4};
              b.warm.basis = {1, 2};
            }).find("inconsistent"),
            std::string::npos);
}
