// The verification walk behind h5::verify_readable.
//
// HDF5 1.10 trusts the sizes and addresses it finds in a file: sweeping 16-byte
// overwrites across small .h5ad files, about one in forty positions made the
// library read out of bounds (SIGSEGV), abort, or loop forever inside its
// B-tree, heap or symbol-table code. Such damage cannot be caught in-process, so
// a forked child touches everything the readers will touch (links, object
// headers, attributes, string heaps, chunk indexes) and reports each element
// before it touches it. If the child dies or stops making progress, the parent
// names the element and throws; if the child survives, the parent's own reads
// meet only failures that HDF5 reports normally.
//
// The child never calls MPI, Kokkos or exit handlers; it only reads the file and
// writes progress lines to a pipe, then _exits.
//
// kotml's main begins the walks of the files named on its command line before
// MPI_Init (start_verification), so that they overlap the start-up; the first
// open of such a file then waits for its walk. The verdict belongs to the bytes
// walked: a file whose size or modification time changed since is walked again.

#include <fcntl.h>
#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::io::h5 {
namespace {

constexpr int max_depth = 64;

/// Writes one progress line; the pipe is the only channel to the parent.
void report(int fd, const std::string& element) {
  std::string line = element.empty() ? "/" : element;
  line += '\n';
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::_exit(3);  // the parent is gone; nothing left to do
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string join(const std::string& group, const std::string& name) {
  return group.empty() || group == "/" ? name : group + "/" + name;
}

/// Every attribute's value is read: string attributes live in the global heap,
/// references point to other objects, both are places a damaged file breaks.
void walk_attributes(const File& file, const std::string& object, int fd) {
  std::vector<std::string> names;
  try {
    names = file.attribute_names(object);
  } catch (const Error&) {
    return;
  }
  for (const auto& name : names) {
    report(fd, (object.empty() ? "/" : object) + "@" + name);
    try {
      const TypeInfo type = file.attribute_type(object, name);
      if (type.is_string)
        file.read_string_array_attribute(object, name);
      else if (type.is_integer || type.is_float || type.is_bool)
        file.read_numeric_attribute<double>(object, name);
      else if (type.dtype == "reference")
        file.read_reference_attribute(object, name);
    } catch (const Error&) {
      // Reported normally by HDF5: the reader that needs it will say so.
    }
  }
}

void walk_dataset(const File& file, const std::string& dataset, int fd) {
  try {
    const TypeInfo type = file.type(dataset);
    file.shape(dataset);
    if (type.is_string) file.read_strings(dataset);
  } catch (const Error&) {
  }
  // The chunk index (a B-tree) is walked by counting the chunks.
  const hid_t d = H5Dopen2(file.id(), dataset.c_str(), H5P_DEFAULT);
  if (d < 0) return;
  const hid_t dcpl = H5Dget_create_plist(d);
  if (dcpl >= 0) {
    if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
      report(fd, dataset + " (chunk index)");
      hsize_t chunks = 0;
      const hid_t space = H5Dget_space(d);
      if (space >= 0) {
        H5Dget_num_chunks(d, space, &chunks);
        H5Sclose(space);
      }
    }
    H5Pclose(dcpl);
  }
  H5Dclose(d);
  H5Eclear2(H5E_DEFAULT);
}

void walk_group(const File& file, const std::string& group, int depth, int fd) {
  if (depth > max_depth) return;
  walk_attributes(file, group, fd);
  std::vector<std::string> names;
  try {
    names = file.children(group);
  } catch (const Error&) {
    return;
  }
  for (const auto& name : names) {
    const std::string path = join(group, name);
    report(fd, path);
    H5L_info_t link;
    if (H5Lget_info(file.id(), path.c_str(), &link, H5P_DEFAULT) < 0) {
      H5Eclear2(H5E_DEFAULT);
      continue;
    }
    // Soft and external links are not followed: anndata writes none, and a
    // soft link may close a cycle.
    if (link.type != H5L_TYPE_HARD) continue;
    if (file.is_group(path)) {
      walk_group(file, path, depth + 1, fd);
    } else if (file.is_dataset(path)) {
      walk_attributes(file, path, fd);
      walk_dataset(file, path, fd);
    }
  }
}

[[noreturn]] void run_child(const std::string& path, int fd) {
  // Default signal dispositions: a crash must end the child, not run the
  // parent's handlers (MPI's backtrace printer among them).
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
  // What the C library says while dying (e.g. "munmap_chunk(): invalid
  // pointer") must not reach the user: the parent prints the one error line.
  ::setenv("LIBC_FATAL_STDERR_", "1", 1);  // glibc: fatal messages to stderr, not the tty
  const int null_fd = ::open("/dev/null", O_WRONLY);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    ::close(null_fd);
  }
  int status = 0;
  try {
    report(fd, "/");
    const File file = File::open_read_unverified(path);
    walk_group(file, "/", 0, fd);
    report(fd, "\x01ok");
  } catch (const Error&) {
    // Opening failed normally; the parent's open will report it.
    report(fd, "\x01ok");
  } catch (...) {
    status = 4;
  }
  ::_exit(status);
}

double inactivity_limit_seconds() {
  if (const char* text = std::getenv("KOTML_H5_VERIFY_TIMEOUT")) {
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != text && value > 0) return value;
  }
  return 60.0;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "signal " + std::to_string(sig);
  }
}

/// What makes a verified file the same file later: where it lives (device and
/// inode, so that "./x.h5ad" and "/data/x.h5ad" meet) and what it holds (size
/// and modification time).
struct Identity {
  long long device = 0, inode = 0, size = 0, mtime_ns = 0;
  bool same_file(const Identity& o) const { return device == o.device && inode == o.inode; }
  bool operator==(const Identity& o) const { return same_file(o) && size == o.size && mtime_ns == o.mtime_ns; }
};

