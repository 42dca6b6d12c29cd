#pragma once
// Bytes written in place into a file that already exists, by any number of
// processes at once (on one node, or on the nodes of a shared parallel file
// system), each to byte ranges of its own: how every rank puts its rows into a
// dataset of one HDF5 file that rank 0 created and preallocated
// (h5::File::create_preallocated_dataset), with no gather through one rank and
// no parallel HDF5.
//
// The file is opened write-only, never created or truncated, so a rank that
// cannot reach it (a node-local path on another node) finds out at open and
// the caller falls back to writing through rank 0.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace kotml::io {

class RawFileWriter {
 public:
  /// Opens `on_disk` for writing in place; nullopt when it does not exist here
  /// or cannot be written. `shown` names the file in errors (the output the
  /// user asked for, where on_disk is its temporary).
  static std::optional<RawFileWriter> open_existing(const std::string& on_disk, const std::string& shown);

  RawFileWriter(RawFileWriter&& other) noexcept;
  RawFileWriter& operator=(RawFileWriter&& other) noexcept;
  RawFileWriter(const RawFileWriter&) = delete;
  RawFileWriter& operator=(const RawFileWriter&) = delete;
  ~RawFileWriter();

  /// Writes `size` bytes at byte `offset`, all of them (short writes and
  /// interruptions are resumed). Throws Error naming the file and `what` (the
  /// dataset and rows, say) on failure, e.g. a full disk.
  void write_at(std::int64_t offset, const void* bytes, std::size_t size, const std::string& what);

  /// Closes the file, reporting a failure (a network file system may report a
  /// failed write only here). The destructor closes without reporting.
  void close(const std::string& what);

 private:
  RawFileWriter(int fd, std::string shown) : fd_(fd), shown_(std::move(shown)) {}
  int fd_ = -1;
  std::string shown_;
};

}  // namespace kotml::io
