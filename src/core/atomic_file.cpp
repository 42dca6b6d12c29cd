#include "kotml/core/atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kotml/core/error.hpp"

namespace kotml {
namespace {

namespace fs = std::filesystem;

// Live temporaries, reachable from a signal handler: fixed storage, and a slot
// state that is only changed with atomics (free → claimed → live → free).
constexpr int registry_slots = 64;
constexpr int slot_free = 0, slot_claimed = 1, slot_live = 2;
std::atomic<int> slot_state[registry_slots];
char slot_path[registry_slots][PATH_MAX];

int register_temporary(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < registry_slots; ++i) {
    int expected = slot_free;
    if (slot_state[i].compare_exchange_strong(expected, slot_claimed)) {
      std::memcpy(slot_path[i], path.c_str(), path.size() + 1);
      slot_state[i].store(slot_live);
      return i;
    }
  }
  return -1;  // more than 64 open writers: this one is not removed on a signal
}

void release_temporary(int slot) {
  if (slot >= 0) slot_state[slot].store(slot_free);
}

extern "C" void remove_temporaries_and_reraise(int signal_number) {
  for (int i = 0; i < registry_slots; ++i)
    if (slot_state[i].load() == slot_live) ::unlink(slot_path[i]);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "host";
  std::string host;
  for (const char* c = name; *c && host.size() < 64; ++c)
    host += (std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '_') ? *c : '_';
  return host.empty() ? "host" : host;
}

bool process_is_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

/// Temporaries of target that dead processes of this host left behind.
void remove_stale_temporaries(const std::string& target, const std::string& host) {
  const fs::path target_path(target);
  const fs::path dir = target_path.has_parent_path() ? target_path.parent_path() : fs::path(".");
  const std::string marker = ".tmp." + host + ".";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto at = name.rfind(marker);
    if (at == std::string::npos) continue;
    const std::string digits = name.substr(at + marker.size());
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    if (pid == static_cast<long>(::getpid()) || !process_is_gone(pid)) continue;
    if (fs::path(temporary_path_for(target, host, pid)).filename().string() != name) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

/// The nearest existing ancestor of path (path itself if it exists).
fs::path nearest_existing(fs::path path) {
  std::error_code ec;
  path = fs::absolute(path, ec);
  while (!path.empty() && !fs::exists(path, ec)) {
    if (path == path.parent_path()) break;
    path = path.parent_path();
  }
  return path;
}

void require_writable_directory(const fs::path& dir, const std::string& option, const std::string& what) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error::option(option, what + ": " + dir.string() + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error::option(option, what + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
}

}  // namespace

std::string temporary_path_for(const std::string& target, const std::string& host, long pid) {
  const fs::path path(target);
  const std::string suffix = ".tmp." + host + "." + std::to_string(pid);
  std::string name = path.filename().string();
  const std::size_t name_max = NAME_MAX;
  if (name.size() + suffix.size() > name_max) name.resize(name_max > suffix.size() ? name_max - suffix.size() : 0);
  return (path.parent_path() / (name + suffix)).string();
}

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)) {
  const auto parent = fs::path(target_).parent_path();
  if (!parent.empty() && !fs::is_directory(parent))
    throw Error(target_, "", "cannot write: directory " + parent.string() + " does not exist");
  const std::string host = this_host();
  remove_stale_temporaries(target_, host);
  temporary_ = temporary_path_for(target_, host, static_cast<long>(::getpid()));
  registry_slot_ = register_temporary(temporary_);
}

AtomicFile::~AtomicFile() {
  if (!committed_) std::remove(temporary_.c_str());
  release_temporary(registry_slot_);
}

void AtomicFile::commit() {
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0)
    throw Error(target_, "", std::string("cannot move the finished output into place: ") + std::strerror(errno));
  committed_ = true;
  release_temporary(registry_slot_);
  registry_slot_ = -1;
}

void install_temporary_cleanup() {
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP}) std::signal(signal_number, remove_temporaries_and_reraise);
}

void write_text_atomically(const std::string& path, const std::string& text) {
  AtomicFile file(path);
  {
    std::ofstream out(file.temporary_path(), std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path, "", "cannot open for writing: " + std::string(std::strerror(errno)));
    out << text;
    out.flush();
    if (!out) throw Error(path, "", "write failed: " + std::string(std::strerror(errno)));
  }
  file.commit();
}

void check_output_path(const std::string& output, const std::vector<std::string>& inputs, const std::string& option,
                       bool parent_created_later) {
  if (output.empty()) throw Error::option(option, "needs a file name");
  const fs::path path(output);
  if (path.filename().empty() || path.filename() == "." || path.filename() == "..")
    throw Error::option(option, output + " names a directory, not a file");
  struct stat out {};
  if (::stat(output.c_str(), &out) == 0) {
    if (!S_ISREG(out.st_mode))
      throw Error::option(option, output + " exists and is not a regular file (a directory, device or FIFO)");
    for (const auto& input : inputs) {
      struct stat in {};
      if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
        throw Error::option(option, output + " is the input " + input + "; kotml never writes over its inputs");
    }
  }
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::exists(parent, ec))
    require_writable_directory(parent, option, output);
  else if (parent_created_later)
    require_writable_directory(nearest_existing(parent), option, output);
  else
    throw Error::option(option, output + ": directory " + parent.string() + " does not exist");
}

void check_output_directory(const std::string& dir, const std::string& option) {
  if (dir.empty()) throw Error::option(option, "needs a folder name");
  std::error_code ec;
  if (fs::exists(dir, ec))
    require_writable_directory(dir, option, "output folder");
  else
    require_writable_directory(nearest_existing(dir), option, "output folder " + dir);
}

void make_directories(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path)) throw Error(path, "", "cannot create directory: " + ec.message());
}

}  // namespace kotml
