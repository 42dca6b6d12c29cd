#include "kotml/core/atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kotml/core/error.hpp"

namespace kotml {

AtomicFile::AtomicFile(std::string target)
    : target_(std::move(target)),
      temporary_(target_ + ".tmp." + std::to_string(static_cast<long>(::getpid()))) {
  const auto parent = std::filesystem::path(target_).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw Error(target_, "", "cannot write: directory " + parent.string() + " does not exist");
}

AtomicFile::~AtomicFile() {
  if (!committed_) std::remove(temporary_.c_str());
}

void AtomicFile::commit() {
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0)
    throw Error(target_, "", std::string("cannot move the finished output into place: ") +
                                 std::strerror(errno));
  committed_ = true;
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

void check_output_path(const std::string& output, const std::vector<std::string>& inputs, const std::string& option) {
  if (output.empty()) throw Error::option(option, "needs a file name");
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // does not exist yet
  if (!S_ISREG(out.st_mode))
    throw Error::option(option, output + " exists and is not a regular file (a directory, device or FIFO)");
  for (const auto& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw Error::option(option, output + " is the input " + input + "; kotml never writes over its inputs");
  }
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path))
    throw Error(path, "", "cannot create directory: " + ec.message());
}

}  // namespace kotml
