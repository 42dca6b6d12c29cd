#include "kotml/core/log.hpp"

#include <iostream>
#include <streambuf>

#include "kotml/core/progress.hpp"

namespace kotml::log {
namespace {

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

NullBuffer null_buffer;
std::ostream null_stream(&null_buffer);
int my_rank = 0;
bool verbose_on = false;

}  // namespace

void set_rank(int rank) { my_rank = rank; }
bool is_root() { return my_rank == 0; }
std::ostream& out() { return my_rank == 0 ? std::cout : null_stream; }
std::ostream& err() { return my_rank == 0 ? std::cerr : null_stream; }

void warn(const std::string& text) {
  if (my_rank != 0) return;
  clear_progress_line();
  std::cerr << "kotml: warning: " << text << std::endl;
}

void note(const std::string& text) {
  if (my_rank != 0 || progress_mode() == ProgressMode::quiet) return;
  clear_progress_line();
  std::cerr << "kotml: note: " << text << std::endl;
}

void set_verbose(bool verbose) { verbose_on = verbose; }
bool verbose() { return verbose_on; }
void info(const std::string& text) {
  if (!verbose_on || my_rank != 0) return;
  clear_progress_line();
  std::cerr << "kotml: " << text << std::endl;
}

}  // namespace kotml::log
