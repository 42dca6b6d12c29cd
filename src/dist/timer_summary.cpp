#include "kotml/dist/timer_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kotml/core/phase_timers.hpp"

namespace kotml::dist {
namespace {

SecondsOverRanks over_ranks(const std::vector<double>& per_rank) {
  SecondsOverRanks s;
  if (per_rank.empty()) return s;
  const auto fastest = std::min_element(per_rank.begin(), per_rank.end());  // the first of equals
  s.min = *fastest;
  s.min_rank = static_cast<int>(fastest - per_rank.begin());
  const auto slowest = std::max_element(per_rank.begin(), per_rank.end());  // the first of equals
  s.max = *slowest;
  s.max_rank = static_cast<int>(slowest - per_rank.begin());
  double sum = 0;
  for (double v : per_rank) sum += v;  // rank order on every rank: the same mean everywhere
  s.mean = sum / static_cast<double>(per_rank.size());
  return s;
}

/// Phase names of every rank, rank 0's order first.
std::vector<std::string> agreed_names(const Comm& comm, const std::vector<timers::PhaseTime>& mine) {
  std::string joined;
  for (const auto& p : mine) joined += p.name + '\n';
  std::vector<std::string> names;
  for (const auto& text : comm.allgather_strings(joined)) {
    std::istringstream lines(text);
    for (std::string name; std::getline(lines, name);)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

nlohmann::json seconds_json(const SecondsOverRanks& s) {
  return {{"min", s.min}, {"mean", s.mean}, {"max", s.max}, {"min_rank", s.min_rank}, {"max_rank", s.max_rank}};
}

nlohmann::json row_json(const PhaseRow& row) {
  return {{"name", row.name},         {"depth", row.depth},     {"calls", row.calls},
          {"seconds", seconds_json(row.seconds)}, {"share", row.share}, {"imbalance", row.imbalance}};
}

}  // namespace

TimerSummary summarize_timers(const Comm& comm) {
  const auto mine = timers::phases();
  const auto names = agreed_names(comm, mine);
  // Per phase: this rank's seconds and calls (0 when it never ran it), then the
  // total last; gathered as one vector per rank.
  std::vector<double> local;
  for (const auto& name : names) {
    const auto found = std::find_if(mine.begin(), mine.end(), [&](const auto& p) { return p.name == name; });
    local.push_back(found == mine.end() ? 0.0 : found->seconds);
    local.push_back(found == mine.end() ? 0.0 : static_cast<double>(found->calls));
  }
  local.push_back(timers::seconds_since_reset());
  const std::vector<double> all = comm.allgatherv(local);
  const std::size_t width = local.size();

  TimerSummary summary;
  summary.ranks = comm.size();
  auto column = [&](std::size_t c) {
    std::vector<double> values;
    for (int r = 0; r < comm.size(); ++r) values.push_back(all[static_cast<std::size_t>(r) * width + c]);
    return values;
  };
  summary.total = over_ranks(column(width - 1));
  auto finish = [&](PhaseRow& row) {
    row.share = summary.total.mean > 0 ? row.seconds.mean / summary.total.mean : 0.0;
    row.imbalance = row.seconds.mean > 0 ? row.seconds.max / row.seconds.mean : 1.0;
  };
  std::vector<double> outermost(static_cast<std::size_t>(comm.size()), 0.0);
  for (std::size_t n = 0; n < names.size(); ++n) {
    PhaseRow row;
    row.name = names[n];
    row.depth = static_cast<int>(std::count(row.name.begin(), row.name.end(), '/'));
    const auto seconds = column(2 * n);
    const auto calls = column(2 * n + 1);
    row.seconds = over_ranks(seconds);
    row.calls = static_cast<std::int64_t>(*std::max_element(calls.begin(), calls.end()));
    finish(row);
    if (row.depth == 0)
      for (std::size_t r = 0; r < seconds.size(); ++r) outermost[r] += seconds[r];
    summary.phases.push_back(row);
  }
  std::vector<double> rest = column(width - 1);
  for (std::size_t r = 0; r < rest.size(); ++r) rest[r] = std::max(0.0, rest[r] - outermost[r]);
  summary.other.name = "other";
  summary.other.seconds = over_ranks(rest);
  finish(summary.other);
  return summary;
}

nlohmann::json to_json(const TimerSummary& summary) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& row : summary.phases) phases.push_back(row_json(row));
  return {{"ranks", summary.ranks},
          {"total_seconds", seconds_json(summary.total)},
          {"phases", phases},
          {"other", row_json(summary.other)}};
}

std::string timer_table(const TimerSummary& summary, const std::string& command) {
  std::ostringstream text;
  char line[200];
  text << "kotml " << command << ": time per phase over " << summary.ranks << " rank(s), seconds\n";
  std::snprintf(line, sizeof line, "  %-28s %10s %10s %10s %7s %9s %7s %8s", "phase", "min", "mean", "max", "%total",
                "max/mean", "calls", "max rank");
  text << line;
  auto add = [&](const PhaseRow& row, const std::string& label) {
    std::snprintf(line, sizeof line, "\n  %-28s %10.4f %10.4f %10.4f %6.1f%% %9.2f %7lld %8d", label.c_str(),
                  row.seconds.min, row.seconds.mean, row.seconds.max, 100.0 * row.share, row.imbalance,
                  static_cast<long long>(row.calls), row.seconds.max_rank);
    text << line;
  };
  for (const auto& row : summary.phases) {
    // Nested phases indented under their parent, by their own name.
    const auto slash = row.name.rfind('/');
    add(row, std::string(2 * static_cast<std::size_t>(row.depth), ' ') +
                 (slash == std::string::npos ? row.name : row.name.substr(slash + 1)));
  }
  add(summary.other, "other");
  std::snprintf(line, sizeof line, "\n  %-28s %10.4f %10.4f %10.4f %6.1f%% %9s %7s %8d", "total", summary.total.min,
                summary.total.mean, summary.total.max, 100.0, "", "", summary.total.max_rank);
  text << line;
  return text.str();
}

}  // namespace kotml::dist
