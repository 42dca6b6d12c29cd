// Kernels of the cohort builder (see cohort_kernels.hpp). Blocks arrive in host
// memory; they are staged to the device (no copy when the device is the host),
// processed, and copied back when changed.

#include "cohort_kernels.hpp"

#include <Kokkos_Core.hpp>

#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"
#include "staging.hpp"

namespace kotml::data::detail {
namespace {

using RowPolicy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

Matrix<const float> stage(const std::vector<float>& block, std::int64_t n, std::int64_t d) {
  auto device =
      Kokkos::create_mirror_view_and_copy(MemSpace(), HostUnmanagedMatrix<const float>(block.data(), n, d));
  return device;
}

struct NonFinite {
  Matrix<const float> x;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, std::int64_t& count) const {
    for (std::size_t j = 0; j < x.extent(1); ++j)
      if (!kmath::isfinite(x(i, j))) ++count;
  }
};

struct FeatureMoments {
  Matrix<const float> x;
  Vector<double> sums;     // d
  Vector<double> squares;  // d
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j) const {
    double s = 0, s2 = 0;
    for (std::size_t i = 0; i < x.extent(0); ++i) {
      const double v = x(i, j);
      s += v;
      s2 += v * v;
    }
    sums(j) = s;
    squares(j) = s2;
  }
};

struct GroupSums {
  Matrix<const float> x;
  Vector<const std::int32_t> group;
  Matrix<double> sums;  // n_groups × d, zeroed
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j) const {
    for (std::size_t i = 0; i < x.extent(0); ++i) sums(group(i), j) += static_cast<double>(x(i, j));
  }
};

struct Standardize {
  Matrix<float> x;
  Vector<const double> mean;
  Vector<const double> scale;
  bool scalar;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    for (std::size_t j = 0; j < x.extent(1); ++j) {
      const std::size_t k = scalar ? 0 : j;
      x(i, j) = static_cast<float>((static_cast<double>(x(i, j)) - mean(k)) / scale(k));
    }
  }
};

std::int64_t run_non_finite(const NonFinite& k, std::int64_t n) {
  std::int64_t count = 0;
  Kokkos::parallel_reduce("kotml::data::count_non_finite", RowPolicy(0, n), k, count);
  return count;
}
void run_feature_moments(const FeatureMoments& k, std::int64_t d) {
  Kokkos::parallel_for("kotml::data::feature_moments", RowPolicy(0, d), k);
}
void run_group_sums(const GroupSums& k, std::int64_t d) {
  Kokkos::parallel_for("kotml::data::group_sums", RowPolicy(0, d), k);
}
void run_standardize(const Standardize& k, std::int64_t n) {
  Kokkos::parallel_for("kotml::data::standardize", RowPolicy(0, n), k);
}

}  // namespace

std::int64_t count_non_finite(const std::vector<float>& block, std::int64_t n, std::int64_t d) {
  if (n == 0 || d == 0) return 0;
  return run_non_finite(NonFinite{stage(block, n, d)}, n);
}

std::vector<double> feature_moments(const std::vector<float>& block, std::int64_t n, std::int64_t d) {
  FeatureMoments k{stage(block, n, d), Vector<double>("feature sums", d), Vector<double>("feature squares", d)};
  if (d > 0) run_feature_moments(k, d);
  auto sums = to_host(k.sums);
  const auto squares = to_host(k.squares);
  sums.insert(sums.end(), squares.begin(), squares.end());
  return sums;
}

std::vector<double> group_sums(const std::vector<float>& block, std::int64_t n, std::int64_t d,
                               const std::vector<std::int32_t>& group, std::int64_t n_groups) {
  GroupSums k{stage(block, n, d), to_device("cell groups", group), Matrix<double>("group sums", n_groups, d)};
  if (d > 0 && n > 0) run_group_sums(k, d);
  return to_host(k.sums);
}

void standardize(std::vector<float>& block, std::int64_t n, std::int64_t d, const std::vector<double>& mean,
                 const std::vector<double>& scale) {
  if (n == 0 || d == 0) return;
  const HostUnmanagedMatrix<float> host(block.data(), n, d);
  auto device = Kokkos::create_mirror_view_and_copy(MemSpace(), host);
  run_standardize(Standardize{device, to_device("mean", mean), to_device("scale", scale), mean.size() == 1}, n);
  Kokkos::deep_copy(host, device);
}

}  // namespace kotml::data::detail
