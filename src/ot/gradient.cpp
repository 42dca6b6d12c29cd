#include "kotml/ot/gradient.hpp"

#include <string>
#include <type_traits>

#include "kotml/core/error.hpp"

namespace kotml::ot {

namespace {

/// A pool row's gradient: Σ coef[problem] × row `line` of the source (side 0)
/// or target (side 1) gradients, over the row's entries in stored order.
struct SumContributions {
  Vector<const std::int64_t> start;                  // N + 1
  Kokkos::View<const std::int64_t* [3], MemSpace> entries;  // problem, side, line
  Vector<const double> coef;
  Matrix<const double> source_gradient, target_gradient;
  Matrix<double> point_gradient;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t r) const {
    const int k_dim = static_cast<int>(point_gradient.extent(1));
    for (int k = 0; k < k_dim; ++k) point_gradient(r, k) = 0;
    for (std::int64_t e = start(r); e < start(r + 1); ++e) {
      const double c = coef(entries(e, 0));
      const std::int64_t line = entries(e, 2);
      if (entries(e, 1) == 0)
        for (int k = 0; k < k_dim; ++k) point_gradient(r, k) += c * source_gradient(line, k);
      else
        for (int k = 0; k < k_dim; ++k) point_gradient(r, k) += c * target_gradient(line, k);
    }
  }
};

constexpr int columns_per_team = 32;

/// grad(a, b0..b0+32) = Σ_r G(r, a) X(r, b), each sum in increasing r.
template <class T>
struct MapGradient {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  Matrix<const double> G;
  Matrix<const T> X;
  Matrix<double> grad;
  bool accumulate;

  KOKKOS_INLINE_FUNCTION void operator()(const typename Policy::member_type& team) const {
    const auto d = static_cast<std::int64_t>(X.extent(1));
    const auto n = static_cast<std::int64_t>(X.extent(0));
    const std::int64_t blocks_per_row = (d + columns_per_team - 1) / columns_per_team;
    const std::int64_t a = team.league_rank() / blocks_per_row;
    const std::int64_t b0 = (team.league_rank() % blocks_per_row) * columns_per_team;
    const std::int64_t width = d - b0 < columns_per_team ? d - b0 : columns_per_team;
    if constexpr (std::is_same<ExecSpace::memory_space, HostSpace>::value) {
      // Row-wise streaming through X keeps the host's caches busy.
      double acc[columns_per_team] = {};
      for (std::int64_t r = 0; r < n; ++r) {
        const double g = G(r, a);
        if (g == 0) continue;
        for (std::int64_t c = 0; c < width; ++c) acc[c] += g * static_cast<double>(X(r, b0 + c));
      }
      for (std::int64_t c = 0; c < width; ++c)
        grad(a, b0 + c) = accumulate ? grad(a, b0 + c) + acc[c] : acc[c];
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t c) {
        double s = 0;
        for (std::int64_t r = 0; r < n; ++r) {
          const double g = G(r, a);
          if (g != 0) s += g * static_cast<double>(X(r, b0 + c));
        }
        grad(a, b0 + c) = accumulate ? grad(a, b0 + c) + s : s;
      });
    }
  }
};

}  // namespace

template <class T>
void accumulate_point_gradients(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs,
                                const BatchLayout& layout, const std::vector<double>& coef,
                                const Matrix<const double>& source_gradient,
                                const Matrix<const double>& target_gradient,
                                const Matrix<double>& point_gradient) {
  const auto n_rows = static_cast<std::int64_t>(clouds.points().extent(0));
  if (coef.size() != pairs.size())
    throw Error("", "coefficients", "one coefficient per problem is needed");
  if (static_cast<std::int64_t>(point_gradient.extent(0)) != n_rows ||
      point_gradient.extent(1) != source_gradient.extent(1) ||
      static_cast<std::int64_t>(source_gradient.extent(0)) != layout.total_rows() ||
      static_cast<std::int64_t>(target_gradient.extent(0)) != layout.total_cols())
    throw Error("", "gradients", "shapes do not match the batch (were point gradients requested?)");
  // Counting sort by pool row; problems are visited in increasing order, so each
  // row's contributions end up ordered by problem, then side.
  std::vector<std::int64_t> start(static_cast<std::size_t>(n_rows) + 1, 0);
  for (std::size_t u = 0; u < pairs.size(); ++u) {
    const CloudRange& s = clouds.cloud(pairs[u].source);
    const CloudRange& t = clouds.cloud(pairs[u].target);
    for (std::int64_t i = 0; i < s.size; ++i) ++start[static_cast<std::size_t>(s.point_begin + i) + 1];
    for (std::int64_t j = 0; j < t.size; ++j) ++start[static_cast<std::size_t>(t.point_begin + j) + 1];
  }
  for (std::int64_t r = 0; r < n_rows; ++r) start[r + 1] += start[r];
  Kokkos::View<std::int64_t* [3], MemSpace> entries(no_init("kotml::ot::gradient_entries"),
                                                     static_cast<std::size_t>(start.back()));
  auto entries_host = Kokkos::create_mirror_view(entries);
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (std::size_t u = 0; u < pairs.size(); ++u) {
    const CloudRange& s = clouds.cloud(pairs[u].source);
    const CloudRange& t = clouds.cloud(pairs[u].target);
    for (std::int64_t i = 0; i < s.size; ++i) {
      const std::int64_t e = fill[static_cast<std::size_t>(s.point_begin + i)]++;
      entries_host(e, 0) = static_cast<std::int64_t>(u);
      entries_host(e, 1) = 0;
      entries_host(e, 2) = layout.row_offset[u] + i;
    }
    for (std::int64_t j = 0; j < t.size; ++j) {
      const std::int64_t e = fill[static_cast<std::size_t>(t.point_begin + j)]++;
      entries_host(e, 0) = static_cast<std::int64_t>(u);
      entries_host(e, 1) = 1;
      entries_host(e, 2) = layout.col_offset[u] + j;
    }
  }
  Kokkos::deep_copy(entries, entries_host);
  Vector<std::int64_t> start_device(no_init("kotml::ot::gradient_start"), start.size());
  Kokkos::deep_copy(start_device, Kokkos::View<const std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                      start.data(), start.size()));
  Vector<double> coef_device(no_init("kotml::ot::gradient_coef"), coef.size());
  Kokkos::deep_copy(coef_device, Kokkos::View<const double*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                     coef.data(), coef.size()));
  Kokkos::parallel_for("kotml::ot::accumulate_point_gradients", Kokkos::RangePolicy<ExecSpace>(0, n_rows),
                       SumContributions{start_device, entries, coef_device, source_gradient, target_gradient,
                                        point_gradient});
  Kokkos::fence();
}

