#include "kotml/graph/csr_graph.hpp"

#include <cmath>
#include <limits>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::graph {
namespace {

using IdView = Kokkos::View<NodeId*, MemSpace>;
using OffsetView = Kokkos::View<EdgeOffset*, MemSpace>;
using LengthView = Kokkos::View<double*, MemSpace>;

/// (neighbour, length) pairs ordered by neighbour, then length: after sorting a
/// row, the first of each run of equal neighbours is the shortest parallel edge.
KOKKOS_INLINE_FUNCTION bool pair_less(NodeId a, double la, NodeId b, double lb) {
  return a < b || (a == b && la < lb);
}

/// In-place heapsort of one row's pairs: O(d log d) whatever the degree, no
/// allocation, callable on a device. Rows of hubs (in-degree in the hundreds in
/// high dimensions) make insertion sort's O(d²) a real risk.
KOKKOS_INLINE_FUNCTION void sift_down(NodeId* key, double* len, std::int64_t root,
                                      std::int64_t count) {
  while (true) {
    std::int64_t child = 2 * root + 1;
    if (child >= count) return;
    if (child + 1 < count && pair_less(key[child], len[child], key[child + 1], len[child + 1]))
      ++child;
    if (!pair_less(key[root], len[root], key[child], len[child])) return;
    const NodeId k = key[root];
    key[root] = key[child];
    key[child] = k;
    const double l = len[root];
    len[root] = len[child];
    len[child] = l;
    root = child;
  }
}

KOKKOS_INLINE_FUNCTION void heapsort_pairs(NodeId* key, double* len, std::int64_t count) {
  for (std::int64_t start = count / 2 - 1; start >= 0; --start) sift_down(key, len, start, count);
  for (std::int64_t end = count - 1; end > 0; --end) {
    const NodeId k = key[0];
    key[0] = key[end];
    key[end] = k;
    const double l = len[0];
    len[0] = len[end];
    len[end] = l;
    sift_down(key, len, 0, end);
  }
}

void count_endpoints(Kokkos::View<const NodeId*, MemSpace> from,
                     Kokkos::View<const NodeId*, MemSpace> to, OffsetView degree) {
  // Integer atomics: the counts are exact whatever the interleaving.
  Kokkos::parallel_for(
      "kotml::graph::count_endpoints", Kokkos::RangePolicy<ExecSpace>(0, from.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t e) {
        if (from(e) == to(e)) return;
        Kokkos::atomic_fetch_add(&degree(from(e)), EdgeOffset(1));
        Kokkos::atomic_fetch_add(&degree(to(e)), EdgeOffset(1));
      });
}

/// offsets(i) = sum of counts(0..i-1); offsets(n) = total. Integer scan: exact.
void exclusive_scan(OffsetView counts, OffsetView offsets) {
  const std::int64_t n = counts.extent(0);
  Kokkos::parallel_scan(
      "kotml::graph::exclusive_scan", Kokkos::RangePolicy<ExecSpace>(0, n + 1),
      KOKKOS_LAMBDA(const std::int64_t i, EdgeOffset& running, const bool final) {
        if (final) offsets(i) = running;
        if (i < n) running += counts(i);
      });
}

void scatter_endpoints(Kokkos::View<const NodeId*, MemSpace> from,
                       Kokkos::View<const NodeId*, MemSpace> to,
                       Kokkos::View<const double*, MemSpace> length, OffsetView cursor,
                       IdView slot_node, LengthView slot_length) {
  // Slots within a row are claimed in a racy order; the per-row sort that
  // follows makes the result independent of it.
  Kokkos::parallel_for(
      "kotml::graph::scatter_endpoints", Kokkos::RangePolicy<ExecSpace>(0, from.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t e) {
        const NodeId a = from(e), b = to(e);
        if (a == b) return;
        const EdgeOffset sa = Kokkos::atomic_fetch_add(&cursor(a), EdgeOffset(1));
        slot_node(sa) = b;
        slot_length(sa) = length(e);
        const EdgeOffset sb = Kokkos::atomic_fetch_add(&cursor(b), EdgeOffset(1));
        slot_node(sb) = a;
        slot_length(sb) = length(e);
      });
}

void sort_rows_and_count_unique(OffsetView raw_offsets, IdView slot_node, LengthView slot_length,
                                OffsetView unique_count) {
  Kokkos::parallel_for(
      "kotml::graph::sort_rows", Kokkos::RangePolicy<ExecSpace>(0, unique_count.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const EdgeOffset begin = raw_offsets(i), end = raw_offsets(i + 1);
        heapsort_pairs(&slot_node(begin), &slot_length(begin), end - begin);
        EdgeOffset unique = 0;
        for (EdgeOffset s = begin; s < end; ++s)
          if (s == begin || slot_node(s) != slot_node(s - 1)) ++unique;
        unique_count(i) = unique;
      });
}

void compact_rows(OffsetView raw_offsets, IdView slot_node, LengthView slot_length,
                  OffsetView offsets, IdView neighbors, LengthView weights) {
  Kokkos::parallel_for(
      "kotml::graph::compact_rows", Kokkos::RangePolicy<ExecSpace>(0, offsets.extent(0) - 1),
      KOKKOS_LAMBDA(const std::int64_t i) {
        EdgeOffset out = offsets(i);
        for (EdgeOffset s = raw_offsets(i); s < raw_offsets(i + 1); ++s) {
          if (s != raw_offsets(i) && slot_node(s) == slot_node(s - 1)) continue;
          neighbors(out) = slot_node(s);
          weights(out) = slot_length(s);
          ++out;
        }
      });
}

std::int64_t last_entry(OffsetView v) {
  EdgeOffset value = 0;
  Kokkos::deep_copy(value, Kokkos::subview(v, v.extent(0) - 1));
  return value;
}

}  // namespace

