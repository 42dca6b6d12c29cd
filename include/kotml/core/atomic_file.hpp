#pragma once
// Outputs appear whole or not at all: write to "<name>.tmp.<pid>" beside the
// target, then rename, which is atomic within a file system. A writer that fails
// half way leaves the old file (if any) untouched and removes its temporary.

#include <string>
#include <vector>

namespace kotml {

class AtomicFile {
 public:
  explicit AtomicFile(std::string target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Where to write. Lives in the target's directory, so rename stays atomic.
  const std::string& temporary_path() const { return temporary_; }
  const std::string& target_path() const { return target_; }

  /// Renames the temporary onto the target. Throws Error if that fails.
  void commit();

 private:
  std::string target_;
  std::string temporary_;
  bool committed_ = false;
};

/// Writes text to path atomically.
void write_text_atomically(const std::string& path, const std::string& text);

/// Before any work: an output path must not name one of the inputs (the same
/// file by device and inode, so ./a/../in.h5, symbolic and hard links count) and
/// must be a regular file or not exist yet (no directory, device or FIFO).
/// Throws Error::option(option, ...) otherwise.
void check_output_path(const std::string& output, const std::vector<std::string>& inputs, const std::string& option);

/// Creates a directory and its parents if missing; Error naming it if that fails.
void make_directories(const std::string& path);

}  // namespace kotml
