#include "deflated_chunks.hpp"

#include <libdeflate.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/region.hpp"
#include "kotml/core/types.hpp"
#include "hdf5_handle.hpp"

namespace kotml::io::h5::detail {
namespace {

/// A batch holds at most this many bytes of compressed chunks, and as many of
/// inflated chunks that need a staging copy: the memory beside the output stays
/// bounded whatever the dataset's size.
constexpr std::size_t batch_bytes = std::size_t(64) << 20;

/// Above this a stored chunk cannot be deflate's output for its size (deflate's
/// bound is about 0.03% plus a few bytes): the size comes from a damaged index.
std::size_t plausible_stored_bytes(std::size_t inflated) { return inflated + inflated / 64 + 1024; }

/// Status of one chunk's inflation.
constexpr int chunk_ok = 0;
constexpr int chunk_wrong_size = 1;  // inflates to more or fewer bytes than a chunk holds
constexpr int chunk_bad_data = 2;    // not a zlib stream, or its Adler-32 does not match
constexpr int chunk_no_memory = 3;   // no decompressor could be allocated

}  // namespace

/// Flattened elements [from, to) of one chunk, which go to element `out_at` of
/// the output.
struct DeflatedChunks::Piece {
  std::int64_t from = 0, to = 0;
  std::size_t out_at = 0;
};

struct DeflatedChunks::Chunk {
  std::int64_t index = 0;       // chunk number along the first dimension
  std::size_t first_piece = 0;  // its pieces, contiguous in the piece list
  std::size_t piece_count = 0;
  std::size_t packed_at = 0;    // offset of its stored bytes in the batch buffer
  std::size_t packed_bytes = 0;
  std::size_t staged_at = 0;    // offset of its staging copy; SIZE_MAX: inflated into the output
  std::uint32_t skipped = 0;    // HDF5's filter mask: bit i set, filter i not applied
};

std::optional<DeflatedChunks> DeflatedChunks::of(hid_t dataset, const std::vector<std::int64_t>& dims,
                                                 hid_t memory_type) {
  const int rank = static_cast<int>(dims.size());
  if (rank < 1 || rank > H5S_MAX_RANK) return std::nullopt;
  const Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  if (!dcpl.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return std::nullopt;

  DeflatedChunks layout;
  layout.dataset_ = dataset;
  const int filters = H5Pget_nfilters(dcpl.get());
  if (filters < 1 || filters > 2) return std::nullopt;
  for (int f = 0; f < filters; ++f) {
    unsigned flags = 0, values[8] = {};
    std::size_t value_count = 8;
    char name[64];
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(f), &flags, &value_count, values,
                                           sizeof name, name, nullptr);
    if (id == H5Z_FILTER_DEFLATE && f == filters - 1)
      layout.deflate_position_ = f;
    else if (id == H5Z_FILTER_SHUFFLE && f == 0 && filters == 2)
      layout.shuffle_position_ = f;
    else
      return std::nullopt;
  }

  const Handle stored_type(H5Dget_type(dataset), H5Tclose);
  if (!stored_type.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  if (H5Tequal(stored_type.get(), memory_type) <= 0) return std::nullopt;
  layout.element_size_ = H5Tget_size(memory_type);

  std::vector<hsize_t> chunk(static_cast<std::size_t>(rank));
  if (H5Pget_chunk(dcpl.get(), rank, chunk.data()) != rank || chunk[0] == 0) return std::nullopt;
  layout.rank_ = rank;
  layout.chunk_rows_ = static_cast<std::int64_t>(chunk[0]);
  std::int64_t row_length = 1;
  for (int k = 1; k < rank; ++k) {
    if (static_cast<std::int64_t>(chunk[static_cast<std::size_t>(k)]) != dims[static_cast<std::size_t>(k)])
      return std::nullopt;
    row_length *= dims[static_cast<std::size_t>(k)];
  }
  layout.chunk_elements_ = layout.chunk_rows_ * row_length;
  layout.extent_elements_ = dims[0] * row_length;
  if (layout.chunk_elements_ <= 0) return std::nullopt;
  return layout;
}

bool DeflatedChunks::read(const std::vector<Range>& ranges, void* out, const std::string& path,
                          const std::string& element) const {
  const ProfilingRegion region("kotml::io::inflate_chunks");
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_elements_) * element_size_;

  // Each range cut at chunk boundaries, then grouped by chunk.
  std::vector<std::pair<std::int64_t, Piece>> cut;
  std::size_t out_at = 0;
  for (const auto& [begin, end] : ranges) {
    internal_check(0 <= begin && begin <= end && end <= extent_elements_,
                   "DeflatedChunks::read: a range outside " + element);
    for (std::int64_t from = begin; from < end;) {
      const std::int64_t index = from / chunk_elements_, to = std::min(end, (index + 1) * chunk_elements_);
      cut.push_back({index, Piece{from, to, out_at + static_cast<std::size_t>(from - begin)}});
      from = to;
    }
    out_at += static_cast<std::size_t>(end - begin);
  }
  if (cut.empty()) return true;
  std::stable_sort(cut.begin(), cut.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Piece> pieces;
  std::vector<Chunk> chunks;
  for (const auto& [index, piece] : cut) {
    if (chunks.empty() || chunks.back().index != index) chunks.push_back(Chunk{index, pieces.size()});
    pieces.push_back(piece);
    ++chunks.back().piece_count;
  }

  // Every chunk's stored size first: nothing is written unless all are readable.
  std::vector<hsize_t> offset(static_cast<std::size_t>(rank_), 0);
  for (Chunk& chunk : chunks) {
    offset[0] = static_cast<hsize_t>(chunk.index * chunk_rows_);
    hsize_t stored = 0;
    if (H5Dget_chunk_storage_size(dataset_, offset.data(), &stored) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (stored == 0 || stored > plausible_stored_bytes(chunk_bytes)) return false;
    chunk.packed_bytes = static_cast<std::size_t>(stored);
  }

  auto* const bytes_out = static_cast<unsigned char*>(out);
  std::vector<unsigned char> packed, staged;
  std::vector<int> status;
  std::size_t next = 0;
  while (next < chunks.size()) {
    // A batch: chunks in order until either buffer would pass batch_bytes. A
    // chunk wanted whole by one range, with no bytes to transpose, inflates
    // straight into the output; any other through a staging copy.
    const std::size_t batch_first = next;
    std::size_t packed_total = 0, staged_total = 0;
    while (next < chunks.size()) {
      Chunk& chunk = chunks[next];
      const Piece& piece = pieces[chunk.first_piece];
      const bool direct = chunk.piece_count == 1 && piece.to - piece.from == chunk_elements_ && shuffle_position_ < 0;
      const std::size_t staging = direct ? 0 : chunk_bytes;
      if (next > batch_first &&
          (packed_total + chunk.packed_bytes > batch_bytes || staged_total + staging > batch_bytes))
        break;
      chunk.packed_at = packed_total;
      chunk.staged_at = direct ? SIZE_MAX : staged_total;
      packed_total += chunk.packed_bytes;
      staged_total += staging;
      ++next;
    }
    packed.resize(packed_total);
    staged.resize(staged_total);
    for (std::size_t c = batch_first; c < next; ++c) {
      offset[0] = static_cast<hsize_t>(chunks[c].index * chunk_rows_);
      if (H5Dread_chunk(dataset_, H5P_DEFAULT, offset.data(), &chunks[c].skipped,
                        packed.data() + chunks[c].packed_at) < 0) {
        H5Eclear2(H5E_DEFAULT);
        throw Error(path, element,
                    "cannot read the stored chunk at element " +
                        std::to_string(chunks[c].index * chunk_elements_) + " (the file is damaged)");
      }
    }
    const auto count = static_cast<std::int64_t>(next - batch_first);
    status.assign(static_cast<std::size_t>(count), chunk_ok);
    inflate_batch(chunks.data() + batch_first, count, pieces.data(), packed.data(), staged.data(), bytes_out,
                  status.data());
    for (std::int64_t c = 0; c < count; ++c) {
      if (status[static_cast<std::size_t>(c)] == chunk_ok) continue;
      const std::int64_t at = chunks[batch_first + static_cast<std::size_t>(c)].index * chunk_elements_;
      const int code = status[static_cast<std::size_t>(c)];
      if (code == chunk_no_memory) throw std::bad_alloc();
      throw Error(path, element,
                  "the file is damaged: the compressed chunk at element " + std::to_string(at) +
                      (code == chunk_wrong_size ? " does not inflate to its " + std::to_string(chunk_bytes) + " bytes"
                                                : std::string(" does not inflate (not a valid zlib stream)")));
    }
  }
  return true;
}

void DeflatedChunks::inflate_batch(const Chunk* chunks, std::int64_t count, const Piece* pieces,
                                   const unsigned char* packed, unsigned char* staged, unsigned char* out,
                                   int* status) const {
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_elements_) * element_size_;
  const auto one_chunk = [=](const std::int64_t c) {
    const Chunk& chunk = chunks[c];
    const bool inflate = !(chunk.skipped & (1u << deflate_position_));
    const bool unshuffle = shuffle_position_ >= 0 && !(chunk.skipped & (1u << shuffle_position_));
    const unsigned char* source = packed + chunk.packed_at;
    unsigned char* inflated = chunk.staged_at == SIZE_MAX ? out + pieces[chunk.first_piece].out_at * element_size_
                                                          : staged + chunk.staged_at;
    if (inflate) {
      // A decompressor per chunk: a few kilobytes, against a chunk's tens of
      // kilobytes of output, and no state shared between threads.
      libdeflate_decompressor* const decompressor = libdeflate_alloc_decompressor();
      if (decompressor == nullptr) {
        status[c] = chunk_no_memory;
        return;
      }
      std::size_t length = 0;
      const libdeflate_result result =
          libdeflate_zlib_decompress(decompressor, source, chunk.packed_bytes, inflated, chunk_bytes, &length);
      libdeflate_free_decompressor(decompressor);
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE || (result == LIBDEFLATE_SUCCESS && length != chunk_bytes)) {
        status[c] = chunk_wrong_size;
        return;
      }
      if (result != LIBDEFLATE_SUCCESS) {
        status[c] = chunk_bad_data;
        return;
      }
    } else {
      if (chunk.packed_bytes != chunk_bytes) {
        status[c] = chunk_wrong_size;
        return;
      }
      std::memcpy(inflated, source, chunk_bytes);
    }
    if (chunk.staged_at == SIZE_MAX) return;
    const std::int64_t chunk_first = chunk.index * chunk_elements_;
    const auto elements = static_cast<std::size_t>(chunk_elements_);
    for (std::size_t p = chunk.first_piece; p < chunk.first_piece + chunk.piece_count; ++p) {
      unsigned char* target = out + pieces[p].out_at * element_size_;
      const auto first = static_cast<std::size_t>(pieces[p].from - chunk_first);
      const auto last = static_cast<std::size_t>(pieces[p].to - chunk_first);
      if (!unshuffle) {
        std::memcpy(target, inflated + first * element_size_, (last - first) * element_size_);
        continue;
      }
      // Shuffled: byte b of element e sits at b · E + e.
      for (std::size_t e = first; e < last; ++e)
        for (std::size_t b = 0; b < element_size_; ++b)
          target[(e - first) * element_size_ + b] = inflated[b * elements + e];
    }
  };
  // libdeflate is host code: the chunks go to the host threads even in a device build.
  // Without Kokkos (a tool that reads before initialising it) they go in order.
  if (!Kokkos::is_initialized()) {
    for (std::int64_t c = 0; c < count; ++c) one_chunk(c);
    return;
  }
  Kokkos::parallel_for(
      "kotml::io::inflate_chunks",
      Kokkos::RangePolicy<HostExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<std::int64_t>>(0, count),
      one_chunk);
  HostExecSpace().fence();
}

}  // namespace kotml::io::h5::detail
