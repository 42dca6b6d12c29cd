#pragma once
// The primal network simplex for one transport problem on the complete
// bipartite graph, as device-callable code over caller-provided scratch arrays
// (no allocation, no std containers): one Kokkos thread runs one problem.
//
// Graph: row nodes 0..n−1 (supply a_i), column nodes n..n+m−1 (demand b_j), and
// an artificial root node N = n+m joined to every node by an artificial arc. The
// real arcs i → n+j (arc id i·m + j) carry the costs; an artificial arc u → root
// costs 0, root → u costs ART, a cost larger than any path of real arcs (big-M),
// so artificial flow is driven out whenever the marginals can be matched.
//
// The basis is a spanning tree rooted at N, stored LEMON-style per node:
//   parent      the tree parent (−1 for the root)
//   flow        the flow on the node's tree arc (every tree arc is exactly one
//               node's arc to its parent, so flows are stored per node)
//   up          whether that arc points from the node to its parent (real arcs
//               always run row → column, so rows point up and columns down; only
//               the root's children need the stored flag)
//   thread      successor in a preorder of the tree (cyclic), rev_thread its inverse
//   succ        subtree size; last: last node of the subtree in preorder
//   pi          node potentials, with c_e + pi_source − pi_target = 0 on tree arcs
// and one byte per real arc: 1 when the arc is out of the basis (flow 0),
// 0 when it is a tree arc.
//
// Pivoting: block search over the real arcs in row-major order, continuing where
// the previous search stopped; a block holds ⌈√(n·m)⌉ arcs (at least 10) and the
// search returns the most negative reduced cost of the first block that has one
// below −1e−14·max(|c|, |pi_i|, |pi_j|). The leaving arc is chosen by
// Cunningham's rule (the last blocking arc met when walking the cycle in its
// direction from the apex), which keeps the tree strongly feasible and prevents
// cycling on degenerate problems (ties, duplicate points, zero weights).

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "simplex_pricing.hpp"

namespace kotml::ot::detail {

/// One problem's scratch; nodes = n + m + 1 entries per node array.
struct SimplexWorkspace {
  std::int32_t n = 0;
  std::int32_t m = 0;
  const double* cost = nullptr;  // n·m, row-major
  std::int8_t* state = nullptr;  // n·m
  double* supply = nullptr;
  double* flow = nullptr;
  double* pi = nullptr;
  std::int32_t* parent = nullptr;
  std::int32_t* thread = nullptr;
  std::int32_t* rev_thread = nullptr;
  std::int32_t* succ = nullptr;
  std::int32_t* last = nullptr;
  std::int8_t* up = nullptr;
  // Scratch for tree updates and tree building. A pivot records the cycle's
  // two tree paths, source → apex in `stem` and target → apex in `other_path`.
  std::int32_t* other_path = nullptr;
  std::int32_t* stem = nullptr;
  std::int32_t* stem_last = nullptr;
  std::int32_t* stem_prev = nullptr;
  std::int32_t* stem_after = nullptr;
  std::int32_t* stem_succ = nullptr;
};

class NetworkSimplex {
 public:
  KOKKOS_INLINE_FUNCTION explicit NetworkSimplex(const SimplexWorkspace& w)
      : w_(w), nodes_(w.n + w.m), root_(w.n + w.m) {
    const std::int64_t arcs = static_cast<std::int64_t>(w.n) * w.m;
    // kmath::max, not fmax: costs are finite (checked on input), and fmax is a
    // libm call on the host that this loop over every arc cannot afford. Four
    // running maxima in registers, not one dependent chain (the maximum does
    // not depend on the order).
    const double* cost = w.cost;
    double m0 = 0, m1 = 0, m2 = 0, m3 = 0;
    std::int64_t e = 0;
    for (; e + 4 <= arcs; e += 4) {
      m0 = kmath::max(m0, kmath::fabs(cost[e]));
      m1 = kmath::max(m1, kmath::fabs(cost[e + 1]));
      m2 = kmath::max(m2, kmath::fabs(cost[e + 2]));
      m3 = kmath::max(m3, kmath::fabs(cost[e + 3]));
    }
    for (; e < arcs; ++e) m0 = kmath::max(m0, kmath::fabs(cost[e]));
    const double largest = kmath::max(kmath::max(m0, m1), kmath::max(m2, m3));
    art_cost_ = (largest + 1.0) * static_cast<double>(nodes_ + 1);
    std::int64_t block = static_cast<std::int64_t>(kmath::sqrt(static_cast<double>(arcs)));
    if (block * block < arcs) ++block;
    block_ = block < 10 ? 10 : block;
    if (block_ > arcs) block_ = arcs;
  }

