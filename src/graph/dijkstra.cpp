#include "kotml/graph/dijkstra.hpp"

namespace kotml::graph {
namespace {

using ScratchSpace = ExecSpace::scratch_memory_space;
using ScratchDoubles =
    Kokkos::View<double*, ScratchSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ScratchIds = Kokkos::View<NodeId*, ScratchSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;

/// Level 1: the workspace grows with n (24 bytes a node), beyond what fast
/// on-chip scratch holds on a GPU; on the host both levels are plain memory.
/// An enumerator, not a constexpr variable: Kokkos takes the level by reference,
/// and a namespace-scope variable has no address in CUDA device code.
enum : int { scratch_level = 1 };

/// One team per source. A single thread walks the heap: Dijkstra's settle order
/// is sequential, and rows of kNN graphs (degree ≈ k) are too short to split.
/// With `new_of_old` (a relabelled graph, node_order.hpp) sources and columns
/// are the caller's ids, renamed on the way in and out.
template <class T>
struct ShortestPathsFromSources {
  CsrGraph<MemSpace> g;
  Kokkos::View<const NodeId*, MemSpace> sources;
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> out;
  Kokkos::View<const NodeId*, MemSpace> new_of_old;  // empty: the graph's own ids

  KOKKOS_FUNCTION void operator()(const TeamPolicy::member_type& team) const {
    const NodeId n = static_cast<NodeId>(g.n);
    ScratchDoubles dist(team.team_scratch(scratch_level), n);
    ScratchDoubles heap_key(team.team_scratch(scratch_level), n);
    ScratchIds heap_node(team.team_scratch(scratch_level), n);
    ScratchIds pos(team.team_scratch(scratch_level), n);
    const std::int64_t row = team.league_rank();
    const bool renamed = new_of_old.extent(0) > 0;
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      const NodeId source = renamed ? new_of_old(sources(row)) : sources(row);
      dijkstra_from(g.offsets, g.neighbors, g.weights, n, source, dist.data(), heap_key.data(),
                    heap_node.data(), pos.data());
      if (renamed) {
        for (NodeId v = 0; v < n; ++v) out(row, v) = static_cast<T>(dist(new_of_old(v)));
      } else {
        for (NodeId v = 0; v < n; ++v) out(row, v) = static_cast<T>(dist(v));
      }
    });
  }
};

}  // namespace

std::size_t dijkstra_scratch_bytes(std::int64_t n) {
  return 2 * ScratchDoubles::shmem_size(n) + 2 * ScratchIds::shmem_size(n);
}

namespace {

template <class T>
void launch_shortest_paths(const CsrGraph<MemSpace>& g, Kokkos::View<const NodeId*, MemSpace> sources,
                           Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> out,
                           Kokkos::View<const NodeId*, MemSpace> new_of_old) {
  const std::int64_t count = sources.extent(0);
  if (count == 0 || g.n == 0) return;
  TeamPolicy policy(count, 1);
  policy.set_scratch_size(scratch_level, Kokkos::PerTeam(dijkstra_scratch_bytes(g.n)));
  Kokkos::parallel_for("kotml::graph::shortest_paths", policy,
                       ShortestPathsFromSources<T>{g, sources, out, new_of_old});
}

}  // namespace

template <class T>
void shortest_paths(const CsrGraph<MemSpace>& g, Kokkos::View<const NodeId*, MemSpace> sources,
                    Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> out) {
  launch_shortest_paths<T>(g, sources, out, {});
}

template <class T>
void shortest_paths(const LocalityOrderedGraph& g, Kokkos::View<const NodeId*, MemSpace> sources,
                    Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> out) {
  launch_shortest_paths<T>(g.graph, sources, out, g.new_of_old);
}

template void shortest_paths<float>(const CsrGraph<MemSpace>&,
                                    Kokkos::View<const NodeId*, MemSpace>,
                                    Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>);
template void shortest_paths<double>(const CsrGraph<MemSpace>&,
                                     Kokkos::View<const NodeId*, MemSpace>,
                                     Kokkos::View<double**, Kokkos::LayoutRight, MemSpace>);
template void shortest_paths<float>(const LocalityOrderedGraph&, Kokkos::View<const NodeId*, MemSpace>,
                                    Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>);
template void shortest_paths<double>(const LocalityOrderedGraph&, Kokkos::View<const NodeId*, MemSpace>,
                                     Kokkos::View<double**, Kokkos::LayoutRight, MemSpace>);

}  // namespace kotml::graph
