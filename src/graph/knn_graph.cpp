#include "kotml/graph/knn_graph.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/graph/components.hpp"

namespace kotml::graph {
namespace {

using IdView = Kokkos::View<NodeId*, MemSpace>;
using LengthView = Kokkos::View<double*, MemSpace>;

/// Smallest flat index (row·d + column) of a coordinate that is NaN or ±inf,
/// or -1 when all are finite.
std::int64_t first_non_finite(Matrix<const double> x) {
  const std::int64_t d = x.extent(1);
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce(
      "kotml::graph::check_finite", Kokkos::RangePolicy<ExecSpace>(0, x.extent(0) * d),
      KOKKOS_LAMBDA(const std::int64_t f, std::int64_t& m) {
        if (!kmath::isfinite(x(f / d, f % d)) && f < m) m = f;
      },
      Kokkos::Min<std::int64_t>(first));
  return first == std::numeric_limits<std::int64_t>::max() ? -1 : first;
}

void knn_search(Matrix<const double> x, int k, std::int64_t begin, NearestNeighbors nn) {
  const std::int64_t n = x.extent(0);
  auto idx = nn.indices;
  auto dist = nn.distances;
  Kokkos::parallel_for(
      "kotml::graph::knn_search", Kokkos::RangePolicy<ExecSpace>(0, nn.indices.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t row) {
        const std::int64_t i = begin + row;
        // The row's own slots hold the running k best (squared) in order;
        // scanning j upwards and shifting only past strictly larger distances
        // keeps the smaller index first among equals.
        int count = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          if (j == i) continue;
          const double d2 = squared_distance(x, i, j);
          if (count == k && !(d2 < dist(row, k - 1))) continue;
          int t = count < k ? count++ : k - 1;
          while (t > 0 && dist(row, t - 1) > d2) {
            dist(row, t) = dist(row, t - 1);
            idx(row, t) = idx(row, t - 1);
            --t;
          }
          dist(row, t) = d2;
          idx(row, t) = static_cast<NodeId>(j);
        }
        for (int t = 0; t < k; ++t) dist(row, t) = kmath::sqrt(dist(row, t));
      });
}

void flatten_knn_edges(const NearestNeighbors& nn, IdView from, IdView to, LengthView length) {
  const std::int64_t k = nn.indices.extent(1);
  auto idx = nn.indices;
  auto dist = nn.distances;
  Kokkos::parallel_for(
      "kotml::graph::knn_edges",
      Kokkos::RangePolicy<ExecSpace>(0, nn.indices.extent(0) * k),
      KOKKOS_LAMBDA(const std::int64_t e) {
        from(e) = static_cast<NodeId>(e / k);
        to(e) = idx(e / k, e % k);
        length(e) = dist(e / k, e % k);
      });
}

/// The nodes carrying `label`, in increasing id (an exact integer scan).
IdView nodes_with_label(Kokkos::View<const NodeId*, MemSpace> label, NodeId wanted) {
  const std::int64_t n = label.extent(0);
  std::int64_t count = 0;
  Kokkos::parallel_reduce(
      "kotml::graph::count_label", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& c) { c += label(v) == wanted ? 1 : 0; },
      count);
  IdView members(no_init("kotml::graph::component_members"), count);
  Kokkos::parallel_scan(
      "kotml::graph::list_label", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& slot, const bool final) {
        if (label(v) != wanted) return;
        if (final) members(slot) = static_cast<NodeId>(v);
        ++slot;
      });
  return members;
}

/// For every node outside the growing main component: the closest node of the
/// newly joined part, if closer than what it had (ties to the smaller id).
void relax_bridges(Matrix<const double> x, Kokkos::View<const NodeId*, MemSpace> label,
                   Kokkos::View<const std::uint8_t*, MemSpace> in_main, IdView joined,
                   LengthView best_d2, IdView best_from) {
  Kokkos::parallel_for(
      "kotml::graph::relax_bridges", Kokkos::RangePolicy<ExecSpace>(0, label.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t v) {
        if (in_main(v)) return;
        double best = best_d2(v);
        NodeId from = best_from(v);
        for (std::size_t t = 0; t < joined.extent(0); ++t) {
          const NodeId u = joined(t);
          const double d2 = squared_distance(x, u, v);
          if (d2 < best || (d2 == best && u < from)) {
            best = d2;
            from = u;
          }
        }
        best_d2(v) = best;
        best_from(v) = from;
      });
}

struct Bridge {
  NodeId from;  // inside the main component
  NodeId to;    // outside
  double squared_length;
};

