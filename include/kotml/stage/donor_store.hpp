#pragma once
// Host staging of donor point clouds for the OT solvers.
//
// DonorStore holds every loaded donor's points once, one after the other, in
// host memory that the device can read fast: page-locked (pinned) memory when the
// device is a GPU, ordinary host memory otherwise. BatchStage makes the points of
// the donors of one batch available in device memory: on a GPU it copies exactly
// those donors into a reused device buffer (a DMA from pinned memory); when host
// and device share memory it copies nothing and views the store itself.
//
// In group-by mode (Cohort::identical_supports) every donor's support is the
// same K centroid rows, stored once; donors differ only in their weights.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/ot/batch.hpp"

namespace kotml::stage {

#if defined(KOKKOS_ENABLE_CUDA)
using PinnedSpace = Kokkos::CudaHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_HIP) && KOKKOS_VERSION >= 40000
using PinnedSpace = Kokkos::HIPHostPinnedSpace;
#else
using PinnedSpace = Kokkos::HostSpace;
#endif

using PointScalar = data::PointScalar;

class DonorStore {
 public:
  using Pool = Kokkos::View<PointScalar**, Kokkos::LayoutRight, PinnedSpace>;

  /// Copies the points of every loaded donor of the cohort (once). Donors not
  /// loaded on this rank get no rows; asking for them is an internal error.
  explicit DonorStore(const data::Cohort& cohort);
  /// The same, but each donor's points leave the cohort as they enter the
  /// store (the cohort then reports them not loaded), so a rank holds its
  /// points once instead of twice.
  struct TakePoints {};
  static constexpr TakePoints take_points{};
  DonorStore(data::Cohort& cohort, TakePoints);

  std::int64_t dim() const { return dim_; }
  std::int64_t n_donors() const { return static_cast<std::int64_t>(offset_.size()); }
  bool identical_supports() const { return identical_; }
  bool has(GlobalId donor) const { return offset_[static_cast<std::size_t>(donor)] >= 0; }
  std::int64_t rows(GlobalId donor) const { return rows_[static_cast<std::size_t>(donor)]; }
  /// First row of the donor in pool().
  std::int64_t offset(GlobalId donor) const;
  const std::vector<double>& weights(GlobalId donor) const {
    return weights_[static_cast<std::size_t>(donor)];
  }
  const Pool& pool() const { return pool_; }

 private:
  void fill(const data::Cohort& cohort, data::Cohort* release_from);

  std::int64_t dim_ = 0;
  bool identical_ = false;
  std::vector<std::int64_t> offset_;  // -1 for donors without points on this rank
  std::vector<std::int64_t> rows_;
  std::vector<std::vector<double>> weights_;
  Pool pool_;
};

class BatchStage {
 public:
  /// Makes the points of `donors` (cohort indices) readable on the device,
  /// replacing what was staged before.
  void stage(const DonorStore& store, const std::vector<GlobalId>& donors);

  /// The device matrix holding the staged rows, and where a donor starts in it.
  const Matrix<PointScalar>& points() const { return points_; }
  std::int64_t offset(GlobalId donor) const;
  std::int64_t rows(GlobalId donor) const { return store_->rows(donor); }
  const DonorStore& store() const { return *store_; }
  /// A donor's rows on the device.
  Matrix<const PointScalar> donor_points(GlobalId donor) const;

  /// The staged donors as a cloud batch over the raw features (no projection),
  /// cloud c = donors[c], with the donors' weights.
  ot::CloudBatch<PointScalar> raw_clouds(const std::vector<GlobalId>& donors) const;

 private:
  const DonorStore* store_ = nullptr;
  Matrix<PointScalar> points_;
  Matrix<PointScalar> buffer_;  // device builds: reused between batches
  std::vector<std::int64_t> offset_;  // per cohort donor; -1 when not staged
};

/// Weights of the listed donors, concatenated on the device, and each donor's
/// first entry in it.
Vector<double> stage_weights(const DonorStore& store, const std::vector<GlobalId>& donors,
                             std::vector<std::int64_t>& begin);

}  // namespace kotml::stage
