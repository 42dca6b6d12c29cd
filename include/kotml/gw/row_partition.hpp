#pragma once
// How the rows of a GW plan (source points) are split over ranks: whole tiles
// of `plan_row_tile(n)` consecutive rows, tiles in contiguous blocks per rank.
//
// Every computation that mixes rows is organised by these global tiles (the
// cost-estimate GEMM runs one tile at a time; column sums are formed per tile,
// then added exactly), so a tile's numbers never depend on which rank holds it:
// the plan, the matching and the cost are bit-identical on any rank count.
//
// The tile height is a function of n alone, never of the rank count: a tile's
// in-tile column sums, and with some OpenBLAS kernels (Haswell's) a row's GEMM
// bits, depend on the height (perf/gw/gemm_tile_heights.c). It is 64 rows
// where n gives at least `plan_tiles_wanted` such tiles, else the largest power
// of two, down to 16, that does: with 64-row tiles 32,768 points were 512
// tiles, and on 1024 ranks half the ranks held no rows and waited.

#include <cstdint>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/partition.hpp"

namespace kotml::gw {

inline constexpr std::int64_t plan_row_tile_max = 64, plan_row_tile_min = 16;
inline constexpr std::int64_t plan_tiles_wanted = 1024;

/// Rows per tile of an n-row plan: 64, 32 or 16 (see above).
constexpr std::int64_t plan_row_tile(std::int64_t n) {
  std::int64_t h = plan_row_tile_max;
  while (h > plan_row_tile_min && n < h * plan_tiles_wanted) h /= 2;
  return h;
}

/// Rows [begin, end) of an n-row plan held by `rank` of `ranks` (may be empty).
inline dist::Block plan_rows(std::int64_t n, int ranks, int rank) {
  const std::int64_t h = plan_row_tile(n);
  const std::int64_t tiles = (n + h - 1) / h;
  const dist::Block t = dist::block_of(tiles, ranks, rank);
  const std::int64_t begin = t.begin * h < n ? t.begin * h : n;
  const std::int64_t end = t.end * h < n ? t.end * h : n;
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