/// The closest (main, outside) pair: smallest distance, then smallest main
/// node, then smallest outside node — the pair TorchGW's argmin over
/// component 0 picks.
Bridge closest_bridge(Kokkos::View<const std::uint8_t*, MemSpace> in_main, LengthView best_d2,
                      IdView best_from) {
  const std::int64_t n = in_main.extent(0);
  double shortest = kmath::infinity<double>();
  Kokkos::parallel_reduce(
      "kotml::graph::shortest_bridge", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const std::int64_t v, double& m) {
        if (!in_main(v) && best_d2(v) < m) m = best_d2(v);
      },
      Kokkos::Min<double>(shortest));
  std::int64_t key = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce(
      "kotml::graph::first_shortest_bridge", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& m) {
        if (in_main(v) || best_d2(v) != shortest) return;
        const std::int64_t candidate = static_cast<std::int64_t>(best_from(v)) * n + v;
        if (candidate < m) m = candidate;
      },
      Kokkos::Min<std::int64_t>(key));
  return {static_cast<NodeId>(key / n), static_cast<NodeId>(key % n), shortest};
}

void mark_joined(IdView joined, Kokkos::View<std::uint8_t*, MemSpace> in_main) {
  Kokkos::parallel_for(
      "kotml::graph::mark_joined", Kokkos::RangePolicy<ExecSpace>(0, joined.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t t) { in_main(joined(t)) = 1; });
}

void init_bridge_search(LengthView best_d2, IdView best_from) {
  Kokkos::parallel_for(
      "kotml::graph::init_bridges", Kokkos::RangePolicy<ExecSpace>(0, best_d2.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t v) {
        best_d2(v) = kmath::infinity<double>();
        best_from(v) = kmath::max_value<NodeId>();
      });
}

}  // namespace

NearestNeighbors k_nearest_neighbors(Matrix<const double> points, int k) {
  return k_nearest_neighbors(points, k, 0, points.extent(0));
}

NearestNeighbors k_nearest_neighbors(Matrix<const double> points, int k, std::int64_t begin,
                                     std::int64_t end) {
  NearestNeighbors nn;
  nn.indices = decltype(nn.indices)(no_init("kotml::graph::knn_indices"), end - begin, k);
  nn.distances = decltype(nn.distances)(no_init("kotml::graph::knn_distances"), end - begin, k);
  knn_search(points, k, begin, nn);
  return nn;
}

