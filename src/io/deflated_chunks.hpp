#pragma once
// Reading gzip-compressed (deflate) chunked datasets with the rank's Kokkos host
// threads, for h5::File's whole, range and row-range reads.
//
// HDF5 1.10 decompresses a selection's chunks one after another on the calling
// thread. anndata and h5py write gzip'd matrices in chunks of a few thousand
// values, so reading a compressed X is mostly zlib's inflate, on one core. Here
// the raw chunks are fetched one after another through HDF5 (H5Dread_chunk:
// the library stays on one thread), then inflated side by side by libdeflate
// (2-4x zlib's inflate on such chunks, one thread to one thread), each chunk
// into its own part of the output. Every element comes from the same bytes as
// through H5Dread: the result does not depend on the thread count.
//
// Layout: the dataset is row-major with chunks that span every dimension but
// the first, so a range of rows (or of a 1-D dataset's elements) is a range of
// the flattened elements, and chunk c holds flattened elements
// [c·E, (c+1)·E), E = chunk rows × row length. Chunks past the extent are
// stored whole (HDF5 pads them), so every stored chunk inflates to E elements.
//
// Pipelines taken: deflate, or shuffle then deflate (h5py's shuffle=True); a
// chunk may carry a filter mask saying a filter was skipped for it (HDF5 stores
// a chunk uncompressed when deflate did not shrink it). Anything else (other
// filters, checksums, a file type that differs from the memory type given,
// chunks not stored, implausible chunk sizes) is left to HDF5 by returning
// false. h5::File gives the stored type where it differs from the one asked
// for, and converts after (number_conversion.hpp).

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kotml::io::h5::detail {

class DeflatedChunks {
 public:
  /// Flattened elements [begin, end) of the dataset.
  using Range = std::pair<std::int64_t, std::int64_t>;

  /// The layout of `dataset`, of shape `dims`, when it is one this reader takes
  /// (see above) and its stored type equals `memory_type`; nullopt otherwise.
  static std::optional<DeflatedChunks> of(hid_t dataset, const std::vector<std::int64_t>& dims, hid_t memory_type);

  /// The ranges, one after another, into `out` (their total length in elements
  /// of the memory type). A chunk that several ranges touch is inflated once.
  /// false, with nothing written, where a chunk they need is not stored or its
  /// stored size is implausible: HDF5 then reads them (fill values, or its own
  /// error). Error when a chunk does not inflate to its size.
  bool read(const std::vector<Range>& ranges, void* out, const std::string& path, const std::string& element) const;

 private:
  struct Piece;
  struct Chunk;
  void inflate_batch(const Chunk* chunks, std::int64_t count, const Piece* pieces, const unsigned char* packed,
                     unsigned char* staged, unsigned char* out, int* status) const;

  hid_t dataset_ = -1;
  int rank_ = 0;
  std::int64_t chunk_rows_ = 0, chunk_elements_ = 0, extent_elements_ = 0;
  std::size_t element_size_ = 0;
  int deflate_position_ = -1, shuffle_position_ = -1;  // in the filter pipeline; -1: absent
};

}  // namespace kotml::io::h5::detail
