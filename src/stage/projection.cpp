#include "kotml/stage/projection.hpp"

#include <Kokkos_Core.hpp>

#include <map>

// KOTML_DEVICE_PASS: the kernel keeps a portable loop for device compilers.
#include "kotml/core/math.hpp"
#include "projection_host.hpp"

namespace kotml::stage {
namespace {

/// Z(r, c) = Σ_f A(c, f) X(r, f), accumulated in double, features in order.
/// One thread takes a block of rows and eight components at a time (Aᵀ padded
/// to a multiple of eight columns with zeros), so that 4 × 8 independent sums
/// advance together instead of one dependent chain of d additions per entry;
/// each sum still adds its terms in feature order. Host backends run the block
/// as a SIMD kernel (projection_host.hpp).
template <class T>
struct ProjectRowBlocks {
  Matrix<const PointScalar> x;
  Matrix<const double> a_t;  // d × (k rounded up to project_block_comps), zero padded
  Matrix<T> z;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t block) const {
    constexpr std::int64_t R = detail::project_block_rows, C = detail::project_block_comps;
    const auto n = static_cast<std::int64_t>(x.extent(0)), d = static_cast<std::int64_t>(x.extent(1));
    const auto k = static_cast<std::int64_t>(z.extent(1));
    const std::int64_t r0 = block * R;
    // Rows past the end repeat the last row; their sums are not written.
    std::int64_t row[R];
    for (std::int64_t i = 0; i < R; ++i) row[i] = r0 + i < n ? r0 + i : n - 1;
    for (std::int64_t c0 = 0; c0 < k; c0 += C) {
      double s[R][C] = {};
#ifdef KOTML_DEVICE_PASS
      for (std::int64_t f = 0; f < d; ++f) {
        const double* a = &a_t(f, c0);
        for (std::int64_t i = 0; i < R; ++i) {
          const double xv = static_cast<double>(x(row[i], f));
          for (std::int64_t l = 0; l < C; ++l) s[i][l] += a[l] * xv;
        }
      }
#else
      const PointScalar* rows[R];
      for (std::int64_t i = 0; i < R; ++i) rows[i] = &x(row[i], 0);
      detail::project_block_host(rows, &a_t(0, c0), static_cast<std::int64_t>(a_t.extent(1)), d, &s[0][0]);
#endif
      for (std::int64_t i = 0; i < R && r0 + i < n; ++i)
        for (std::int64_t l = 0; l < C && c0 + l < k; ++l) z(r0 + i, c0 + l) = static_cast<T>(s[i][l]);
    }
  }
};

struct TransposeMetric {
  Matrix<const double> a;
  Matrix<double> a_t;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t c, const std::int64_t f) const { a_t(f, c) = a(c, f); }
};

template <class T>
void launch_projection(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<T>& Z) {
  const auto rows = static_cast<std::int64_t>(X.extent(0));
  const auto k = static_cast<std::int64_t>(A.extent(0)), d = static_cast<std::int64_t>(A.extent(1));
  if (rows == 0 || k == 0) return;
  const std::int64_t padded =
      (k + detail::project_block_comps - 1) / detail::project_block_comps * detail::project_block_comps;
  Matrix<double> a_t("kotml::eval::projection_transposed", static_cast<std::size_t>(d),
                     static_cast<std::size_t>(padded));
  Kokkos::parallel_for("kotml::eval::transpose_metric",
                       Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {k, d}), TransposeMetric{A, a_t});
  const std::int64_t blocks = (rows + detail::project_block_rows - 1) / detail::project_block_rows;
  Kokkos::parallel_for("kotml::eval::project_rows", Kokkos::RangePolicy<ExecSpace>(0, blocks),
                       ProjectRowBlocks<T>{X, a_t, Z});
}

}  // namespace

void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<double>& Z) {
  launch_projection(X, A, Z);
}
void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<float>& Z) {
  launch_projection(X, A, Z);
}

Matrix<double> metric_to_device(const HostMatrix<double>& a) {
  Matrix<double> device(no_init("kotml::eval::metric"), a.extent(0), a.extent(1));
  Kokkos::deep_copy(device, a);
  return device;
}

template <class T>
ProjectedCloudsOf<T> project_clouds(const BatchStage& staged, const std::vector<GlobalId>& donors,
                                    const Matrix<const double>& A) {
  const auto k = static_cast<std::int64_t>(A.extent(0));
  ProjectedCloudsOf<T> out;
  out.donors = donors;
  // Each distinct staged block is projected once (group-by donors share one):
  // stage offset -> (first pool row, a donor staged there).
  std::map<std::int64_t, std::pair<std::int64_t, GlobalId>> projected_at;
  std::vector<std::int64_t> first_row(donors.size());
  std::int64_t total = 0;
  for (std::size_t c = 0; c < donors.size(); ++c) {
    const auto at = staged.offset(donors[c]);
    auto found = projected_at.find(at);
    if (found == projected_at.end()) {
      found = projected_at.emplace(at, std::make_pair(total, donors[c])).first;
      total += staged.rows(donors[c]);
    }
    first_row[c] = found->second.first;
  }
  Matrix<T> z(no_init("kotml::eval::projected_points"), static_cast<std::size_t>(total), static_cast<std::size_t>(k));
  for (const auto& [at, placed] : projected_at) {
    const auto [row, donor] = placed;
    const auto n = staged.rows(donor);
    if (n == 0) continue;
    project_rows(staged.donor_points(donor), A,
                 Kokkos::subview(z, std::make_pair(row, row + n), Kokkos::ALL()));
  }
  std::vector<std::int64_t> weight_begin;
  auto weights = stage_weights(staged.store(), donors, weight_begin);
  std::vector<ot::CloudRange> ranges;
  for (std::size_t c = 0; c < donors.size(); ++c)
    ranges.push_back({first_row[c], weight_begin[c], staged.rows(donors[c])});
  out.clouds = ot::CloudBatch<T>(z, weights, std::move(ranges));
  return out;
}

template ProjectedCloudsOf<double> project_clouds<double>(const BatchStage&, const std::vector<GlobalId>&,
                                                          const Matrix<const double>&);
template ProjectedCloudsOf<float> project_clouds<float>(const BatchStage&, const std::vector<GlobalId>&,
                                                        const Matrix<const double>&);

}  // namespace kotml::stage