  /// Builds the tree from per-node parents (n + m entries; root() for children of
  /// the root), with the supplies in w.supply (root entry included). Returns
  /// false when the parents do not form a spanning tree of the bipartite graph or
  /// its flows would be negative; then call it again with every parent = root(),
  /// the cold start, which always succeeds. `parents` must not alias the
  /// workspace arrays other than stem_succ.
  KOKKOS_INLINE_FUNCTION bool init_tree(const std::int32_t* parents) {
    const std::int32_t N = nodes_;
    std::int32_t* first_child = w_.stem;
    std::int32_t* next_sibling = w_.stem_last;
    std::int32_t* order = w_.stem_prev;
    std::int32_t* stack = w_.stem_after;
    for (std::int32_t u = 0; u <= N; ++u) first_child[u] = -1;
    // Children are linked in decreasing index order so that the depth-first
    // traversal below visits them in increasing order.
    for (std::int32_t u = N - 1; u >= 0; --u) {
      const std::int32_t p = parents[u];
      // A parent must be the root or a node of the other side (an arc of the graph).
      if (p != root_ && (p < 0 || p >= N || (u < w_.n) == (p < w_.n))) return false;
      next_sibling[u] = first_child[p];
      first_child[p] = u;
    }
    // Preorder by an explicit stack; a cycle leaves nodes unreached.
    std::int32_t count = 0, top = 0;
    stack[top++] = root_;
    while (top > 0) {
      const std::int32_t u = stack[--top];
      order[count++] = u;
      // Push children in reverse so the smallest index comes out first.
      std::int32_t k = top;
      for (std::int32_t c = first_child[u]; c >= 0; c = next_sibling[c]) stack[top++] = c;
      for (std::int32_t lo = k, hi = top - 1; lo < hi; ++lo, --hi) {
        const std::int32_t t = stack[lo];
        stack[lo] = stack[hi];
        stack[hi] = t;
      }
    }
    if (count != N + 1) return false;
    // Flows from subtree supplies, leaves first: a node's tree arc carries its
    // subtree's net supply (held in w_.flow until the basis is accepted).
    double* net = w_.flow;
    for (std::int32_t u = 0; u <= N; ++u) net[u] = w_.supply[u];
    for (std::int32_t k = N; k >= 1; --k) {
      const std::int32_t u = order[k];
      net[parents[u]] += net[u];
    }
    const double tolerance = 1e-12;
    for (std::int32_t k = 1; k <= N; ++k) {
      const std::int32_t u = order[k];
      bool up;
      if (parents[u] == root_) {
        up = net[u] >= 0;
      } else {
        up = u < w_.n;
        const double directed = up ? net[u] : -net[u];
        if (directed < -tolerance) return false;
      }
      w_.up[u] = up ? 1 : 0;
    }
    // The basis is valid: commit it.
    for (std::int32_t k = 1; k <= N; ++k) {
      const std::int32_t u = order[k];
      const double directed = w_.up[u] ? net[u] : -net[u];
      w_.flow[u] = directed > 0 ? directed : 0.0;
      w_.parent[u] = parents[u];
    }
    w_.parent[root_] = -1;
    w_.flow[root_] = 0;
    w_.up[root_] = 0;
    for (std::int32_t k = 0; k <= N; ++k) {
      const std::int32_t u = order[k];
      const std::int32_t v = order[k == N ? 0 : k + 1];
      w_.thread[u] = v;
      w_.rev_thread[v] = u;
      w_.succ[u] = 1;
    }
    for (std::int32_t k = N; k >= 1; --k) w_.succ[w_.parent[order[k]]] += w_.succ[order[k]];
    // Position in preorder, to find each subtree's last node.
    std::int32_t* position = w_.stem;
    for (std::int32_t k = 0; k <= N; ++k) position[order[k]] = k;
    for (std::int32_t u = 0; u <= N; ++u) w_.last[u] = order[position[u] + w_.succ[u] - 1];
    // Potentials down the tree.
    w_.pi[root_] = 0;
    for (std::int32_t k = 1; k <= N; ++k) {
      const std::int32_t u = order[k];
      const std::int32_t p = w_.parent[u];
      if (p == root_)
        w_.pi[u] = w_.up[u] ? 0.0 : art_cost_;
      else if (u < w_.n)
        w_.pi[u] = w_.pi[p] - arc_cost(u, p - w_.n);
      else
        w_.pi[u] = w_.pi[p] + arc_cost(p, u - w_.n);
    }
    // Arc states: every real arc out of the basis but the tree arcs.
    // Through a local pointer: a store through w_.state (one-byte type) may
    // alias w_ itself, which would keep the loop from becoming a fill.
    const std::int64_t arcs = static_cast<std::int64_t>(w_.n) * w_.m;
    std::int8_t* const state = w_.state;
    for (std::int64_t e = 0; e < arcs; ++e) state[e] = 1;
    for (std::int32_t u = 0; u < N; ++u) {
      const std::int32_t p = w_.parent[u];
      if (p == root_) continue;
      if (u < w_.n)
        w_.state[static_cast<std::int64_t>(u) * w_.m + (p - w_.n)] = 0;
      else
        w_.state[static_cast<std::int64_t>(p) * w_.m + (u - w_.n)] = 0;
    }
    next_row_ = 0;
    next_col_ = 0;
    return true;
  }

