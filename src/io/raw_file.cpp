#include "kotml/io/raw_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "kotml/core/error.hpp"

namespace kotml::io {

std::optional<RawFileWriter> RawFileWriter::open_existing(const std::string& on_disk, const std::string& shown) {
  int fd;
  do {
    fd = ::open(on_disk.c_str(), O_WRONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return std::nullopt;
  return RawFileWriter(fd, shown);
}

RawFileWriter::RawFileWriter(RawFileWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), shown_(std::move(other.shown_)) {}

RawFileWriter& RawFileWriter::operator=(RawFileWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    shown_ = std::move(other.shown_);
  }
  return *this;
}

RawFileWriter::~RawFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void RawFileWriter::write_at(std::int64_t offset, const void* bytes, std::size_t size, const std::string& what) {
  internal_check(fd_ >= 0, "RawFileWriter::write_at on a closed file");
  const char* next = static_cast<const char*>(bytes);
  while (size > 0) {
    // Linux moves at most about 2 GiB per call.
    const std::size_t piece = std::min<std::size_t>(size, std::size_t(1) << 30);
    const ssize_t written = ::pwrite(fd_, next, piece, static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0)
      throw Error(shown_, what, std::string("cannot write: ") + (written < 0 ? std::strerror(errno) : "no progress"));
    next += written;
    offset += written;
    size -= static_cast<std::size_t>(written);
  }
}

void RawFileWriter::close(const std::string& what) {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR)
    throw Error(shown_, what, std::string("cannot finish writing: ") + std::strerror(errno));
}

}  // namespace kotml::io