/// The identity of an HDF5 file at path; none for anything else (the open
/// that follows reports a missing or non-HDF5 file).
std::optional<Identity> identity_of(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || !has_hdf5_signature(path)) return std::nullopt;
  return Identity{static_cast<long long>(info.st_dev), static_cast<long long>(info.st_ino),
                  static_cast<long long>(info.st_size),
                  static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL + info.st_mtim.tv_nsec};
}

bool verification_disabled() {
  const char* flag = std::getenv("KOTML_H5_VERIFY");
  return flag && std::string(flag) == "0";
}

/// A walk under way: its child and the read end of its progress pipe.
struct Walk {
  pid_t child = -1;
  int progress_fd = -1;
};

/// Forks the walking child. False where no child can be made (process limits,
/// sandboxes): the walk is a safety net, and the reads themselves still check.
bool start_walk(const std::string& path, Walk& walk) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(path, fds[1]);
  }
  ::close(fds[1]);
  walk = Walk{child, fds[0]};
  return true;
}

void stop_walk(const Walk& walk) {
  ::kill(walk.child, SIGKILL);
  ::close(walk.progress_fd);
  int status = 0;
  while (::waitpid(walk.child, &status, 0) < 0 && errno == EINTR) {
  }
}

/// Follows a walk's progress to its end and turns a crash, a stall or a failure
/// into an Error naming the last element the child reported.
void finish_walk(const std::string& path, const Walk& walk) {
  const int limit_ms = static_cast<int>(inactivity_limit_seconds() * 1000);
  std::string pending, last_element = "/";
  bool finished = false, stalled = false;
  char buffer[4096];
  while (true) {
    pollfd p{walk.progress_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, limit_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {
      stalled = true;
      break;
    }
    const ssize_t n = ::read(walk.progress_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed the pipe: it ended
    pending.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line == "\x01ok")
        finished = true;
      else
        last_element = line;
    }
  }
  ::close(walk.progress_fd);
  if (stalled) ::kill(walk.child, SIGKILL);
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(walk.child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (stalled)
    throw Error(path, last_element,
                "the file is damaged: the HDF5 library stopped making progress reading this "
                "element (no progress for " + std::to_string(limit_ms / 1000) + " s)");
  if (reaped == walk.child && WIFSIGNALED(status))
    throw Error(path, last_element,
                "the file is damaged: the HDF5 library crashed (" + signal_name(WTERMSIG(status)) +
                    ") reading this element");
  // The child's last line is its verdict; its exit status only confirms it
  // where this process could still reap it (a walk begun before MPI_Init is
  // this process's child, but an MPI library may reap children it did not make).
  if (!finished || (reaped == walk.child && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)))
    throw Error(path, last_element, "the file is damaged: verifying it failed at this element");
}

/// The verdicts and the walks under way, shared by every thread of the process.
struct Verifications {
  std::mutex mutex;
  std::map<std::string, Identity> verified;       // by path as given
  std::vector<std::pair<Identity, Walk>> pending;  // begun by start_verification
};

Verifications& verifications() {
  static Verifications v;
  return v;
}

constexpr std::size_t max_early_walks = 8;

}  // namespace

void verify_readable(const std::string& path) {
  if (verification_disabled()) return;
  const std::optional<Identity> identity = identity_of(path);
  if (!identity) return;  // open reports it
  Verifications& v = verifications();
  std::lock_guard<std::mutex> lock(v.mutex);
  if (auto it = v.verified.find(path); it != v.verified.end() && it->second == *identity) return;

  Walk walk;
  bool begun = false;
  for (auto it = v.pending.begin(); it != v.pending.end(); ++it) {
    const Identity& early = it->first;
    if (!early.same_file(*identity)) continue;
    // The file changed since its walk began: that verdict would be about other bytes.
    if (early == *identity) {
      walk = it->second;
      begun = true;
    } else {
      stop_walk(it->second);
    }
    v.pending.erase(it);
    break;
  }
  if (!begun && !start_walk(path, walk)) return;
  finish_walk(path, walk);
  v.verified[path] = *identity;
}

void start_verification(const std::vector<std::string>& candidates) {
  if (verification_disabled()) return;
  Verifications& v = verifications();
  std::lock_guard<std::mutex> lock(v.mutex);
  for (const std::string& candidate : candidates) {
    if (v.pending.size() >= max_early_walks) break;
    std::string path = candidate;
    if (path.rfind("--", 0) == 0) {
      const std::size_t equals = path.find('=');
      if (equals == std::string::npos) continue;
      path = path.substr(equals + 1);
    }
    if (path.empty() || path[0] == '-') continue;
    const std::optional<Identity> identity = identity_of(path);
    if (!identity) continue;
    const bool already = std::any_of(v.pending.begin(), v.pending.end(),
                                     [&](const auto& early) { return early.first.same_file(*identity); });
    Walk walk;
    if (!already && start_walk(path, walk)) v.pending.emplace_back(*identity, walk);
  }
}

void cancel_pending_verification() {
  Verifications& v = verifications();
  std::lock_guard<std::mutex> lock(v.mutex);
  for (const auto& [identity, walk] : v.pending) stop_walk(walk);
  v.pending.clear();
}

std::size_t pending_verifications() {
  Verifications& v = verifications();
  std::lock_guard<std::mutex> lock(v.mutex);
  return v.pending.size();
}

}  // namespace kotml::io::h5
