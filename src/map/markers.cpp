// Marker filtering and selection (see markers.hpp). Host bookkeeping over tables
// of a few thousand rows.

#include "kotml/map/markers.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <unordered_set>

#include "kotml/core/error.hpp"

namespace kotml::map {
namespace {

/// Row order: logFC descending, NaN last, ties in table order.
std::vector<std::size_t> by_log_fc(const std::vector<double>& log_fc) {
  std::vector<std::size_t> order(log_fc.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double x = log_fc[a], y = log_fc[b];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return x > y;
  });
  return order;
}

std::size_t head(std::size_t size, std::int64_t n) {
  return n < 0 ? size : std::min(size, static_cast<std::size_t>(n));
}

void check_table(const GeneTable& t) {
  require(t.log_fc.size() == t.gene.size() && t.adj_p_value.size() == t.gene.size() &&
              t.auroc.size() == t.gene.size(),
          "", "", "a DE table's columns differ in length");
}

/// Splits one CSV line on commas, honouring double quotes.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

GeneTable filter_table(const GeneTable& table, const MarkerThresholds& thresholds, const std::vector<std::uint8_t>& allowed) {
  check_table(table);
  GeneTable out;
  for (const std::size_t r : by_log_fc(table.log_fc)) {
    const std::int64_t g = table.gene[r];
    if (!allowed.empty()) {
      require(g >= 0 && g < static_cast<std::int64_t>(allowed.size()), "", "",
              [&] { return "a DE table names gene " + std::to_string(g) + ", outside the gene list"; });
      if (!allowed[static_cast<std::size_t>(g)]) continue;
    }
    // Written so that NaN fails every test, as pandas' query does.
    if (!(table.log_fc[r] >= thresholds.log_fc)) continue;
    if (!(table.adj_p_value[r] <= thresholds.adj_p_value)) continue;
    if (!(table.auroc[r] >= thresholds.auroc)) continue;
    out.gene.push_back(g);
    out.log_fc.push_back(table.log_fc[r]);
    out.adj_p_value.push_back(table.adj_p_value[r]);
    out.auroc.push_back(table.auroc[r]);
  }
  return out;
}

DeResults filter_de_results(const DeResults& de, const MarkerThresholds& thresholds,
                            const std::vector<std::uint8_t>& allowed) {
  require(static_cast<std::int64_t>(de.ova.size()) == de.n_clusters &&
              static_cast<std::int64_t>(de.ava.size()) == de.n_clusters * de.n_clusters,
          "", "", "DE results do not hold one table per cluster and per pair of clusters");
  DeResults out(de.n_clusters);
  for (std::int64_t x = 0; x < de.n_clusters; ++x) {
    out.ova[static_cast<std::size_t>(x)] = filter_table(de.ova[static_cast<std::size_t>(x)], thresholds, allowed);
    for (std::int64_t y = 0; y < de.n_clusters; ++y)
      if (x != y) out.pair(x, y) = filter_table(de.pair(x, y), thresholds, allowed);
  }
  return out;
}

std::vector<std::string> read_gene_list(const std::string& csv_path) {
  std::ifstream in(csv_path);
  if (!in) throw Error(csv_path, "", "cannot open the gene list");
  std::string line;
  if (!std::getline(in, line)) throw Error(csv_path, "", "the gene list is empty");
  const auto header = csv_fields(line);
  const auto column = std::find(header.begin(), header.end(), "feature_name") - header.begin();
  if (column == static_cast<std::ptrdiff_t>(header.size()))
    throw Error(csv_path, "feature_name", "the gene list has no feature_name column");
  std::vector<std::string> genes;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    const auto fields = csv_fields(line);
    if (static_cast<std::ptrdiff_t>(fields.size()) <= column)
      throw Error(csv_path, "line " + std::to_string(genes.size() + 2), "fewer fields than the header");
    genes.push_back(fields[static_cast<std::size_t>(column)]);
  }
  return genes;
}

