// Cluster mapping, cluster distance, the distance's cell sample and similar
// clusters (see aggregate.hpp). Host loops in a fixed order over k_q × m values.

#include "kotml/map/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"

namespace kotml::map {
namespace {

constexpr double ln2 = 0.69314718055994530942;

/// scipy.special.rel_entr(a, b).
double rel_entr(double a, double b) {
  if (a > 0.0 && b > 0.0) return a * std::log(a / b);
  if (a == 0.0 && b >= 0.0) return 0.0;
  return std::numeric_limits<double>::infinity();
}

void check_codes(const std::int32_t* codes, std::int64_t m, std::int64_t n_clusters) {
  for (std::int64_t j = 0; j < m; ++j)
    require(codes[j] >= 0 && codes[j] < n_clusters, "", "", [&] {
      return "reference cluster code " + std::to_string(codes[j]) + " outside [0, " +
             std::to_string(n_clusters) + ")";
    });
}

}  // namespace

void MappingSums::add(const MappingSums& other) {
  require(other.n_query == n_query && other.n_reference == n_reference, "", "", "mapping sums of different shapes");
  for (std::size_t e = 0; e < ratio.size(); ++e) {
    ratio[e] += other.ratio[e];
    mass[e] += other.mass[e];
  }
}

MappingSums mapping_sums(const double* column_mass, std::int64_t n_query, std::int64_t m_block, const double* b,
                         const std::int32_t* reference_codes, std::int64_t n_reference) {
  check_codes(reference_codes, m_block, n_reference);
  MappingSums s;
  s.n_query = n_query;
  s.n_reference = n_reference;
  s.ratio.assign(static_cast<std::size_t>(n_query * n_reference), 0.0);
  s.mass.assign(static_cast<std::size_t>(n_query * n_reference), 0.0);
  for (std::int64_t x = 0; x < n_query; ++x) {
    const double* t = column_mass + x * m_block;
    double* ratio = s.ratio.data() + x * n_reference;
    double* mass = s.mass.data() + x * n_reference;
    for (std::int64_t j = 0; j < m_block; ++j) {
      ratio[reference_codes[j]] += t[j] / b[j];
      mass[reference_codes[j]] += t[j];
    }
  }
  return s;
}

std::vector<double> jensen_shannon_sums(const double* column_mass, std::int64_t n_query, std::int64_t m_block,
                                        const double* b, const std::int32_t* reference_codes,
                                        std::int64_t n_reference, const std::vector<double>& ratio_totals,
                                        const std::vector<std::int64_t>& reference_sizes) {
  check_codes(reference_codes, m_block, n_reference);
  require(static_cast<std::int64_t>(ratio_totals.size()) == n_query &&
              static_cast<std::int64_t>(reference_sizes.size()) == n_reference,
          "", "", "Jensen-Shannon sums: totals or cluster sizes of the wrong length");
  std::vector<double> out(static_cast<std::size_t>(n_query * n_reference), 0.0);
  for (std::int64_t x = 0; x < n_query; ++x) {
    const double* t = column_mass + x * m_block;
    double* js = out.data() + x * n_reference;
    for (std::int64_t j = 0; j < m_block; ++j) {
      const std::int32_t y = reference_codes[j];
      const double p = t[j] / b[j] / ratio_totals[static_cast<std::size_t>(x)];
      const double q = 1.0 / static_cast<double>(reference_sizes[static_cast<std::size_t>(y)]);
      const double mid = (p + q) / 2.0;
      js[y] += rel_entr(p, mid) + rel_entr(q, mid);
    }
  }
  return out;
}

ClusterMapping finish_mapping(const MappingSums& sums, const std::vector<double>& js_sums,
                              const std::vector<std::int64_t>& reference_sizes,
                              const std::vector<double>& query_cluster_mass) {
  const std::int64_t kq = sums.n_query, kr = sums.n_reference;
  require(static_cast<std::int64_t>(js_sums.size()) == kq * kr &&
              static_cast<std::int64_t>(reference_sizes.size()) == kr &&
              static_cast<std::int64_t>(query_cluster_mass.size()) == kq,
          "", "", "cluster mapping: inputs of inconsistent sizes");
  ClusterMapping out;
  out.n_query = kq;
  out.n_reference = kr;
  out.mean.resize(static_cast<std::size_t>(kq * kr));
  out.transported_mass.resize(out.mean.size());
  out.jensen_shannon.resize(out.mean.size());
  for (std::int64_t x = 0; x < kq; ++x) {
    const double* ratio = sums.ratio.data() + x * kr;
    double total = 0.0;
    for (std::int64_t y = 0; y < kr; ++y) total += ratio[y];
    for (std::int64_t y = 0; y < kr; ++y) {
      const auto e = static_cast<std::size_t>(x * kr + y);
      out.mean[e] = ratio[y] / static_cast<double>(reference_sizes[static_cast<std::size_t>(y)]);
      out.transported_mass[e] = sums.mass[e] / query_cluster_mass[static_cast<std::size_t>(x)];
      // Cells outside y: p_j ln 2 each, p summed over the other clusters (no
      // cancellation against y's own share).
      double outside = 0.0;
      for (std::int64_t z = 0; z < kr; ++z)
        if (z != y) outside += ratio[z];
      const double divergence = js_sums[e] + ln2 * (outside / total);
      out.jensen_shannon[e] = 1.0 - std::sqrt(divergence / ln2 / 2.0);
    }
  }
  return out;
}

ClusterMapping cluster_mapping(const std::vector<double>& column_mass, std::int64_t n_query,
                               const std::vector<double>& b, const std::vector<std::int32_t>& reference_codes,
                               std::int64_t n_reference, const std::vector<double>& query_cluster_mass) {
  require(static_cast<std::int64_t>(column_mass.size()) == n_query * static_cast<std::int64_t>(b.size()), "", "",
          "cluster mapping: column mass and b of inconsistent sizes");
  return cluster_mapping(column_mass.data(), n_query, b, reference_codes, n_reference, query_cluster_mass);
}

ClusterMapping cluster_mapping(const double* column_mass, std::int64_t n_query, const std::vector<double>& b,
                               const std::vector<std::int32_t>& reference_codes, std::int64_t n_reference,
                               const std::vector<double>& query_cluster_mass) {
  const auto m = static_cast<std::int64_t>(b.size());
  require(reference_codes.size() == b.size(), "", "", "cluster mapping: b and reference codes of inconsistent sizes");
  const MappingSums sums = mapping_sums(column_mass, n_query, m, b.data(), reference_codes.data(), n_reference);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(n_reference), 0);
  for (const auto c : reference_codes) ++sizes[static_cast<std::size_t>(c)];
  std::vector<double> totals(static_cast<std::size_t>(n_query), 0.0);
  for (std::int64_t x = 0; x < n_query; ++x)
    for (std::int64_t y = 0; y < n_reference; ++y)
      totals[static_cast<std::size_t>(x)] += sums.ratio[static_cast<std::size_t>(x * n_reference + y)];
  const auto js = jensen_shannon_sums(column_mass, n_query, m, b.data(), reference_codes.data(), n_reference,
                                      totals, sizes);
  return finish_mapping(sums, js, sizes, query_cluster_mass);
}

