#include "kotml/stage/donor_store.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kotml/core/error.hpp"

namespace kotml::stage {
namespace {

using HostUnmanagedMatrix =
    Kokkos::View<const PointScalar**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

void fill_rows(const DonorStore::Pool& pool, std::int64_t first, const PointScalar* source,
               std::int64_t rows, std::int64_t dim) {
  if (rows == 0) return;
  const auto target = Kokkos::subview(pool, std::make_pair(first, first + rows), Kokkos::ALL());
  Kokkos::deep_copy(target, HostUnmanagedMatrix(source, static_cast<std::size_t>(rows), static_cast<std::size_t>(dim)));
}

/// The pool itself as the device stage; only called when the two spaces agree,
/// but must compile for every backend.
template <class Target, class Source>
void share_pool(Target& target, const Source& source) {
  if constexpr (std::is_assignable<Target&, const Source&>::value) {
    target = source;
  } else {
    throw InternalError("the donor pool is not in device memory");
  }
}

/// Returns the allocator's free pages to the system (glibc; elsewhere the
/// allocator is left to itself).
void give_back_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

DonorStore::DonorStore(const data::Cohort& cohort) { fill(cohort, nullptr); }

DonorStore::DonorStore(data::Cohort& cohort, TakePoints) { fill(cohort, &cohort); }

void DonorStore::fill(const data::Cohort& cohort, data::Cohort* release_from) {
  dim_ = cohort.dim;
  identical_ = cohort.identical_supports;
  const auto n = static_cast<std::size_t>(cohort.n_donors());
  offset_.assign(n, -1);
  rows_.assign(n, 0);
  weights_.resize(n);
  std::int64_t total = 0;
  for (std::size_t u = 0; u < n; ++u) {
    const auto& donor = cohort.donors[u];
    weights_[u] = donor.weights;
    rows_[u] = donor.n_points;
    if (identical_) {
      offset_[u] = 0;
    } else if (donor.loaded()) {
      offset_[u] = total;
      total += donor.n_points;
    }
  }
  if (identical_) total = static_cast<std::int64_t>(cohort.groups.size());
  // glibc keeps freed blocks of a size it has seen freed before in its heap
  // (its mmap threshold rises with them), so the released points would stay
  // resident next to the pool: hand the free pages back every 64 MB.
  std::size_t released = 0;
  constexpr std::size_t trim_every = std::size_t(64) << 20;
  pool_ = Pool(no_init("kotml::eval::donor_pool"), static_cast<std::size_t>(total), static_cast<std::size_t>(dim_));
  if (identical_) {
    fill_rows(pool_, 0, cohort.shared_support.data(), total, dim_);
  } else {
    for (std::size_t u = 0; u < n; ++u) {
      if (offset_[u] < 0) continue;
      fill_rows(pool_, offset_[u], cohort.donors[u].points.data(), rows_[u], dim_);
      // The pool was allocated without touching its pages: giving each donor's
      // rows back as soon as they are copied keeps the points in memory once.
      if (release_from) {
        Kokkos::fence();
        released += release_from->donors[u].points.size() * sizeof(PointScalar);
        std::vector<PointScalar>().swap(release_from->donors[u].points);
        if (released > trim_every) {
          give_back_free_memory();
          released = 0;
        }
      }
    }
  }
  Kokkos::fence();
  if (release_from) give_back_free_memory();
}

std::int64_t DonorStore::offset(GlobalId donor) const {
  const auto o = offset_[static_cast<std::size_t>(donor)];
  if (o < 0)
    throw InternalError("donor " + std::to_string(donor) + " not loaded on this rank");
  return o;
}

void BatchStage::stage(const DonorStore& store, const std::vector<GlobalId>& donors) {
  store_ = &store;
  offset_.assign(static_cast<std::size_t>(store.n_donors()), -1);
  if constexpr (std::is_same<PinnedSpace, MemSpace>::value) {
    // Host and device share memory: the pool is the stage.
    share_pool(points_, store.pool());
    for (auto u : donors) offset_[static_cast<std::size_t>(u)] = store.offset(u);
    return;
  } else {
    if (store.identical_supports()) {
      const auto k = static_cast<std::int64_t>(store.pool().extent(0));
      if (static_cast<std::int64_t>(buffer_.extent(0)) < k)
        buffer_ = Matrix<PointScalar>(no_init("kotml::eval::batch_stage"), static_cast<std::size_t>(k), static_cast<std::size_t>(store.dim()));
      Kokkos::deep_copy(Kokkos::subview(buffer_, std::make_pair(std::int64_t(0), k), Kokkos::ALL()), store.pool());
      for (auto u : donors) offset_[static_cast<std::size_t>(u)] = 0;
      points_ = buffer_;
      return;
    }
    std::int64_t total = 0;
    for (auto u : donors)
      if (offset_[static_cast<std::size_t>(u)] < 0) {
        offset_[static_cast<std::size_t>(u)] = total;
        total += store.rows(u);
      }
    if (static_cast<std::int64_t>(buffer_.extent(0)) < total)
      buffer_ = Matrix<PointScalar>(no_init("kotml::eval::batch_stage"), static_cast<std::size_t>(total), static_cast<std::size_t>(store.dim()));
    for (std::size_t u = 0; u < offset_.size(); ++u) {
      if (offset_[u] < 0) continue;
      const auto g = static_cast<GlobalId>(u);
      const std::int64_t from = store.offset(g), rows = store.rows(g);
      if (rows == 0) continue;
      Kokkos::deep_copy(Kokkos::subview(buffer_, std::make_pair(offset_[u], offset_[u] + rows), Kokkos::ALL()),
                        Kokkos::subview(store.pool(), std::make_pair(from, from + rows), Kokkos::ALL()));
    }
    points_ = buffer_;
  }
}

std::int64_t BatchStage::offset(GlobalId donor) const {
  const auto o = offset_[static_cast<std::size_t>(donor)];
  if (o < 0) throw InternalError("donor " + std::to_string(donor) + " not staged");
  return o;
}

Matrix<const PointScalar> BatchStage::donor_points(GlobalId donor) const {
  const auto first = offset(donor);
  return Kokkos::subview(points_, std::make_pair(first, first + rows(donor)), Kokkos::ALL());
}

Vector<double> stage_weights(const DonorStore& store, const std::vector<GlobalId>& donors,
                             std::vector<std::int64_t>& begin) {
  std::vector<double> host;
  begin.clear();
  for (auto u : donors) {
    begin.push_back(static_cast<std::int64_t>(host.size()));
    const auto& w = store.weights(u);
    host.insert(host.end(), w.begin(), w.end());
  }
  Vector<double> device(no_init("kotml::eval::stage_weights"), host.size());
  Kokkos::deep_copy(device, Kokkos::View<const double*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(), host.size()));
  return device;
}

ot::CloudBatch<PointScalar> BatchStage::raw_clouds(const std::vector<GlobalId>& donors) const {
  std::vector<std::int64_t> weight_begin;
  auto weights = stage_weights(*store_, donors, weight_begin);
  std::vector<ot::CloudRange> ranges;
  for (std::size_t c = 0; c < donors.size(); ++c)
    ranges.push_back({offset(donors[c]), weight_begin[c], rows(donors[c])});
  return ot::CloudBatch<PointScalar>(points_, weights, std::move(ranges));
}

}  // namespace kotml::stage