namespace {

void validate_cloud(Matrix<const double> points, int k, const std::string& source) {
  const std::int64_t n = points.extent(0);
  require(n > 0 && points.extent(1) > 0, source, "",
          "the point cloud is empty (" + std::to_string(n) + " points of dimension " +
              std::to_string(points.extent(1)) + ")");
  require(n < std::numeric_limits<NodeId>::max(), source, "",
          "too many points for a graph: " + std::to_string(n));
  require(k >= 1, source, "k", "the number of neighbours must be at least 1, got " +
                                   std::to_string(k));
  require(k < n, source, "k",
          "k = " + std::to_string(k) + " neighbours needs more than k points, the cloud has " +
              std::to_string(n));
  const std::int64_t bad = first_non_finite(points);
  require(bad < 0, source, "point " + std::to_string(bad < 0 ? 0 : bad / points.extent(1)),
          "coordinate " + std::to_string(bad < 0 ? 0 : bad % points.extent(1)) +
              " is not a finite number");
}

/// Steps 2 and 3 of the construction, from every point's neighbours.
CsrGraph<MemSpace> connected_union_graph(Matrix<const double> points, const NearestNeighbors& nn,
                                         KnnGraphReport* report) {
  const std::int64_t n = points.extent(0);
  const std::int64_t k = nn.indices.extent(1);
  const std::int64_t knn_edges = n * k;
  IdView from(no_init("kotml::graph::edge_from"), knn_edges);
  IdView to(no_init("kotml::graph::edge_to"), knn_edges);
  LengthView length(no_init("kotml::graph::edge_length"), knn_edges);
  flatten_knn_edges(nn, from, to, length);
  CsrGraph<MemSpace> g = undirected_graph_from_edges(n, from, to, length);

  const Components comps = connected_components(g);
  KnnGraphReport local;
  local.components_before_bridging = comps.count;
  if (comps.count > 1) {
    // Growing node 0's component one closest pair at a time is what TorchGW's
    // loop does (it recomputes component 0 after each bridge); keeping, for
    // each outside node, its closest main node makes the whole search O(n²·d)
    // instead of O(components·n²·d).
    Kokkos::View<std::uint8_t*, MemSpace> in_main("kotml::graph::in_main", n);
    LengthView best_d2(no_init("kotml::graph::bridge_d2"), n);
    IdView best_from(no_init("kotml::graph::bridge_from"), n);
    init_bridge_search(best_d2, best_from);
    auto label_h = Kokkos::create_mirror_view_and_copy(HostSpace(), comps.label);
    IdView joined = nodes_with_label(comps.label, 0);
    mark_joined(joined, in_main);

    const std::int64_t bridges = comps.count - 1;
    auto bridge_from = Kokkos::View<NodeId*, HostSpace>("kotml::graph::bridge_a", bridges);
    auto bridge_to = Kokkos::View<NodeId*, HostSpace>("kotml::graph::bridge_b", bridges);
    auto bridge_len = Kokkos::View<double*, HostSpace>("kotml::graph::bridge_len", bridges);
    for (std::int64_t b = 0; b < bridges; ++b) {
      relax_bridges(points, comps.label, in_main, joined, best_d2, best_from);
      const Bridge br = closest_bridge(in_main, best_d2, best_from);
      bridge_from(b) = br.from;
      bridge_to(b) = br.to;
      bridge_len(b) = std::sqrt(br.squared_length);
      if (bridge_len(b) > local.longest_bridge) local.longest_bridge = bridge_len(b);
      joined = nodes_with_label(comps.label, label_h(br.to));
      mark_joined(joined, in_main);
    }
    local.bridges_added = bridges;

    IdView all_from(no_init("kotml::graph::all_from"), knn_edges + bridges);
    IdView all_to(no_init("kotml::graph::all_to"), knn_edges + bridges);
    LengthView all_length(no_init("kotml::graph::all_length"), knn_edges + bridges);
    const auto knn_part = Kokkos::make_pair(std::int64_t(0), knn_edges);
    const auto bridge_part = Kokkos::make_pair(knn_edges, knn_edges + bridges);
    Kokkos::deep_copy(Kokkos::subview(all_from, knn_part), from);
    Kokkos::deep_copy(Kokkos::subview(all_to, knn_part), to);
    Kokkos::deep_copy(Kokkos::subview(all_length, knn_part), length);
    Kokkos::deep_copy(Kokkos::subview(all_from, bridge_part), bridge_from);
    Kokkos::deep_copy(Kokkos::subview(all_to, bridge_part), bridge_to);
    Kokkos::deep_copy(Kokkos::subview(all_length, bridge_part), bridge_len);
    g = undirected_graph_from_edges(n, all_from, all_to, all_length);
  }
  if (report) *report = local;
  return g;
}

}  // namespace

