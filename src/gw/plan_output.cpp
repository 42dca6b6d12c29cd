#include "kotml/gw/plan_output.hpp"

#include <mpi.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "kotml/core/error.hpp"
#include "kotml/gw/row_partition.hpp"

namespace kotml::gw {
namespace {

/// The t largest entries of every row, by insertion into a sorted list per row
/// (t is small); equal values keep the smaller column first.
void top_k_rows(Matrix<double> plan, Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MemSpace> idx,
                Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> val) {
  const std::int64_t t = idx.extent(1), k_count = plan.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::plan_top_k", Kokkos::RangePolicy<ExecSpace>(0, plan.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        std::int64_t held = 0;
        for (std::int64_t k = 0; k < k_count; ++k) {
          const double x = plan(i, k);
          if (held == t && !(x > val(i, t - 1))) continue;
          std::int64_t slot = held < t ? held++ : t - 1;
          while (slot > 0 && val(i, slot - 1) < x) {
            val(i, slot) = val(i, slot - 1);
            idx(i, slot) = idx(i, slot - 1);
            --slot;
          }
          val(i, slot) = x;
          idx(i, slot) = k;
        }
      });
}

/// Rank 0 writes every rank's rows (row-major, `width` values a row) into
/// `dataset`, created here as n × width of T; chunks keep messages < 2^31.
template <class T>
void stream_rows(const std::vector<T>& mine, std::int64_t width, std::int64_t n,
                 const dist::Comm& comm, io::h5::File* file, const std::string& dataset,
                 MPI_Datatype type) {
  std::optional<Error> failure;
  if (comm.is_root()) {
    try {
      file->create_dataset<T>(dataset, {n, width});
    } catch (const Error& e) {
      failure = e;
    }
  }
  const std::int64_t chunk = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::numeric_limits<int>::max() / 2) / std::max<std::int64_t>(width, 1));
  for (int r = 0; r < comm.size(); ++r) {
    const auto rows = plan_rows(n, comm.size(), r);
    for (std::int64_t b = rows.begin; b < rows.end; b += chunk) {
      const std::int64_t e = std::min(b + chunk, rows.end);
      const std::size_t count = static_cast<std::size_t>((e - b) * width);
      const std::size_t offset = static_cast<std::size_t>((b - rows.begin) * width);
      if (comm.rank() == r && r != 0)
        MPI_Send(mine.data() + offset, static_cast<int>(count), type, 0, 0, comm.raw());
      if (!comm.is_root()) continue;
      std::vector<T> buffer;
      if (r == 0) {
        buffer.assign(mine.begin() + offset, mine.begin() + offset + count);
      } else {
        buffer.resize(count);
        MPI_Recv(buffer.data(), static_cast<int>(count), type, r, 0, comm.raw(), MPI_STATUS_IGNORE);
      }
      if (failure) continue;
      try {
        file->write_row_range<T>(dataset, b, buffer);
      } catch (const Error& e) {
        failure = e;
      }
    }
  }
  comm.agree(failure);
}

}  // namespace

void write_dense_plan(const SampledGwResult& result, bool float32, const dist::Comm& comm,
                      io::h5::File* file, const std::string& dataset) {
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), result.plan);
  if (float32) {
    const std::vector<float> mine(h.data(), h.data() + h.size());
    stream_rows<float>(mine, result.n_target, result.n_source, comm, file, dataset, MPI_FLOAT);
  } else {
    const std::vector<double> mine(h.data(), h.data() + h.size());
    stream_rows<double>(mine, result.n_target, result.n_source, comm, file, dataset, MPI_DOUBLE);
  }
}

void write_top_k_plan(const SampledGwResult& result, std::int64_t t, const dist::Comm& comm,
                      io::h5::File* file, const std::string& group) {
  t = std::min(t, result.n_target);
  const std::int64_t rows = result.row_end - result.row_begin;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MemSpace> idx(no_init("kotml::gw::top_idx"), rows, t);
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> val(no_init("kotml::gw::top_val"), rows, t);
  top_k_rows(result.plan, idx, val);
  auto idx_h = Kokkos::create_mirror_view_and_copy(HostSpace(), idx);
  auto val_h = Kokkos::create_mirror_view_and_copy(HostSpace(), val);
  comm.phase([&] {
    if (comm.is_root()) file->create_group(group);
  });
  stream_rows<std::int64_t>(std::vector<std::int64_t>(idx_h.data(), idx_h.data() + idx_h.size()), t,
                            result.n_source, comm, file, group + "/indices", MPI_INT64_T);
  stream_rows<double>(std::vector<double>(val_h.data(), val_h.data() + val_h.size()), t,
                      result.n_source, comm, file, group + "/values", MPI_DOUBLE);
}

}  // namespace kotml::gw