std::vector<std::uint8_t> informative_genes(const std::vector<std::string>& genes,
                                            const std::vector<std::string>& official,
                                            const std::vector<std::string>& filtered) {
  const std::unordered_set<std::string> in_official(official.begin(), official.end());
  const std::unordered_set<std::string> in_filtered(filtered.begin(), filtered.end());
  std::vector<std::uint8_t> keep(genes.size());
  for (std::size_t g = 0; g < genes.size(); ++g)
    keep[g] = in_official.count(genes[g]) > 0 && in_filtered.count(genes[g]) == 0;
  return keep;
}

std::vector<double> scaled_jaccard(const DeResults& filtered, std::int64_t overlap_n_genes) {
  const std::int64_t k = filtered.n_clusters;
  std::vector<std::unordered_set<std::int64_t>> top(static_cast<std::size_t>(k));
  for (std::int64_t x = 0; x < k; ++x) {
    const auto& t = filtered.ova[static_cast<std::size_t>(x)];
    top[static_cast<std::size_t>(x)].insert(t.gene.begin(), t.gene.begin() + static_cast<std::ptrdiff_t>(
                                                                                  head(t.size(), overlap_n_genes)));
  }
  std::vector<double> j(static_cast<std::size_t>(k * k), 0.0);
  for (std::int64_t x = 0; x < k; ++x) {
    const auto& sx = top[static_cast<std::size_t>(x)];
    if (sx.empty()) continue;  // pairOT: ZeroDivisionError caught, overlap 0
    for (std::int64_t y = 0; y < k; ++y) {
      const auto& sy = top[static_cast<std::size_t>(y)];
      std::size_t common = 0;
      for (const auto g : sy) common += sx.count(g);
      const double uni = static_cast<double>(sx.size() + sy.size() - common);
      const double scale = static_cast<double>(sy.size()) / static_cast<double>(sx.size());
      j[static_cast<std::size_t>(x * k + y)] = static_cast<double>(common) / uni * scale;
    }
  }
  return j;
}

std::vector<MarkerList> select_markers(const DeResults& filtered, const SelectOptions& options) {
  const std::int64_t k = filtered.n_clusters;
  const auto overlap = scaled_jaccard(filtered, options.overlap_n_genes);
  std::vector<MarkerList> out(static_cast<std::size_t>(k));
  for (std::int64_t x = 0; x < k; ++x) {
    MarkerList all;
    const auto take = [&](const GeneTable& t, std::int64_t n, std::int64_t source) {
      for (std::size_t r = 0; r < head(t.size(), n); ++r) {
        all.gene.push_back(t.gene[r]);
        all.log_fc.push_back(t.log_fc[r]);
        all.source.push_back(source);
      }
    };
    take(filtered.ova[static_cast<std::size_t>(x)], options.n_genes_ova, -1);
    for (std::int64_t y = 0; y < k; ++y)
      if (y != x && overlap[static_cast<std::size_t>(x * k + y)] >= options.overlap_threshold)
        take(filtered.pair(x, y), options.n_genes_ava, y);
    MarkerList& list = out[static_cast<std::size_t>(x)];
    std::unordered_set<std::int64_t> seen;
    for (const std::size_t r : by_log_fc(all.log_fc)) {
      if (options.remove_duplicates && !seen.insert(all.gene[r]).second) continue;
      list.gene.push_back(all.gene[r]);
      list.log_fc.push_back(all.log_fc[r]);
      list.source.push_back(all.source[r]);
    }
    if (options.n_genes_max >= 0 && static_cast<std::int64_t>(list.size()) > options.n_genes_max) {
      list.gene.resize(static_cast<std::size_t>(options.n_genes_max));
      list.log_fc.resize(static_cast<std::size_t>(options.n_genes_max));
      list.source.resize(static_cast<std::size_t>(options.n_genes_max));
    }
  }
  return out;
}

}  // namespace kotml::map
