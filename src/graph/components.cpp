#include "kotml/graph/components.hpp"

namespace kotml::graph {
namespace {

using IdView = Kokkos::View<NodeId*, MemSpace>;

void init_labels(IdView parent) {
  Kokkos::parallel_for(
      "kotml::graph::cc_init", Kokkos::RangePolicy<ExecSpace>(0, parent.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t v) { parent(v) = static_cast<NodeId>(v); });
}

/// Hooks the larger of two adjacent labels onto the smaller. Reads `parent`
/// only; `next` starts as a copy and receives atomic minima. Returns how many
/// edges still join different labels.
std::int64_t hook(const CsrGraph<MemSpace>& g, IdView parent, IdView next) {
  auto offsets = g.offsets;
  auto neighbors = g.neighbors;
  std::int64_t crossing = 0;
  Kokkos::parallel_reduce(
      "kotml::graph::cc_hook", Kokkos::RangePolicy<ExecSpace>(0, g.n),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& count) {
        const NodeId pv = parent(v);
        for (EdgeOffset e = offsets(v); e < offsets(v + 1); ++e) {
          const NodeId pu = parent(neighbors(e));
          if (pu < pv) {
            // Both the label's root and the node itself move down: the root
            // carries the whole tree, the node makes progress even when its
            // root is hooked elsewhere in the same round.
            Kokkos::atomic_fetch_min(&next(pv), pu);
            Kokkos::atomic_fetch_min(&next(v), pu);
            ++count;
          }
        }
      },
      crossing);
  return crossing;
}

/// One pointer-jumping step, next(v) = parent(parent(v)); returns how many changed.
std::int64_t jump(IdView parent, IdView next) {
  std::int64_t changed = 0;
  Kokkos::parallel_reduce(
      "kotml::graph::cc_jump", Kokkos::RangePolicy<ExecSpace>(0, parent.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& count) {
        const NodeId grand = parent(parent(v));
        next(v) = grand;
        if (grand != parent(v)) ++count;
      },
      changed);
  return changed;
}

std::int64_t count_roots(IdView parent) {
  std::int64_t roots = 0;
  Kokkos::parallel_reduce(
      "kotml::graph::cc_count", Kokkos::RangePolicy<ExecSpace>(0, parent.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& count) {
        if (parent(v) == static_cast<NodeId>(v)) ++count;
      },
      roots);
  return roots;
}

}  // namespace

Components connected_components(const CsrGraph<MemSpace>& g) {
  IdView parent(no_init("kotml::graph::cc_parent"), g.n);
  IdView next(no_init("kotml::graph::cc_next"), g.n);
  init_labels(parent);
  // Labels only decrease and stay inside their component, and every label is
  // ≤ its node, so when no edge joins different labels after full jumping,
  // each component points at its smallest node.
  while (true) {
    Kokkos::deep_copy(next, parent);
    const std::int64_t crossing = hook(g, parent, next);
    std::swap(parent, next);
    while (jump(parent, next) > 0) std::swap(parent, next);
    if (crossing == 0) break;
  }
  Components c;
  c.label = parent;
  c.count = count_roots(parent);
  return c;
}

}  // namespace kotml::graph