  /// Pivots until optimal or max_iter pivots; returns the status.
  KOKKOS_INLINE_FUNCTION SolveStatus run(std::int64_t max_iter, std::int64_t& pivots) {
    pivots = 0;
    if (static_cast<std::int64_t>(w_.n) * w_.m == 0) return final_status();
    while (true) {
      std::int32_t row, col;
      if (!find_entering(row, col)) break;
      if (pivots >= max_iter) return SolveStatus::max_iter;
      if (!pivot(row, col)) return SolveStatus::numerical_error;
      ++pivots;
    }
    return final_status();
  }

  KOKKOS_INLINE_FUNCTION std::int32_t root() const { return root_; }

  KOKKOS_INLINE_FUNCTION double arc_cost(std::int32_t row, std::int32_t col) const {
    return w_.cost[static_cast<std::int64_t>(row) * w_.m + col];
  }

 private:
  KOKKOS_INLINE_FUNCTION bool is_up(std::int32_t u) const {
    return w_.parent[u] == root_ ? w_.up[u] != 0 : u < w_.n;
  }

  /// Mass left on artificial arcs means the marginals could not be matched.
  KOKKOS_INLINE_FUNCTION SolveStatus final_status() const {
    for (std::int32_t u = 0; u < nodes_; ++u)
      if (w_.parent[u] == root_ && w_.flow[u] > 1e-9) return SolveStatus::infeasible;
    return SolveStatus::optimal;
  }

