#pragma once
// Outputs appear whole or not at all, and never over an input.
//
// A writer writes to a temporary beside the target and renames it onto the
// target, which is atomic within a file system: a writer that fails half way
// leaves the old file (if any) untouched. The temporary is named
//   <name>.tmp.<host>.<pid>
// (the name part shortened so that the whole stays within NAME_MAX), so that a
// later writer of the same target can tell its own host's dead writers' leftovers
// (removed) from another node's live writer on a shared file system (kept).
// Live temporaries are also listed where a SIGTERM/SIGINT/SIGHUP handler can
// reach them (install_temporary_cleanup): a terminated run removes its own.

#include <string>
#include <vector>

namespace kotml {

class AtomicFile {
 public:
  /// Throws Error if the target's directory does not exist. Removes temporaries
  /// of the same target left by dead processes of this host.
  explicit AtomicFile(std::string target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Where to write. Lives in the target's directory, so rename stays atomic.
  const std::string& temporary_path() const { return temporary_; }
  const std::string& target_path() const { return target_; }

  /// Renames the temporary onto the target. Throws Error (naming the target) if
  /// that fails.
  void commit();

 private:
  std::string target_;
  std::string temporary_;
  int registry_slot_ = -1;
  bool committed_ = false;
};

/// The temporary path a writer of target in process pid on host uses.
std::string temporary_path_for(const std::string& target, const std::string& host, long pid);

/// SIGTERM, SIGINT and SIGHUP remove every live AtomicFile temporary of this
/// process, then end it as the signal would have. Call once, early in main.
void install_temporary_cleanup();

/// Writes text to path atomically.
void write_text_atomically(const std::string& path, const std::string& text);

/// Before any work: an output path must not name one of the inputs (the same
/// file by device and inode, so ./a/../in.h5, symbolic and hard links count),
/// must be a regular file or not exist yet (no directory, device or FIFO), and
/// its directory must exist and be writable. Throws Error::option(option, ...)
/// otherwise. With parent_created_later, a missing directory is accepted if the
/// nearest existing ancestor is a writable directory (outputs inside an --out
/// folder that the command creates).
void check_output_path(const std::string& output, const std::vector<std::string>& inputs, const std::string& option,
                       bool parent_created_later = false);

/// Before any work: an output folder must be a directory, or not exist yet with
/// its nearest existing ancestor a writable directory. Throws Error::option.
void check_output_directory(const std::string& dir, const std::string& option);

/// Creates a directory and its parents if missing; Error naming it if that fails.
void make_directories(const std::string& path);

}  // namespace kotml
