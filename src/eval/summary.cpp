#include "kotml/eval/summary.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kotml::eval {
namespace {

std::string cell(const MeanSd& m) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f ± %.2f", m.mean, m.sd);
  return text;
}

std::string number(double x) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

nlohmann::json to_json(const MeanSd& m) { return {{"mean", m.mean}, {"sd", m.sd}}; }

}  // namespace

MeanSd mean_sd(const std::vector<double>& values) {
  if (values.empty()) return {};
  double sum = 0.0;
  for (double v : values) sum += v;
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0.0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / static_cast<double>(values.size()))};
}

Summary summarize(const std::vector<SplitRecord>& splits, int ranks) {
  std::vector<double> knn, mi, ari, vi, time;
  for (const auto& s : splits) {
    knn.push_back(s.knn_acc);
    mi.push_back(s.mi);
    ari.push_back(s.ari);
    vi.push_back(s.vi);
    if (s.epoch_time_s) time.push_back(*s.epoch_time_s);
  }
  Summary summary;
  summary.knn_acc = mean_sd(knn);
  summary.mi = mean_sd(mi);
  summary.ari = mean_sd(ari);
  summary.vi = mean_sd(vi);
  if (!time.empty()) summary.epoch_time_s = mean_sd(time);
  summary.n_splits = static_cast<int>(splits.size());
  summary.ranks = ranks;
  return summary;
}

std::string markdown_table(const std::vector<std::pair<std::string, Summary>>& rows) {
  std::ostringstream out;
  out << "| setup | knn_acc | mi | ari | vi | epoch_time(s) |\n"
      << "|---|---|---|---|---|---|\n";
  for (const auto& [name, s] : rows)
    out << "| " << name << " | " << cell(s.knn_acc) << " | " << cell(s.mi) << " | " << cell(s.ari)
        << " | " << cell(s.vi) << " | " << (s.epoch_time_s ? cell(*s.epoch_time_s) : "-") << " |\n";
  return out.str();
}

std::string metrics_csv(const std::vector<SplitRecord>& splits) {
  std::ostringstream out;
  out << "split,n_train,n_test,knn_acc,mi,ari,vi,epoch_time_s,epochs,epoch_cpu_s,test_loss\n";
  for (const auto& s : splits)
    out << s.split << ',' << s.n_train << ',' << s.n_test << ',' << number(s.knn_acc) << ','
        << number(s.mi) << ',' << number(s.ari) << ',' << number(s.vi) << ','
        << (s.epoch_time_s ? number(*s.epoch_time_s) : "") << ','
        << (s.epochs ? std::to_string(*s.epochs) : "") << ','
        << (s.epoch_cpu_s ? number(*s.epoch_cpu_s) : "") << ',' << (s.test_loss ? number(*s.test_loss) : "")
        << '\n';
  return out.str();
}

nlohmann::json summary_json(const Summary& summary) {
  nlohmann::json j;
  j["knn_acc"] = to_json(summary.knn_acc);
  j["mi"] = to_json(summary.mi);
  j["ari"] = to_json(summary.ari);
  j["vi"] = to_json(summary.vi);
  j["epoch_time_s"] = summary.epoch_time_s ? to_json(*summary.epoch_time_s) : nlohmann::json(nullptr);
  j["n_splits"] = summary.n_splits;
  j["ranks"] = summary.ranks;
  return j;
}

}  // namespace kotml::eval