CsrGraph<MemSpace> undirected_graph_from_edges(std::int64_t n,
                                               Kokkos::View<const NodeId*, MemSpace> from,
                                               Kokkos::View<const NodeId*, MemSpace> to,
                                               Kokkos::View<const double*, MemSpace> length) {
  OffsetView degree("kotml::graph::raw_degree", n);
  count_endpoints(from, to, degree);
  OffsetView raw_offsets(no_init("kotml::graph::raw_offsets"), n + 1);
  exclusive_scan(degree, raw_offsets);
  const std::int64_t raw_total = last_entry(raw_offsets);

  OffsetView cursor(no_init("kotml::graph::cursor"), n);
  Kokkos::deep_copy(cursor, Kokkos::subview(raw_offsets, Kokkos::make_pair(std::int64_t(0), n)));
  IdView slot_node(no_init("kotml::graph::slot_node"), raw_total);
  LengthView slot_length(no_init("kotml::graph::slot_length"), raw_total);
  scatter_endpoints(from, to, length, cursor, slot_node, slot_length);

  OffsetView unique_count(no_init("kotml::graph::unique_count"), n);
  sort_rows_and_count_unique(raw_offsets, slot_node, slot_length, unique_count);

  CsrGraph<MemSpace> g;
  g.n = n;
  g.offsets = OffsetView(no_init("kotml::graph::offsets"), n + 1);
  exclusive_scan(unique_count, g.offsets);
  const std::int64_t total = last_entry(g.offsets);
  g.neighbors = IdView(no_init("kotml::graph::neighbors"), total);
  g.weights = LengthView(no_init("kotml::graph::weights"), total);
  compact_rows(raw_offsets, slot_node, slot_length, g.offsets, g.neighbors, g.weights);
  return g;
}

CsrGraph<MemSpace> graph_from_csr(std::int64_t n, const std::vector<std::int64_t>& indptr,
                                  const std::vector<std::int64_t>& indices,
                                  const std::vector<double>& data, const std::string& source) {
  require(n > 0, source, "", "the graph has no nodes");
  require(n < std::numeric_limits<NodeId>::max(), source, "",
          "the graph has " + std::to_string(n) + " nodes; at most 2^31-2 are supported");
  require(static_cast<std::int64_t>(indptr.size()) == n + 1, source, "indptr",
          "has " + std::to_string(indptr.size()) + " entries, expected n+1 = " +
              std::to_string(n + 1));
  require(indptr.front() == 0, source, "indptr", "must start at 0");
  for (std::int64_t i = 0; i < n; ++i)
    require(indptr[i] <= indptr[i + 1], source, "indptr", [&] { return "decreases at row " + std::to_string(i); });
  const std::int64_t nnz = indptr.back();
  require(static_cast<std::int64_t>(indices.size()) == nnz &&
              static_cast<std::int64_t>(data.size()) == nnz,
          source, "indices/data", "lengths differ from indptr[n] = " + std::to_string(nnz));

  auto from = Kokkos::View<NodeId*, HostSpace>("kotml::graph::csr_from", nnz);
  auto to = Kokkos::View<NodeId*, HostSpace>("kotml::graph::csr_to", nnz);
  auto length = Kokkos::View<double*, HostSpace>("kotml::graph::csr_length", nnz);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const std::int64_t j = indices[e];
      require(j >= 0 && j < n, source, "indices", [&] {
        return "node id " + std::to_string(j) + " in row " + std::to_string(i) + " is outside [0, " +
               std::to_string(n) + ")";
      });
      require(std::isfinite(data[e]) && data[e] >= 0.0, source, "data", [&] {
        return "edge (" + std::to_string(i) + ", " + std::to_string(j) + ") has length " +
               log::number_text(data[e]) + "; lengths must be finite and non-negative";
      });
      from(e) = static_cast<NodeId>(i);
      to(e) = static_cast<NodeId>(j);
      length(e) = data[e];
    }
  }
  auto from_d = Kokkos::create_mirror_view_and_copy(MemSpace(), from);
  auto to_d = Kokkos::create_mirror_view_and_copy(MemSpace(), to);
  auto length_d = Kokkos::create_mirror_view_and_copy(MemSpace(), length);
  return undirected_graph_from_edges(n, from_d, to_d, length_d);
}

bool is_canonical_undirected(const CsrGraph<MemSpace>& g) {
  const auto h = copy_graph<HostSpace>(g);
  if (h.offsets.extent(0) != static_cast<std::size_t>(g.n + 1) || h.offsets(0) != 0) return false;
  for (std::int64_t i = 0; i < g.n; ++i) {
    for (EdgeOffset e = h.offsets(i); e < h.offsets(i + 1); ++e) {
      const NodeId j = h.neighbors(e);
      if (j < 0 || j >= g.n || j == i) return false;
      if (e > h.offsets(i) && h.neighbors(e - 1) >= j) return false;
      // The reverse entry must exist with the same length: binary search row j.
      EdgeOffset lo = h.offsets(j), hi = h.offsets(j + 1);
      while (lo < hi) {
        const EdgeOffset mid = lo + (hi - lo) / 2;
        if (h.neighbors(mid) < i) lo = mid + 1; else hi = mid;
      }
      if (lo == h.offsets(j + 1) || h.neighbors(lo) != i || h.weights(lo) != h.weights(e))
        return false;
    }
  }
  return true;
}

}  // namespace kotml::graph