DistanceSums::DistanceSums(std::int64_t k_q, std::int64_t k_r)
    : n_query(k_q), n_reference(k_r), mass(static_cast<std::size_t>(k_q * k_r), 0.0),
      weighted_cost(mass.size(), 0.0), cost(mass.size(), 0.0), count(mass.size(), 0) {}

void DistanceSums::add(const DistanceSums& other) {
  require(other.n_query == n_query && other.n_reference == n_reference, "", "", "distance sums of different shapes");
  for (std::size_t e = 0; e < mass.size(); ++e) {
    mass[e] += other.mass[e];
    weighted_cost[e] += other.weighted_cost[e];
    cost[e] += other.cost[e];
    count[e] += other.count[e];
  }
}

std::vector<double> cluster_distance(const DistanceSums& sums, double min_mass) {
  std::vector<double> d(sums.mass.size());
  for (std::size_t e = 0; e < d.size(); ++e) {
    if (sums.mass[e] > min_mass) {
      d[e] = sums.weighted_cost[e] / sums.mass[e];
    } else {
      require(sums.count[e] > 0, "", "",
              "cluster distance: no sampled cells for cluster pair " + std::to_string(e));
      d[e] = sums.cost[e] / static_cast<double>(sums.count[e]);
    }
  }
  return d;
}