  /// Block search for an arc with a negative reduced cost.
  KOKKOS_INLINE_FUNCTION bool find_entering(std::int32_t& in_row, std::int32_t& in_col) {
    const std::int32_t n = w_.n, m = w_.m;
    const std::int64_t total = static_cast<std::int64_t>(n) * m;
    const double* pi_col = w_.pi + n;
    double best = 0;
    std::int32_t best_row = -1, best_col = -1;
    std::int64_t examined = 0, in_block = 0;
    std::int32_t i = next_row_, j = next_col_;
    while (examined < total) {
      std::int64_t segment = m - j;
      if (segment > block_ - in_block) segment = block_ - in_block;
      if (segment > total - examined) segment = total - examined;
      const double pi_row = w_.pi[i];
      const double* c = w_.cost + static_cast<std::int64_t>(i) * m;
      const std::int8_t* s = w_.state + static_cast<std::int64_t>(i) * m;
      const std::int32_t end = j + static_cast<std::int32_t>(segment);
      const std::int32_t at = price_segment(c + j, s + j, pi_col + j, pi_row, end - j, best);
      if (at >= 0) {
        best_row = i;
        best_col = j + at;
      }
      examined += segment;
      in_block += segment;
      j = end;
      if (j == m) {
        j = 0;
        i = i + 1 == n ? 0 : i + 1;
      }
      if (in_block == block_ || examined == total) {
        in_block = 0;
        if (best_row >= 0) {
          double scale = kmath::fabs(arc_cost(best_row, best_col));
          scale = kmath::max(scale, kmath::fabs(w_.pi[best_row]));
          scale = kmath::max(scale, kmath::fabs(pi_col[best_col]));
          if (best < -1e-14 * scale) {
            next_row_ = i;
            next_col_ = j;
            in_row = best_row;
            in_col = best_col;
            return true;
          }
        }
      }
    }
    return false;
  }

  /// Pivots the arc row → n+col into the basis. Returns false on a cycle with no
  /// blocking arc (impossible for transport problems; a guard against corrupted
  /// numbers).
  KOKKOS_INLINE_FUNCTION bool pivot(std::int32_t row, std::int32_t col) {
    const std::int32_t source = row, target = w_.n + col;
    // Apex of the cycle: climb from the smaller subtree, since an ancestor always
    // has the larger subtree. The comparison is unpredictable, so both climbs are
    // computed and one is kept (no branch). The nodes left behind are recorded:
    // the two paths below the apex, which every later step of the pivot walks, as
    // array reads instead of chains of dependent parent loads.
    std::int32_t* const source_path = w_.stem;
    std::int32_t* const target_path = w_.other_path;
    std::int32_t source_length = 0, target_length = 0;
    std::int32_t u = source, v = target;
    while (u != v) {
      const bool climb_u = w_.succ[u] < w_.succ[v];
      const std::int32_t pu = w_.parent[u], pv = w_.parent[v];
      source_path[source_length] = u;
      target_path[target_length] = v;
      source_length += climb_u ? 1 : 0;
      target_length += climb_u ? 0 : 1;
      u = climb_u ? pu : u;
      v = climb_u ? v : pv;
    }
    // Leaving arc: the cycle runs source → target → apex → source. Arcs against
    // that direction lose flow; ties go to the last blocking arc met from the
    // apex, which keeps the tree strongly feasible.
    double delta = kmath::infinity<double>();
    std::int32_t out = -1, out_at = -1;
    int side = 0;
    for (std::int32_t t = 0; t < source_length; ++t) {
      const std::int32_t x = source_path[t];
      if (is_up(x) && w_.flow[x] < delta) {
        delta = w_.flow[x];
        out = x;
        out_at = t;
        side = 1;
      }
    }
    for (std::int32_t t = 0; t < target_length; ++t) {
      const std::int32_t x = target_path[t];
      if (!is_up(x) && w_.flow[x] <= delta) {
        delta = w_.flow[x];
        out = x;
        out_at = t;
        side = 2;
      }
    }
    if (side == 0) return false;
    if (delta > 0) {
      for (std::int32_t t = 0; t < source_length; ++t) {
        const std::int32_t x = source_path[t];
        w_.flow[x] += is_up(x) ? -delta : delta;
      }
      for (std::int32_t t = 0; t < target_length; ++t) {
        const std::int32_t x = target_path[t];
        w_.flow[x] += is_up(x) ? delta : -delta;
      }
    }
    const std::int32_t in = side == 1 ? source : target;     // re-hung below `attach`
    const std::int32_t attach = side == 1 ? target : source;
    // The leaving arc leaves the basis (artificial arcs have no state: they never
    // re-enter).
    const std::int32_t out_parent = w_.parent[out];
    if (out_parent != root_) {
      if (out < w_.n)
        w_.state[static_cast<std::int64_t>(out) * w_.m + (out_parent - w_.n)] = 1;
      else
        w_.state[static_cast<std::int64_t>(out_parent) * w_.m + (out - w_.n)] = 1;
    }
    w_.state[static_cast<std::int64_t>(row) * w_.m + col] = 0;
    const double entering_reduced = arc_cost(row, col) + w_.pi[source] - w_.pi[target];
    if (side == 1)
      update_tree(in, attach, out, delta, source_path, out_at, source_length, target_path, target_length);
    else
      update_tree(in, attach, out, delta, target_path, out_at, target_length, source_path, source_length);
    // The entering arc must get reduced cost 0: the moved subtree's potentials
    // shift by sigma or, when that subtree is the larger part of the tree, all
    // the others by −sigma (only differences of potentials matter, and the walk
    // over the thread is the cost). The others follow the subtree in the cyclic
    // thread.
    const double sigma = in == source ? -entering_reduced : entering_reduced;
    const std::int32_t moved = w_.succ[in], all = nodes_ + 1;
    if (2 * moved <= all) {
      std::int32_t x = in;
      for (std::int32_t k = 0; k < moved; ++k) {
        w_.pi[x] += sigma;
        x = w_.thread[x];
      }
    } else {
      std::int32_t x = w_.thread[w_.last[in]];
      for (std::int32_t k = moved; k < all; ++k) {
        w_.pi[x] -= sigma;
        x = w_.thread[x];
      }
    }
    return true;
  }

