#include "kotml/eval/linkage.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::eval {
namespace {

struct UnionFind {
  std::vector<std::int64_t> parent;
  explicit UnionFind(std::int64_t n) : parent(static_cast<std::size_t>(n)) {
    std::iota(parent.begin(), parent.end(), std::int64_t(0));
  }
  std::int64_t find(std::int64_t x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
      x = parent[static_cast<std::size_t>(x)];
    }
    return x;
  }
};

}  // namespace

std::vector<Merge> complete_linkage(const HostMatrix<double>& distances) {
  const std::int64_t n = static_cast<std::int64_t>(distances.extent(0));
  if (static_cast<std::int64_t>(distances.extent(1)) != n)
    throw Error("", "distances", "a linkage needs a square distance matrix");
  if (n < 2) return {};
  // Working copy of the upper triangle mirrored into a full matrix, so that the
  // merged cluster's row and column can be updated in place.
  std::vector<double> d(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = i + 1; j < n; ++j) {
      const double v = distances(i, j);
      if (!std::isfinite(v))
        throw Error("", "distances", "non-finite distance between donors " + std::to_string(i) +
                                         " and " + std::to_string(j));
      d[static_cast<std::size_t>(i * n + j)] = v;
      d[static_cast<std::size_t>(j * n + i)] = v;
    }
  auto at = [&](std::int64_t i, std::int64_t j) -> double& { return d[static_cast<std::size_t>(i * n + j)]; };

  std::vector<std::int64_t> size(static_cast<std::size_t>(n), 1);
  std::vector<std::int64_t> chain;
  std::vector<Merge> merges;
  merges.reserve(static_cast<std::size_t>(n - 1));
  for (std::int64_t k = 0; k < n - 1; ++k) {
    if (chain.empty()) {
      for (std::int64_t i = 0; i < n; ++i)
        if (size[static_cast<std::size_t>(i)] > 0) {
          chain.push_back(i);
          break;
        }
    }
    std::int64_t x = 0, y = 0;
    double current = 0.0;
    while (true) {
      x = chain.back();
      // Preferring the previous chain element on ties keeps the chain from
      // cycling (scipy's convention, which fixes the tree when distances tie).
      if (chain.size() > 1) {
        y = chain[chain.size() - 2];
        current = at(x, y);
      } else {
        current = std::numeric_limits<double>::infinity();
      }
      for (std::int64_t i = 0; i < n; ++i) {
        if (size[static_cast<std::size_t>(i)] == 0 || i == x) continue;
        if (at(x, i) < current) {
          current = at(x, i);
          y = i;
        }
      }
      if (chain.size() > 1 && y == chain[chain.size() - 2]) break;
      chain.push_back(y);
    }
    chain.pop_back();
    chain.pop_back();
    if (x > y) std::swap(x, y);
    const std::int64_t nx = size[static_cast<std::size_t>(x)], ny = size[static_cast<std::size_t>(y)];
    merges.push_back({x, y, current, nx + ny});
    size[static_cast<std::size_t>(x)] = 0;
    size[static_cast<std::size_t>(y)] = nx + ny;
    for (std::int64_t i = 0; i < n; ++i) {
      if (size[static_cast<std::size_t>(i)] == 0 || i == y) continue;
      const double merged = std::max(at(i, x), at(i, y));
      at(i, y) = merged;
      at(y, i) = merged;
    }
  }

  // Merges in increasing height (stable: chain order among equal heights), then
  // renamed to scipy's cluster ids.
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.height < b.height; });
  UnionFind uf(2 * n - 1);
  for (std::int64_t i = 0; i < n - 1; ++i) {
    Merge& m = merges[static_cast<std::size_t>(i)];
    const std::int64_t a = uf.find(m.left), b = uf.find(m.right);
    m.left = std::min(a, b);
    m.right = std::max(a, b);
    uf.parent[static_cast<std::size_t>(a)] = n + i;
    uf.parent[static_cast<std::size_t>(b)] = n + i;
  }
  return merges;
}

std::vector<int> cut_tree(const std::vector<Merge>& merges, std::int64_t n_leaves, int n_clusters) {
  if (n_clusters < 1 || n_clusters > n_leaves)
    throw Error("", "n_clusters",
                "cannot cut " + std::to_string(n_leaves) + " donors into " +
                    std::to_string(n_clusters) + " clusters");
  if (static_cast<std::int64_t>(merges.size()) != n_leaves - 1)
    throw InternalError("a tree over n donors has n-1 merges");
  UnionFind uf(2 * n_leaves - 1);
  for (std::int64_t i = 0; i < n_leaves - n_clusters; ++i) {
    const Merge& m = merges[static_cast<std::size_t>(i)];
    uf.parent[static_cast<std::size_t>(uf.find(m.left))] = n_leaves + i;
    uf.parent[static_cast<std::size_t>(uf.find(m.right))] = n_leaves + i;
  }
  std::vector<int> labels(static_cast<std::size_t>(n_leaves), -1);
  std::vector<std::int64_t> root_label(static_cast<std::size_t>(2 * n_leaves - 1), -1);
  int next = 0;
  for (std::int64_t i = 0; i < n_leaves; ++i) {
    const auto root = static_cast<std::size_t>(uf.find(i));
    if (root_label[root] < 0) root_label[root] = next++;
    labels[static_cast<std::size_t>(i)] = static_cast<int>(root_label[root]);
  }
  return labels;
}

std::vector<int> agglomerative_complete(const HostMatrix<double>& distances, int n_clusters) {
  const auto n = static_cast<std::int64_t>(distances.extent(0));
  if (n == 1 && n_clusters == 1) return {0};
  return cut_tree(complete_linkage(distances), n, n_clusters);
}

}  // namespace kotml::eval
