#include "kotml/ot/cost_row_sums.hpp"

#include "cost_rows.hpp"

namespace kotml::ot {
namespace {

/// One team per pair; one thread per row of the pair.
template <class T>
struct RowSums {
  Matrix<const T> points;
  Matrix<const double> points_t;  // the pool, coordinate-major (host kernel)
  Kokkos::View<const std::int64_t* [3], MemSpace> table;
  Vector<const std::int32_t> source, target;
  Vector<const std::int64_t> row_offset;
  Vector<const double> norms;
  Vector<double> row_sum;
  Cost kind;

  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::TeamPolicy<ExecSpace>::member_type& team) const {
    const auto u = team.league_rank();
    const std::int64_t first_x = table(source(u), 0), n = table(source(u), 2);
    const std::int64_t first_y = table(target(u), 0), m = table(target(u), 2);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const std::int64_t i) {
#ifdef KOTML_DEVICE_PASS
      const double sum = detail::cost_row(
          team, kind, points, first_x + i, [=](const std::int64_t j) { return first_y + j; }, m, norms,
          [](const std::int64_t, const double) {});
#else
      const std::int64_t stride = static_cast<std::int64_t>(points_t.extent(1));
      const std::int64_t x = first_x + i;
      const double sum = detail::cost_row_host(kind, points_t.data() + x, points_t.data() + first_y, stride,
                                               static_cast<int>(points_t.extent(0)), m,
                                               kind == Cost::cosine ? norms(x) : 0.0,
                                               kind == Cost::cosine ? norms.data() + first_y : nullptr,
                                               static_cast<double*>(nullptr), true);
#endif
      Kokkos::single(Kokkos::PerThread(team), [&]() { row_sum(row_offset(u) + i) = sum; });
    });
  }
};

}  // namespace

template <class T>
std::vector<double> cost_row_sums(const CloudBatch<T>& clouds, const BatchLayout& layout,
                                  const std::vector<Pair>& pairs, Cost cost) {
  std::vector<double> out(static_cast<std::size_t>(layout.total_rows()), 0.0);
  if (pairs.empty()) return out;
  std::vector<std::int32_t> src, tgt;
  for (const auto& p : pairs) {
    src.push_back(p.source);
    tgt.push_back(p.target);
  }
  const detail::PoolViews pool = detail::pool_views<T>(clouds.points(), cost);
  Vector<double> row_sum(no_init("kotml::ot::row_sums"), out.size());
  Kokkos::parallel_for("kotml::ot::cost_row_sums",
                       Kokkos::TeamPolicy<ExecSpace>(static_cast<int>(pairs.size()), Kokkos::AUTO),
                       RowSums<T>{clouds.points(), pool.points_t, clouds.device_table(),
                                  device_copy_of<Vector<std::int32_t>>(src, "kotml::ot::sources"),
                                  device_copy_of<Vector<std::int32_t>>(tgt, "kotml::ot::targets"),
                                  layout.device_row_offset, pool.norms, row_sum, cost});
  Kokkos::View<double*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(out.data(), out.size());
  Kokkos::deep_copy(host, row_sum);
  return out;
}

template std::vector<double> cost_row_sums<float>(const CloudBatch<float>&, const BatchLayout&,
                                                  const std::vector<Pair>&, Cost);
template std::vector<double> cost_row_sums<double>(const CloudBatch<double>&, const BatchLayout&,
                                                   const std::vector<Pair>&, Cost);

}  // namespace kotml::ot
