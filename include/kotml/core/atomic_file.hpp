#pragma once
// Outputs appear whole or not at all: write to "<name>.tmp.<pid>" beside the
// target, then rename, which is atomic within a file system. A writer that fails
// half way leaves the old file (if any) untouched and removes its temporary.

#include <string>

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

/// Creates a directory and its parents if missing; Error naming it if that fails.
void make_directories(const std::string& path);

}  // namespace kotml