template <class T>
void map_gradient(const Matrix<const double>& G, const Matrix<const T>& X, const Matrix<double>& grad_A,
                  bool accumulate) {
  if (G.extent(0) != X.extent(0) || grad_A.extent(0) != G.extent(1) || grad_A.extent(1) != X.extent(1))
    throw Error("", "gradients", "shapes do not match: G is " + std::to_string(G.extent(0)) + "×" +
                                     std::to_string(G.extent(1)) + ", X is " + std::to_string(X.extent(0)) +
                                     "×" + std::to_string(X.extent(1)) + ", the map gradient is " +
                                     std::to_string(grad_A.extent(0)) + "×" + std::to_string(grad_A.extent(1)));
  const auto d = static_cast<std::int64_t>(X.extent(1));
  const std::int64_t blocks_per_row = (d + columns_per_team - 1) / columns_per_team;
  const auto league = static_cast<int>(static_cast<std::int64_t>(G.extent(1)) * blocks_per_row);
  if (league == 0) return;
  using Policy = typename MapGradient<T>::Policy;
  Kokkos::parallel_for("kotml::ot::map_gradient", Policy(league, Kokkos::AUTO),
                       MapGradient<T>{G, X, grad_A, accumulate});
  Kokkos::fence();
}

template <class T>
HostMatrix<double> problem_map_gradient(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs,
                                        const BatchLayout& layout, std::int64_t u,
                                        const Matrix<const double>& source_gradient,
                                        const Matrix<const double>& target_gradient, const Matrix<const T>& X) {
  if (u < 0 || u >= static_cast<std::int64_t>(pairs.size()))
    throw Error("", "problem", "index " + std::to_string(u) + " is outside the batch");
  auto gs = Kokkos::create_mirror_view_and_copy(HostSpace(), source_gradient);
  auto gt = Kokkos::create_mirror_view_and_copy(HostSpace(), target_gradient);
  auto x = Kokkos::create_mirror_view_and_copy(HostSpace(), X);
  const auto k_dim = static_cast<std::int64_t>(source_gradient.extent(1));
  const auto d = static_cast<std::int64_t>(X.extent(1));
  HostMatrix<double> grad("kotml::ot::problem_map_gradient", k_dim, d);
  const CloudRange& s = clouds.cloud(pairs[static_cast<std::size_t>(u)].source);
  const CloudRange& t = clouds.cloud(pairs[static_cast<std::size_t>(u)].target);
  for (std::int64_t i = 0; i < s.size; ++i)
    for (std::int64_t a = 0; a < k_dim; ++a)
      for (std::int64_t b = 0; b < d; ++b)
        grad(a, b) += gs(layout.row_offset[u] + i, a) * static_cast<double>(x(s.point_begin + i, b));
  for (std::int64_t j = 0; j < t.size; ++j)
    for (std::int64_t a = 0; a < k_dim; ++a)
      for (std::int64_t b = 0; b < d; ++b)
        grad(a, b) += gt(layout.col_offset[u] + j, a) * static_cast<double>(x(t.point_begin + j, b));
  return grad;
}

#define KOTML_OT_INSTANTIATE_GRADIENT(T)                                                                 \
  template void accumulate_point_gradients<T>(const CloudBatch<T>&, const std::vector<Pair>&,             \
                                              const BatchLayout&, const std::vector<double>&,             \
                                              const Matrix<const double>&, const Matrix<const double>&,   \
                                              const Matrix<double>&);                                     \
  template void map_gradient<T>(const Matrix<const double>&, const Matrix<const T>&, const Matrix<double>&, \
                                bool);                                                                    \
  template HostMatrix<double> problem_map_gradient<T>(const CloudBatch<T>&, const std::vector<Pair>&,     \
                                                      const BatchLayout&, std::int64_t,                   \
                                                      const Matrix<const double>&,                        \
                                                      const Matrix<const double>&, const Matrix<const T>&);

KOTML_OT_INSTANTIATE_GRADIENT(float)
KOTML_OT_INSTANTIATE_GRADIENT(double)

}  // namespace kotml::ot
