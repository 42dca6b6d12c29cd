#include "kotml/eval/scores.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "kotml/core/error.hpp"

namespace kotml::eval {
namespace {

void check_lengths(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size())
    throw InternalError("labellings of different lengths (" + std::to_string(a.size()) + " and " +
                        std::to_string(b.size()) + ")");
}

std::map<int, double> counts_of(const std::vector<int>& labels) {
  std::map<int, double> counts;
  for (int l : labels) counts[l] += 1.0;
  return counts;
}

std::map<std::pair<int, int>, double> joint_counts(const std::vector<int>& a, const std::vector<int>& b) {
  std::map<std::pair<int, int>, double> counts;
  for (std::size_t i = 0; i < a.size(); ++i) counts[{a[i], b[i]}] += 1.0;
  return counts;
}

double entropy_of_counts(const std::map<int, double>& counts, double n) {
  double h = 0.0;
  for (const auto& [label, c] : counts) h -= (c / n) * std::log(c / n);
  return h;
}

}  // namespace

double entropy(const std::vector<int>& labels) {
  if (labels.empty()) return 0.0;
  return entropy_of_counts(counts_of(labels), static_cast<double>(labels.size()));
}

double mutual_information(const std::vector<int>& truth, const std::vector<int>& predicted) {
  check_lengths(truth, predicted);
  if (truth.empty()) return 0.0;
  const double n = static_cast<double>(truth.size());
  const auto a = counts_of(truth), b = counts_of(predicted);
  double mi = 0.0;
  for (const auto& [key, nij] : joint_counts(truth, predicted)) {
    const double term = (nij / n) * (std::log(nij * n) - std::log(a.at(key.first) * b.at(key.second)));
    // Terms that are zero up to rounding count as zero (as scikit-learn does),
    // so that independent labellings score exactly 0.
    if (std::fabs(term) >= std::numeric_limits<double>::epsilon()) mi += term;
  }
  return mi < 0.0 ? 0.0 : mi;
}

double normalized_mutual_info(const std::vector<int>& truth, const std::vector<int>& predicted) {
  check_lengths(truth, predicted);
  const auto a = counts_of(truth), b = counts_of(predicted);
  // Two single-cluster (or empty) labellings agree perfectly by convention.
  if (a.size() == b.size() && a.size() <= 1) return 1.0;
  const double mi = mutual_information(truth, predicted);
  if (mi == 0.0) return 0.0;
  const double n = static_cast<double>(truth.size());
  const double normaliser = (entropy_of_counts(a, n) + entropy_of_counts(b, n)) / 2.0;
  return mi / normaliser;
}

double adjusted_rand_index(const std::vector<int>& truth, const std::vector<int>& predicted) {
  check_lengths(truth, predicted);
  const double n = static_cast<double>(truth.size());
  // The pair confusion matrix: pairs together in both, in one only, in neither.
  double sum_squares = 0.0;
  for (const auto& [key, nij] : joint_counts(truth, predicted)) sum_squares += nij * nij;
  double sum_rows = 0.0, sum_cols = 0.0;
  for (const auto& [l, c] : counts_of(truth)) sum_rows += c * c;
  for (const auto& [l, c] : counts_of(predicted)) sum_cols += c * c;
  const double together_both = sum_squares - n;
  const double only_predicted = sum_cols - sum_squares;
  const double only_truth = sum_rows - sum_squares;
  const double apart_both = n * n - sum_rows - sum_cols + sum_squares;
  if (only_predicted == 0.0 && only_truth == 0.0) return 1.0;
  return 2.0 * (together_both * apart_both - only_truth * only_predicted) /
         ((together_both + only_truth) * (only_truth + apart_both) +
          (together_both + only_predicted) * (only_predicted + apart_both));
}

double variation_of_information(const std::vector<int>& truth, const std::vector<int>& predicted) {
  check_lengths(truth, predicted);
  if (truth.empty()) return 0.0;
  const double n = static_cast<double>(truth.size());
  double joint = 0.0;
  for (const auto& [key, nij] : joint_counts(truth, predicted)) joint -= (nij / n) * std::log(nij / n);
  return 2.0 * joint - entropy_of_counts(counts_of(truth), n) -
         entropy_of_counts(counts_of(predicted), n);
}

}  // namespace kotml::eval
