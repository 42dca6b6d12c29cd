// OT marginals (see marginals.hpp).

#include "kotml/map/marginals.hpp"

#include <algorithm>
#include <unordered_map>

#include "kotml/core/error.hpp"

namespace kotml::map {

ClusterLabels cluster_labels(const std::vector<std::string>& labels) {
  ClusterLabels out;
  std::unordered_map<std::string, std::int32_t> code;
  for (const auto& l : labels) {
    if (l.empty()) throw Error("", "labels", "a cell has no cluster label");
    if (code.emplace(l, 0).second) out.names.push_back(l);
  }
  std::sort(out.names.begin(), out.names.end());
  for (std::size_t c = 0; c < out.names.size(); ++c) code[out.names[c]] = static_cast<std::int32_t>(c);
  out.codes.reserve(labels.size());
  for (const auto& l : labels) out.codes.push_back(code[l]);
  return out;
}

MarginalKind parse_marginal_kind(const std::string& name) {
  if (name == "balanced") return MarginalKind::balanced;
  if (name == "uniform") return MarginalKind::uniform;
  throw Error::option("marginals", "must be 'balanced' or 'uniform', not '" + name + "'");
}

std::vector<std::int64_t> cluster_sizes(const std::vector<std::int32_t>& codes, std::int64_t n_clusters) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(n_clusters), 0);
  for (const auto c : codes) {
    require(c >= 0 && c < n_clusters, "", "", [&] {
      return "cluster code " + std::to_string(c) + " outside [0, " + std::to_string(n_clusters) + ")";
    });
    ++sizes[static_cast<std::size_t>(c)];
  }
  return sizes;
}

std::vector<double> cluster_cell_mass(const std::vector<std::int64_t>& cluster_sizes, MarginalKind kind) {
  std::int64_t n = 0;
  for (std::size_t c = 0; c < cluster_sizes.size(); ++c) {
    require(cluster_sizes[c] > 0, "", "", "cluster " + std::to_string(c) + " has no cells");
    n += cluster_sizes[c];
  }
  const auto k = static_cast<std::int64_t>(cluster_sizes.size());
  std::vector<double> mass(cluster_sizes.size());
  if (kind == MarginalKind::uniform) {
    for (auto& m : mass) m = 1.0 / static_cast<double>(n);
    return mass;
  }
  // sklearn: n_samples / (n_classes * bincount), then pairOT divides by the sum
  // over cells, Σ_c n_c · w_c.
  double total = 0.0;
  for (std::size_t c = 0; c < mass.size(); ++c) {
    mass[c] = static_cast<double>(n) / static_cast<double>(k * cluster_sizes[c]);
    total += static_cast<double>(cluster_sizes[c]) * mass[c];
  }
  for (auto& m : mass) m /= total;
  return mass;
}

std::vector<double> marginal(const std::vector<std::int32_t>& codes, std::int64_t n_clusters, MarginalKind kind) {
  const auto mass = cluster_cell_mass(cluster_sizes(codes, n_clusters), kind);
  std::vector<double> out(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) out[i] = mass[static_cast<std::size_t>(codes[i])];
  return out;
}

}  // namespace kotml::map
