// Rank and embedding features (see features.hpp). Rank features: one team per
// cell; the team copies the cell's stored values to scratch, one thread
// heap-sorts them, then the team fills the row (every gene at the zeros' rank)
// and overwrites the stored genes with their own ranks, found by binary search.

#include "kotml/map/features.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"

namespace kotml::map {
namespace {

using HostUnmanagedFloat = Kokkos::View<float**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using HostUnmanaged = Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class T>
Vector<const T> stage(const std::vector<T>& host, std::size_t begin, std::size_t end) {
  return Kokkos::create_mirror_view_and_copy(MemSpace(), HostUnmanaged<T>(host.data() + begin, end - begin));
}

/// Restores the heap property below root in a[0, end) (a max-heap).
KOKKOS_INLINE_FUNCTION void sift_down(float* a, std::int64_t root, std::int64_t end) {
  while (true) {
    std::int64_t child = 2 * root + 1;
    if (child >= end) return;
    if (child + 1 < end && a[child] < a[child + 1]) ++child;
    if (!(a[root] < a[child])) return;
    const float t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

/// Sorts a[0, n) ascending in place (heap sort: no recursion, no extra memory).
KOKKOS_INLINE_FUNCTION void heap_sort(float* a, std::int64_t n) {
  for (std::int64_t start = n / 2 - 1; start >= 0; --start) sift_down(a, start, n);
  for (std::int64_t end = n - 1; end > 0; --end) {
    const float t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}

/// Number of entries of sorted a[0, n) below v (strict) or at most v.
KOKKOS_INLINE_FUNCTION std::int64_t count_below(const float* a, std::int64_t n, float v, bool or_equal) {
  std::int64_t lo = 0, hi = n;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < v || (or_equal && a[mid] == v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;
using Member = TeamPolicy::member_type;
using Scratch = Kokkos::View<float*, ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

struct RankRows {
  Vector<const std::int64_t> indptr;  // of the block's rows, from 0
  Vector<const io::SparseIndex> indices;
  Vector<const float> values;
  Matrix<float> out;  // rows × genes
  std::int64_t genes = 0;
  std::int64_t max_stored = 0;
  int scratch_level = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t r = team.league_rank();
    const std::int64_t begin = indptr(r), stored = indptr(r + 1) - begin;
    Scratch sorted(team.team_scratch(scratch_level), max_stored);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, stored),
                         [&](const std::int64_t p) { sorted(p) = values(begin + p); });
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { heap_sort(sorted.data(), stored); });
    team.team_barrier();
    const float* s = sorted.data();
    const std::int64_t negative = count_below(s, stored, 0.0f, false);
    const std::int64_t zeros = genes - stored + (count_below(s, stored, 0.0f, true) - negative);
    const double centre = 0.5 * static_cast<double>(genes + 1);
    // Average rank of a tie group = (values below) + (size + 1)/2.
    const float zero_value = static_cast<float>(static_cast<double>(negative) + 0.5 * static_cast<double>(zeros + 1) - centre);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, genes), [&](const std::int64_t g) { out(r, g) = zero_value; });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, stored), [&](const std::int64_t p) {
      const float v = values(begin + p);
      if (v == 0.0f) return;
      std::int64_t below = count_below(s, stored, v, false);
      const std::int64_t equal = count_below(s, stored, v, true) - below;
      if (v > 0.0f) below += genes - stored;  // the implicit zeros
      out(r, indices(begin + p)) =
          static_cast<float>(static_cast<double>(below) + 0.5 * static_cast<double>(equal + 1) - centre);
    });
  }
};

void run_rank_rows(const RankRows& k, std::int64_t rows) {
  const std::size_t bytes = Scratch::shmem_size(k.max_stored);
  TeamPolicy policy(rows, Kokkos::AUTO);
  policy.set_scratch_size(k.scratch_level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kotml::map::rank_features", policy, k);
}

}  // namespace

std::vector<float> rank_features(const data::HostCsr& counts, std::int64_t row_begin, std::int64_t row_end) {
  require(row_begin >= 0 && row_begin <= row_end && row_end <= counts.rows, "", "",
          "rank features: rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) +
              ") are not inside the " + std::to_string(counts.rows) + " cells");
  const std::int64_t rows = row_end - row_begin, genes = counts.cols;
  std::vector<float> host(static_cast<std::size_t>(rows * genes));
  if (rows == 0 || genes == 0) return host;

  const auto first = static_cast<std::size_t>(counts.indptr[static_cast<std::size_t>(row_begin)]);
  const auto last = static_cast<std::size_t>(counts.indptr[static_cast<std::size_t>(row_end)]);
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(rows + 1));
  std::int64_t max_stored = 0;
  for (std::int64_t r = 0; r <= rows; ++r) {
    indptr[static_cast<std::size_t>(r)] = counts.indptr[static_cast<std::size_t>(row_begin + r)] - static_cast<std::int64_t>(first);
    if (r > 0) max_stored = std::max(max_stored, indptr[static_cast<std::size_t>(r)] - indptr[static_cast<std::size_t>(r - 1)]);
  }
  require(max_stored <= genes, "", "", "rank features: a cell stores more values than there are genes");

  const std::int64_t scratch_floats = std::max<std::int64_t>(max_stored, 1);
  // Level 0 (fast, small on GPUs) while a cell's values fit in 16 KiB.
  const int level = Scratch::shmem_size(scratch_floats) <= 16384 ? 0 : 1;
  // Members initialised in place: a default-constructed View assigned an
  // unmanaged one crashes on destruction with Kokkos develop (4.6, 28848dfa8).
  const RankRows k{stage(indptr, 0, indptr.size()),
                   stage(counts.indices, first, last),
                   stage(counts.values, first, last),
                   Matrix<float>(no_init("kotml::map::rank_features"), rows, genes),
                   genes,
                   scratch_floats,
                   level};
  run_rank_rows(k, rows);
  Kokkos::deep_copy(HostUnmanagedFloat(host.data(), rows, genes), k.out);
  return host;
}

std::vector<float> embedding_features(const io::AnnDataReader& reader, const std::string& key,
                                      std::int64_t row_begin, std::int64_t row_end) {
  const std::string element = "obsm/" + key;
  if (!reader.has(element)) throw Error(reader.path(), element, "no such embedding in obsm");
  const auto info = reader.matrix_info(element);
  if (info.storage != io::MatrixStorage::dense)
    throw Error(reader.path(), element, "the embedding must be a dense array, not " + io::to_string(info.storage));
  require(row_begin >= 0 && row_begin <= row_end && row_end <= info.rows, reader.path(), element,
          "rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) + ") are not inside the " +
              std::to_string(info.rows) + " cells");
  const auto values = reader.file().read_row_range<float>(element, row_begin, row_end);
  const auto bad = std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad > 0) throw Error(reader.path(), element, std::to_string(bad) + " NaN or infinite value(s)");
  return values;
}

}  // namespace kotml::map
