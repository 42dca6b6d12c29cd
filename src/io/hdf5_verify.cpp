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

#include <fcntl.h>
#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

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

struct Identity {
  long long size = 0, mtime_ns = 0;
  bool operator==(const Identity& o) const { return size == o.size && mtime_ns == o.mtime_ns; }
};

}  // namespace

void verify_readable(const std::string& path) {
  if (const char* flag = std::getenv("KOTML_H5_VERIFY"); flag && std::string(flag) == "0") return;
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !has_hdf5_signature(path)) return;  // open reports it
  const Identity identity{static_cast<long long>(info.st_size),
                          static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL + info.st_mtim.tv_nsec};
  static std::mutex mutex;
  static std::map<std::string, Identity> verified;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = verified.find(path); it != verified.end() && it->second == identity) return;

  // Where no child process can be made (process limits, sandboxes), the walk
  // is skipped: it is a safety net, and the reads themselves still check.
  int fds[2];
  if (::pipe(fds) != 0) return;
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(path, fds[1]);
  }
  ::close(fds[1]);

  const int limit_ms = static_cast<int>(inactivity_limit_seconds() * 1000);
  std::string pending, last_element = "/";
  bool finished = false, stalled = false;
  char buffer[4096];
  while (true) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, limit_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {
      stalled = true;
      break;
    }
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
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
  ::close(fds[0]);
  if (stalled) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (stalled)
    throw Error(path, last_element,
                "the file is damaged: the HDF5 library stopped making progress reading this "
                "element (no progress for " + std::to_string(limit_ms / 1000) + " s)");
  if (WIFSIGNALED(status))
    throw Error(path, last_element,
                "the file is damaged: the HDF5 library crashed (" + signal_name(WTERMSIG(status)) +
                    ") reading this element");
  if (!finished || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(path, last_element, "the file is damaged: verifying it failed at this element");
  verified[path] = identity;
}

}  // namespace kotml::io::h5