namespace {

/// Squared distances leave double's range when coordinates pass 2^±500 (1e150
/// and 1e-300 gave all-inf or all-zero edge lengths). Such clouds are built
/// scaled by 2^-e, e = the exponent of the largest |coordinate|; the lengths
/// are multiplied back by 2^e. Power-of-two scaling commutes with every
/// rounding, so the graph is the one exact arithmetic would give, to the bit
/// where the unscaled sums did not leave the range. 0 when no scaling is needed.
int range_exponent(Matrix<const double> points) {
  double largest = 0;
  const auto d = static_cast<std::int64_t>(points.extent(1));
  Kokkos::parallel_reduce(
      "kotml::graph::largest_coordinate", Kokkos::RangePolicy<ExecSpace>(0, points.extent(0) * d),
      KOKKOS_LAMBDA(const std::int64_t e, double& m) {
        const double v = kmath::fabs(points(e / d, e % d));
        m = v > m ? v : m;
      },
      Kokkos::Max<double>(largest));
  if (!(largest > 0)) return 0;
  const int e = std::ilogb(largest);
  return (e > 500 || e < -500) ? e : 0;
}

Matrix<double> scaled_points(Matrix<const double> points, int exponent) {
  Matrix<double> scaled(no_init("kotml::graph::scaled_points"), points.extent(0), points.extent(1));
  const double factor = std::ldexp(1.0, -exponent);
  const auto d = static_cast<std::int64_t>(points.extent(1));
  Kokkos::parallel_for(
      "kotml::graph::scale_points", Kokkos::RangePolicy<ExecSpace>(0, points.extent(0) * d),
      KOKKOS_LAMBDA(const std::int64_t e) { scaled(e / d, e % d) = points(e / d, e % d) * factor; });
  return scaled;
}

void scale_lengths(CsrGraph<MemSpace>& g, KnnGraphReport* report, int exponent) {
  const double factor = std::ldexp(1.0, exponent);
  const auto weights = g.weights;
  Kokkos::parallel_for(
      "kotml::graph::scale_lengths", Kokkos::RangePolicy<ExecSpace>(0, weights.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t e) { weights(e) *= factor; });
  Kokkos::fence();
  if (report) report->longest_bridge *= factor;
}

CsrGraph<MemSpace> unscaled_knn_graph(Matrix<const double> points, int k, KnnGraphReport* report) {
  return connected_union_graph(points, k_nearest_neighbors(points, k), report);
}

/// Rows of the kNN search split over ranks, gathered, then joined and bridged
/// as on one rank. The gathered neighbours are the same on every rank: a
/// simulated run with folding keeps one copy for all ranks.
CsrGraph<MemSpace> build_scattered_knn_graph(Matrix<const double> points, int k, const dist::Comm& comm,
                                             KnnGraphReport* report) {
  const std::int64_t n = points.extent(0);
  const auto rows = dist::block_of(n, comm.size(), comm.rank());
  const auto mine = k_nearest_neighbors(points, k, rows.begin, rows.end);
  const auto mine_idx = Kokkos::create_mirror_view_and_copy(HostSpace(), mine.indices);
  const auto mine_dist = Kokkos::create_mirror_view_and_copy(HostSpace(), mine.distances);
  const bool everywhere = comm.spans_world();
  const auto all_idx = sim::folded<NodeId, HostSpace>("kotml::graph::knn_indices_gathered",
                                                      static_cast<std::size_t>(n * k), everywhere);
  const auto all_dist = sim::folded<double, HostSpace>("kotml::graph::knn_distances_gathered",
                                                       static_cast<std::size_t>(n * k), everywhere);
  const auto own_offset = static_cast<std::size_t>(rows.begin * k);
  sim::write_own_block(all_idx, mine_idx.data(), mine_idx.span(), own_offset);
  sim::write_own_block(all_dist, mine_dist.data(), mine_dist.span(), own_offset);
  // Blocks are contiguous and in rank order, so the gathered rows are in node order.
  comm.allgatherv(mine_idx.data(), static_cast<std::int64_t>(mine_idx.span()), all_idx.view.data(), n * k);
  comm.allgatherv(mine_dist.data(), static_cast<std::int64_t>(mine_dist.span()), all_dist.view.data(), n * k);
  NearestNeighbors nn;
  nn.indices = Kokkos::create_mirror_view_and_copy(
      MemSpace(), Kokkos::View<NodeId**, Kokkos::LayoutRight, HostSpace>(all_idx.view.data(), n, k));
  nn.distances = Kokkos::create_mirror_view_and_copy(
      MemSpace(), Kokkos::View<double**, Kokkos::LayoutRight, HostSpace>(all_dist.view.data(), n, k));
  return connected_union_graph(points, nn, report);
}

/// The finished graph, which every rank holds alike, in memory that all ranks
/// of a simulated run with folding share. Called between two MPI calls, so one
/// rank's private copy at a time exists.
CsrGraph<MemSpace> shared_graph(CsrGraph<MemSpace> g, const dist::Comm& comm) {
  const bool everywhere = comm.spans_world();
  g.offsets = sim::shared_copy("kotml::graph::knn_graph_offsets", g.offsets, everywhere, g.shared_memory);
  g.neighbors = sim::shared_copy("kotml::graph::knn_graph_neighbors", g.neighbors, everywhere, g.shared_memory);
  g.weights = sim::shared_copy("kotml::graph::knn_graph_weights", g.weights, everywhere, g.shared_memory);
  return g;
}

}  // namespace

CsrGraph<MemSpace> build_knn_graph(Matrix<const double> points, int k, const std::string& source,
                                   KnnGraphReport* report) {
  validate_cloud(points, k, source);
  const int exponent = range_exponent(points);
  if (exponent == 0) return unscaled_knn_graph(points, k, report);
  auto g = unscaled_knn_graph(scaled_points(points, exponent), k, report);
  scale_lengths(g, report, exponent);
  return g;
}

CsrGraph<MemSpace> build_knn_graph(Matrix<const double> points, int k, const dist::Comm& comm,
                                   const std::string& source, KnnGraphReport* report) {
  comm.phase([&] { validate_cloud(points, k, source); });
  // Every rank holds every point, so every rank finds the same exponent.
  const int exponent = range_exponent(points);
  if (exponent != 0) {
    auto g = build_scattered_knn_graph(scaled_points(points, exponent), k, comm, report);
    scale_lengths(g, report, exponent);
    return shared_graph(std::move(g), comm);
  }
  return shared_graph(build_scattered_knn_graph(points, k, comm, report), comm);
}

}  // namespace kotml::graph
