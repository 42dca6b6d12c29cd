#include "kotml/ot/batch.hpp"

#include <cmath>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::ot {

const char* status_name(SolveStatus status) {
  switch (status) {
    case SolveStatus::optimal: return "optimal";
    case SolveStatus::max_iter: return "max_iter";
    case SolveStatus::infeasible: return "infeasible";
    case SolveStatus::numerical_error: return "numerical_error";
  }
  return "unknown";
}

template <class T>
CloudBatch<T>::CloudBatch(Matrix<T> points, Vector<double> weights, std::vector<CloudRange> clouds)
    : points_(std::move(points)), weights_(std::move(weights)), clouds_(std::move(clouds)) {
  const auto n_points = static_cast<std::int64_t>(points_.extent(0));
  const auto n_weights = static_cast<std::int64_t>(weights_.extent(0));
  for (std::size_t c = 0; c < clouds_.size(); ++c) {
    const CloudRange& r = clouds_[c];
    if (r.size < 0 || r.point_begin < 0 || r.weight_begin < 0 || r.point_begin + r.size > n_points ||
        r.weight_begin + r.size > n_weights)
      throw Error("", "cloud " + std::to_string(c),
                  "range [" + std::to_string(r.point_begin) + ", " +
                      std::to_string(r.point_begin + r.size) + ") of points or [" +
                      std::to_string(r.weight_begin) + ", " + std::to_string(r.weight_begin + r.size) +
                      ") of weights lies outside the pool (" + std::to_string(n_points) +
                      " points, " + std::to_string(n_weights) + " weights)");
  }
  table_ = Kokkos::View<std::int64_t* [3], MemSpace>("kotml::ot::cloud_table", clouds_.size());
  auto host = Kokkos::create_mirror_view(table_);
  for (std::size_t c = 0; c < clouds_.size(); ++c) {
    host(c, 0) = clouds_[c].point_begin;
    host(c, 1) = clouds_[c].weight_begin;
    host(c, 2) = clouds_[c].size;
  }
  Kokkos::deep_copy(table_, host);
}

template <class T>
CloudBatch<T> make_cloud_batch(const std::vector<std::vector<T>>& points, int dim,
                               const std::vector<std::vector<double>>& weights) {
  if (dim <= 0) throw Error("", "dim", "the point dimension must be positive");
  if (!weights.empty() && weights.size() != points.size())
    throw Error("", "weights", "one weight vector per cloud is needed (" +
                                   std::to_string(points.size()) + " clouds, " +
                                   std::to_string(weights.size()) + " weight vectors)");
  std::vector<CloudRange> ranges;
  std::int64_t total = 0;
  for (std::size_t c = 0; c < points.size(); ++c) {
    if (points[c].size() % static_cast<std::size_t>(dim) != 0)
      throw Error("", "cloud " + std::to_string(c),
                  "holds " + std::to_string(points[c].size()) + " values, not a multiple of dim " +
                      std::to_string(dim));
    const auto n = static_cast<std::int64_t>(points[c].size() / static_cast<std::size_t>(dim));
    if (!weights.empty() && !weights[c].empty() && static_cast<std::int64_t>(weights[c].size()) != n)
      throw Error("", "cloud " + std::to_string(c),
                  "has " + std::to_string(n) + " points but " + std::to_string(weights[c].size()) +
                      " weights");
    ranges.push_back({total, total, n});
    total += n;
  }
  Matrix<T> pool(no_init("kotml::ot::cloud_points"), total, dim);
  Vector<double> w(no_init("kotml::ot::cloud_weights"), total);
  auto pool_host = Kokkos::create_mirror_view(pool);
  auto w_host = Kokkos::create_mirror_view(w);
  for (std::size_t c = 0; c < points.size(); ++c) {
    const CloudRange& r = ranges[c];
    for (std::int64_t i = 0; i < r.size; ++i) {
      for (int k = 0; k < dim; ++k)
        pool_host(r.point_begin + i, k) = points[c][static_cast<std::size_t>(i * dim + k)];
      const bool given = !weights.empty() && !weights[c].empty();
      w_host(r.weight_begin + i) =
          given ? weights[c][static_cast<std::size_t>(i)] : 1.0 / static_cast<double>(r.size);
    }
  }
  Kokkos::deep_copy(pool, pool_host);
  Kokkos::deep_copy(w, w_host);
  return CloudBatch<T>(pool, w, std::move(ranges));
}