  /// Cuts the subtree S of `out` from its parent and hangs it, re-rooted at `in`,
  /// as the first child of `attach`. The stem in = w_0, w_1, ..., w_k = out is the
  /// tree path from `in` up to `out`; its arcs reverse direction. in_path holds
  /// the cycle's path from `in` up to the apex (out at index k), attach_path the
  /// one from `attach`; pivot recorded both.
  KOKKOS_INLINE_FUNCTION void update_tree(std::int32_t in, std::int32_t attach, std::int32_t out,
                                          double entering_flow, const std::int32_t* in_path, std::int32_t k,
                                          std::int32_t in_length, const std::int32_t* attach_path,
                                          std::int32_t attach_length) {
    const std::int32_t* const stem = in_path;
    for (std::int32_t i = 0; i <= k; ++i) {
      const std::int32_t x = stem[i];
      w_.stem_last[i] = w_.last[x];
      w_.stem_prev[i] = w_.rev_thread[x];
      w_.stem_after[i] = w_.thread[w_.last[x]];
      w_.stem_succ[i] = w_.succ[x];
    }
    const std::int32_t size = w_.stem_succ[k];
    const std::int32_t out_parent = w_.parent[out];

    // 1. Cut S (preorder range out .. last[out]) out of the thread.
    const std::int32_t before = w_.stem_prev[k];
    const std::int32_t after = w_.stem_after[k];
    link(before, after);
    for (std::int32_t x = out_parent; x >= 0 && w_.last[x] == w_.stem_last[k]; x = w_.parent[x])
      w_.last[x] = before;

    // 2. Preorder of S re-rooted at w_0: the full old subtree of w_0, then for
    // each i ≥ 1 the old subtree of w_i without that of w_{i−1}, which is the
    // range w_i .. prev(w_{i−1}) followed by after(last(w_{i−1})) .. last(w_i).
    std::int32_t end = w_.stem_last[0];
    for (std::int32_t i = 1; i <= k; ++i) {
      link(end, stem[i]);
      if (w_.stem_last[i] != w_.stem_last[i - 1]) {
        link(w_.stem_prev[i - 1], w_.stem_after[i - 1]);
        end = w_.stem_last[i];
      } else {
        end = w_.stem_prev[i - 1];
      }
    }

    // 3. Insert S right after `attach`.
    const std::int32_t next = w_.thread[attach];
    link(attach, in);
    link(end, next);
    if (w_.last[attach] == attach)
      for (std::int32_t x = attach; x >= 0 && w_.last[x] == attach; x = w_.parent[x]) w_.last[x] = end;

    // 4. Subtree sizes outside S: the old branch above S loses it, the new one
    // gains it, up to the apex.
    for (std::int32_t t = k + 1; t < in_length; ++t) w_.succ[in_path[t]] -= size;
    for (std::int32_t t = 0; t < attach_length; ++t) w_.succ[attach_path[t]] += size;

    // 5. The stem: parents, flows (each stem arc moves to the node below it),
    // subtree sizes and last nodes.
    for (std::int32_t i = k; i >= 1; --i) {
      w_.flow[stem[i]] = w_.flow[stem[i - 1]];
      w_.parent[stem[i]] = stem[i - 1];
      w_.succ[stem[i]] = size - w_.stem_succ[i - 1];
      w_.last[stem[i]] = end;
    }
    w_.flow[in] = entering_flow;
    w_.parent[in] = attach;
    w_.succ[in] = size;
    w_.last[in] = end;
  }

