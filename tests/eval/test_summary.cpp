// Aggregation over splits and the three report formats.

#include <gtest/gtest.h>

#include "kotml/eval/summary.hpp"

using namespace kotml;

TEST(EvalSummary, PopulationStandardDeviation) {
  const auto m = eval::mean_sd({1.0, 2.0, 3.0, 4.0});
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.sd, std::sqrt(1.25));  // numpy.std, ddof = 0
  const auto one = eval::mean_sd({0.7});
  EXPECT_DOUBLE_EQ(one.sd, 0.0);
}

TEST(EvalSummary, TableCsvAndJson) {
  std::vector<eval::SplitRecord> splits(2);
  splits[0] = {0, 18, 12, 1.0, 0.9, 0.8, 0.1, 0.5, 30, std::nullopt, std::nullopt};
  splits[1] = {1, 18, 12, 0.5, 0.7, 0.6, 0.3, 0.7, 20, std::nullopt, std::nullopt};
  const auto s = eval::summarize(splits, 3);
  EXPECT_DOUBLE_EQ(s.knn_acc.mean, 0.75);
  EXPECT_DOUBLE_EQ(s.knn_acc.sd, 0.25);
  ASSERT_TRUE(s.epoch_time_s.has_value());
  EXPECT_DOUBLE_EQ(s.epoch_time_s->mean, 0.6);

  const auto table = eval::markdown_table({{"ggml", s}});
  EXPECT_NE(table.find("| setup | knn_acc | mi | ari | vi | epoch_time(s) |"), std::string::npos);
  EXPECT_NE(table.find("| ggml | 0.75 ± 0.25 | 0.80 ± 0.10 | 0.70 ± 0.10 | 0.20 ± 0.10 | 0.60 ± 0.10 |"),
            std::string::npos)
      << table;

  const auto csv = eval::metrics_csv(splits);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "split,n_train,n_test,knn_acc,mi,ari,vi,epoch_time_s,epochs,epoch_cpu_s,test_loss");
  EXPECT_NE(csv.find("\n1,18,12,0.5,0.69999999999999996,0.59999999999999998,0.29999999999999999,"
                     "0.69999999999999996,20,,\n"),
            std::string::npos)
      << csv;

  const auto j = eval::summary_json(s);
  EXPECT_DOUBLE_EQ(j["knn_acc"]["mean"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["vi"]["sd"].get<double>(), 0.1);
  EXPECT_EQ(j["n_splits"].get<int>(), 2);
  EXPECT_EQ(j["ranks"].get<int>(), 3);
  EXPECT_DOUBLE_EQ(j["epoch_time_s"]["mean"].get<double>(), 0.6);

  // Without training (kotml test) the time column is "-" and null.
  for (auto& r : splits) r.epoch_time_s.reset();
  const auto untimed = eval::summarize(splits, 1);
  EXPECT_TRUE(eval::summary_json(untimed)["epoch_time_s"].is_null());
  EXPECT_NE(eval::markdown_table({{"euclidean", untimed}}).find("| - |"), std::string::npos);
}