template <class T>
void validate(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs, const std::string& where) {
  auto points = Kokkos::create_mirror_view_and_copy(HostSpace(), clouds.points());
  auto weights = Kokkos::create_mirror_view_and_copy(HostSpace(), clouds.weights());
  const int dim = clouds.dim();
  for (std::int32_t c = 0; c < clouds.count(); ++c) {
    const CloudRange& r = clouds.cloud(c);
    const std::string element = "cloud " + std::to_string(c);
    if (r.size == 0) throw Error(where, element, "the point set is empty");
    double sum = 0;
    for (std::int64_t i = 0; i < r.size; ++i) {
      for (int k = 0; k < dim; ++k)
        if (!std::isfinite(static_cast<double>(points(r.point_begin + i, k))))
          throw Error(where, element,
                      "point " + std::to_string(i) + " has a non-finite coordinate (NaN or Inf)");
      const double w = weights(r.weight_begin + i);
      if (!std::isfinite(w))
        throw Error(where, element, "weight " + std::to_string(i) + " is not finite (NaN or Inf)");
      if (w < 0)
        throw Error(where, element, "weight " + std::to_string(i) + " is negative");
      sum += w;
    }
    if (!(sum > 0)) throw Error(where, element, "the weights sum to zero");
  }
  for (std::size_t u = 0; u < pairs.size(); ++u) {
    const Pair& p = pairs[u];
    if (p.source < 0 || p.source >= clouds.count() || p.target < 0 || p.target >= clouds.count())
      throw Error(where, "pair " + std::to_string(u),
                  "names cloud " + std::to_string(p.source < 0 || p.source >= clouds.count() ? p.source : p.target) +
                      " but there are " + std::to_string(clouds.count()) + " clouds");
  }
}

template <class T>
BatchLayout BatchLayout::of(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs) {
  BatchLayout layout;
  layout.row_offset.assign(pairs.size() + 1, 0);
  layout.col_offset.assign(pairs.size() + 1, 0);
  for (std::size_t u = 0; u < pairs.size(); ++u) {
    if (pairs[u].source < 0 || pairs[u].source >= clouds.count() || pairs[u].target < 0 ||
        pairs[u].target >= clouds.count())
      throw Error("", "pair " + std::to_string(u), "names a cloud that does not exist");
    layout.row_offset[u + 1] = layout.row_offset[u] + clouds.cloud(pairs[u].source).size;
    layout.col_offset[u + 1] = layout.col_offset[u] + clouds.cloud(pairs[u].target).size;
  }
  layout.device_row_offset = Vector<std::int64_t>(no_init("kotml::ot::row_offset"), pairs.size() + 1);
  layout.device_col_offset = Vector<std::int64_t>(no_init("kotml::ot::col_offset"), pairs.size() + 1);
  Kokkos::deep_copy(layout.device_row_offset,
                    Kokkos::View<const std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        layout.row_offset.data(), layout.row_offset.size()));
  Kokkos::deep_copy(layout.device_col_offset,
                    Kokkos::View<const std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        layout.col_offset.data(), layout.col_offset.size()));
  return layout;
}

#define KOTML_OT_INSTANTIATE_BATCH(T)                                                              \
  template class CloudBatch<T>;                                                                   \
  template CloudBatch<T> make_cloud_batch<T>(const std::vector<std::vector<T>>&, int,             \
                                             const std::vector<std::vector<double>>&);            \
  template void validate<T>(const CloudBatch<T>&, const std::vector<Pair>&, const std::string&);  \
  template BatchLayout BatchLayout::of<T>(const CloudBatch<T>&, const std::vector<Pair>&);

KOTML_OT_INSTANTIATE_BATCH(float)
KOTML_OT_INSTANTIATE_BATCH(double)

}  // namespace kotml::ot
