#pragma once
// How the rows of a GW plan (source points) are split over ranks: whole tiles
// of `plan_row_tile` consecutive rows, tiles in contiguous blocks per rank.
//
// What mixes rows is organised so that a row's numbers never depend on which
// rank holds it: Λ's entries are each a fixed sequence of operations on their
// own two rows (ot::PointCostMatrix), and the Sinkhorn's column sums are formed
// per tile in floating point, then added exactly across tiles and ranks. So the
// plan, the matching and the cost are bit-identical on any rank count, and the
// tile is the column sums' unit: 16 rows, which keeps the rows of a tile's walk
// over a wide Λ within what the hardware prefetchers follow (gw_kernels.hpp),
// and gives every one of 1024 ranks rows from 16,384 points on.

#include <cstdint>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/partition.hpp"

namespace kotml::gw {

inline constexpr std::int64_t plan_row_tile = 16;

/// Rows [begin, end) of an n-row plan held by `rank` of `ranks` (may be empty).
inline dist::Block plan_rows(std::int64_t n, int ranks, int rank) {
  const std::int64_t tiles = (n + plan_row_tile - 1) / plan_row_tile;
  const dist::Block t = dist::block_of(tiles, ranks, rank);
  const std::int64_t begin = t.begin * plan_row_tile < n ? t.begin * plan_row_tile : n;
  const std::int64_t end = t.end * plan_row_tile < n ? t.end * plan_row_tile : n;
  return {begin, end};
}

/// Every rank's row block (rows × columns, row-major, float or double) gathered
/// on every rank: blocks are contiguous and come in rank order, so `all` is in
/// global row order. Straight into `all` where it is host memory: these gathers
/// repeat every GW iteration, and buffers allocated per call cost page faults
/// each time. Collective.
template <class BlockView>
void allgather_rows(const dist::Comm& comm, BlockView local, BlockView all) {
  auto local_h = Kokkos::create_mirror_view_and_copy(HostSpace(), local);
  auto all_h = Kokkos::create_mirror_view(all);
  comm.allgatherv(local_h.data(), static_cast<std::int64_t>(local_h.size()), all_h.data(),
                  static_cast<std::int64_t>(all_h.size()));
  Kokkos::deep_copy(all, all_h);
}

}  // namespace kotml::gw