std::vector<std::uint8_t> distance_sample(const std::vector<std::int32_t>& codes, std::int64_t n_clusters,
                                          std::int64_t n_samples, std::uint64_t seed, Side side) {
  if (n_samples < 1) throw Error::option("n-samples", "must be at least 1");
  std::vector<std::vector<std::int64_t>> members(static_cast<std::size_t>(n_clusters));
  for (std::size_t i = 0; i < codes.size(); ++i) {
    require(codes[i] >= 0 && codes[i] < n_clusters, "", "", [&] {
      return "cluster code " + std::to_string(codes[i]) + " outside [0, " + std::to_string(n_clusters) + ")";
    });
    members[static_cast<std::size_t>(codes[i])].push_back(static_cast<std::int64_t>(i));
  }
  std::vector<std::uint8_t> keep(codes.size(), 0);
  for (std::int64_t c = 0; c < n_clusters; ++c) {
    auto& pool = members[static_cast<std::size_t>(c)];
    const auto size = static_cast<std::int64_t>(pool.size());
    std::int64_t take = size;
    if (size > n_samples) {
      take = n_samples;
      random::Stream s(seed, random::Purpose::map_distance_sample,
                       (static_cast<std::uint64_t>(side) << 32) + static_cast<std::uint64_t>(c));
      for (std::int64_t i = 0; i < take; ++i) {
        const auto j = i + static_cast<std::int64_t>(s.below(static_cast<std::uint64_t>(size - i)));
        std::swap(pool[static_cast<std::size_t>(i)], pool[static_cast<std::size_t>(j)]);
      }
    }
    for (std::int64_t i = 0; i < take; ++i) keep[static_cast<std::size_t>(pool[static_cast<std::size_t>(i)])] = 1;
  }
  return keep;
}

std::vector<std::vector<std::int64_t>> select_similar_clusters(const std::vector<double>& mapping,
                                                               const std::vector<double>& distance,
                                                               std::int64_t n_query, std::int64_t n_reference,
                                                               const SimilarOptions& options) {
  require(static_cast<std::int64_t>(mapping.size()) == n_query * n_reference && distance.size() == mapping.size(),
          "", "", "similar clusters: mapping and distance must both be k_q x k_r");
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(n_query));
  for (std::int64_t x = 0; x < n_query; ++x) {
    const double* score = mapping.data() + x * n_reference;
    const double* dist = distance.data() + x * n_reference;
    std::vector<std::int64_t> order(static_cast<std::size_t>(n_reference));
    std::iota(order.begin(), order.end(), std::int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      if (std::isnan(score[a]) || std::isnan(score[b])) return !std::isnan(score[a]) && std::isnan(score[b]);
      return score[a] > score[b];
    });
    if (options.n_top >= 0 && options.n_top < n_reference) order.resize(static_cast<std::size_t>(options.n_top));
    for (const auto y : order)
      if (dist[y] <= options.threshold_distance && score[y] >= options.threshold_mapping)
        out[static_cast<std::size_t>(x)].push_back(y);
  }
  return out;
}

}  // namespace kotml::map