  KOKKOS_INLINE_FUNCTION void link(std::int32_t a, std::int32_t b) {
    w_.thread[a] = b;
    w_.rev_thread[b] = a;
  }

  SimplexWorkspace w_;
  std::int32_t nodes_;
  std::int32_t root_;
  double art_cost_ = 0;
  std::int64_t block_ = 10;
  std::int32_t next_row_ = 0;
  std::int32_t next_col_ = 0;
};

/// Maps a basis in original local indices (rows 0..n_all−1, columns
/// n_all..n_all+m_all−1; basis_root, basis_absent) onto the compact problem of
/// the active (positive-weight) nodes. Returns false when it does not fit (a
/// parent outside the graph, or an active node marked absent or hung from a
/// dropped one); the solver then starts cold.
KOKKOS_INLINE_FUNCTION bool map_basis(const std::int32_t* basis, std::int32_t n_all, std::int32_t m_all,
                                      std::int32_t n, std::int32_t m, const std::int32_t* active_row,
                                      const std::int32_t* active_col, const std::int32_t* compact_row,
                                      const std::int32_t* compact_col, std::int32_t* parents) {
  const std::int32_t root = n + m;
  for (std::int32_t i = 0; i < n; ++i) {
    const std::int32_t p = basis[active_row[i]];
    if (p == basis_root) {
      parents[i] = root;
    } else if (p >= n_all && p < n_all + m_all && compact_col[p - n_all] >= 0) {
      parents[i] = n + compact_col[p - n_all];
    } else {
      return false;
    }
  }
  for (std::int32_t j = 0; j < m; ++j) {
    const std::int32_t p = basis[n_all + active_col[j]];
    if (p == basis_root) {
      parents[n + j] = root;
    } else if (p >= 0 && p < n_all && compact_row[p] >= 0) {
      parents[n + j] = compact_row[p];
    } else {
      return false;
    }
  }
  return true;
}

/// Results of one solved compact problem in original local indices: the sparse
/// plan sorted by row then column (returns its size; capacity n_all + m_all),
/// its cost, centred potentials (zero-weight points get the c-transform, which
/// keeps f_i + g_j ≤ C_ij), and the basis. cost_of(i, j) gives the cost between
/// original row i and original column j (used only for zero-weight points).
template <class CostFn>
KOKKOS_INLINE_FUNCTION std::int32_t extract_solution(
    const SimplexWorkspace& w, std::int32_t n_all, std::int32_t m_all, const std::int32_t* active_row,
    const std::int32_t* active_col, const std::int32_t* compact_row, const std::int32_t* compact_col,
    const CostFn& cost_of, std::int32_t* plan_row, std::int32_t* plan_col, double* plan_value,
    double& cost, double* f, double* g, std::int32_t* basis) {
  const std::int32_t n = w.n, m = w.m, root = n + m;
  // Plan entries bucketed by compact row, then sorted by column within a row.
  std::int32_t* start = w.stem;  // n + 1
  for (std::int32_t i = 0; i <= n; ++i) start[i] = 0;
  for (std::int32_t u = 0; u < root; ++u) {
    const std::int32_t p = w.parent[u];
    if (p == root || !(w.flow[u] > 0)) continue;
    ++start[(u < n ? u : p) + 1];
  }
  for (std::int32_t i = 0; i < n; ++i) start[i + 1] += start[i];
  const std::int32_t size = start[n];
  std::int32_t* fill = w.stem_last;
  for (std::int32_t i = 0; i < n; ++i) fill[i] = start[i];
  for (std::int32_t u = 0; u < root; ++u) {
    const std::int32_t p = w.parent[u];
    if (p == root || !(w.flow[u] > 0)) continue;
    const std::int32_t r = u < n ? u : p;
    const std::int32_t c = (u < n ? p : u) - n;
    const std::int32_t at = fill[r]++;
    plan_row[at] = r;
    plan_col[at] = c;
    plan_value[at] = w.flow[u];
  }
  for (std::int32_t i = 0; i < n; ++i)
    for (std::int32_t x = start[i] + 1; x < start[i + 1]; ++x)
      for (std::int32_t y = x; y > start[i] && plan_col[y - 1] > plan_col[y]; --y) {
        const std::int32_t tc = plan_col[y - 1];
        plan_col[y - 1] = plan_col[y];
        plan_col[y] = tc;
        const double tv = plan_value[y - 1];
        plan_value[y - 1] = plan_value[y];
        plan_value[y] = tv;
      }
  cost = 0;
  for (std::int32_t e = 0; e < size; ++e) {
    cost += plan_value[e] * w.cost[static_cast<std::int64_t>(plan_row[e]) * m + plan_col[e]];
    plan_row[e] = active_row[plan_row[e]];
    plan_col[e] = active_col[plan_col[e]];
  }
  // Potentials f = −pi (rows), g = pi (columns), centred so that a·f = b·g.
  // Taken relative to row 0 first: the pivots shift potentials by common
  // offsets (see pivot), and sums of large offset values would lose the digits
  // that the centring needs.
  const double reference = n > 0 ? w.pi[0] : 0.0;
  double fa = 0, gb = 0, mass_a = 0, mass_b = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    fa += w.supply[i] * -(w.pi[i] - reference);
    mass_a += w.supply[i];
  }
  for (std::int32_t j = 0; j < m; ++j) {
    gb += -w.supply[n + j] * (w.pi[n + j] - reference);
    mass_b += -w.supply[n + j];
  }
  const double shift = (gb - fa) / (mass_a + mass_b);
  for (std::int32_t i = 0; i < n; ++i) f[active_row[i]] = -(w.pi[i] - reference) + shift;
  for (std::int32_t j = 0; j < m; ++j) g[active_col[j]] = (w.pi[n + j] - reference) - shift;
  for (std::int32_t i = 0; i < n_all; ++i) {
    if (compact_row[i] >= 0) continue;
    double best = kmath::infinity<double>();
    for (std::int32_t j = 0; j < m; ++j) best = kmath::fmin(best, cost_of(i, active_col[j]) - g[active_col[j]]);
    f[i] = best;
  }
  // Zero-weight columns take the c-transform over every row, zero-weight rows
  // included, so that f_i + g_j ≤ C_ij holds for all pairs.
  for (std::int32_t j = 0; j < m_all; ++j) {
    if (compact_col[j] >= 0) continue;
    double best = kmath::infinity<double>();
    for (std::int32_t i = 0; i < n_all; ++i) best = kmath::fmin(best, cost_of(i, j) - f[i]);
    g[j] = best;
  }
  // Basis in original indices.
  for (std::int32_t i = 0; i < n_all; ++i) {
    const std::int32_t c = compact_row[i];
    if (c < 0) {
      basis[i] = basis_absent;
    } else {
      const std::int32_t p = w.parent[c];
      basis[i] = p == root ? basis_root : n_all + active_col[p - n];
    }
  }
  for (std::int32_t j = 0; j < m_all; ++j) {
    const std::int32_t c = compact_col[j];
    if (c < 0) {
      basis[n_all + j] = basis_absent;
    } else {
      const std::int32_t p = w.parent[n + c];
      basis[n_all + j] = p == root ? basis_root : active_row[p];
    }
  }
  return size;
}

}  // namespace kotml::ot::detail
