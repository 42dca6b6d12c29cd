#include "kotml/core/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <utility>

#include "kotml/core/log.hpp"

namespace kotml::log {
namespace {

ProgressMode mode = ProgressMode::automatic;
bool line_on_screen = false;  // a drawn line waits to be erased or redrawn
std::string context;           // the outer loop's text, or empty

constexpr double redraw_interval = 0.1;

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

/// The terminal's width, so that a line never wraps (a wrapped line cannot be
/// redrawn with a carriage return); 80 when it cannot be asked.
std::size_t terminal_columns() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 10) return size.ws_col;
  return 80;
}

std::string rate_text(double per_second) {
  char text[32];
  if (per_second >= 100)
    std::snprintf(text, sizeof text, "%.0f", per_second);
  else if (per_second >= 1)
    std::snprintf(text, sizeof text, "%.1f", per_second);
  else
    std::snprintf(text, sizeof text, "%.3g", per_second);
  return text;
}

}  // namespace

void set_progress_mode(ProgressMode m) { mode = m; }
ProgressMode progress_mode() { return mode; }

std::string clock_text(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || seconds > 1e8) return "?";
  const auto total = static_cast<long long>(std::llround(seconds));
  const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
  char text[32];
  if (h > 0)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", h, m, s);
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", m, s);
  return text;
}

std::string scientific_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", value);
  return text;
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

double iterations_to_threshold(double previous, double current, double step, double threshold) {
  if (!(current > 0 && previous > current && step > 0 && threshold > 0) || !std::isfinite(previous)) return -1.0;
  if (current <= threshold) return 0.0;
  return step * std::log(current / threshold) / std::log(previous / current);
}

ProgressContext::ProgressContext(std::string text) : previous_(std::move(context)) { context = std::move(text); }
ProgressContext::~ProgressContext() { context = std::move(previous_); }

void clear_progress_line() {
  if (!line_on_screen) return;
  std::cerr << "\r\033[K" << std::flush;
  line_on_screen = false;
}

Progress::Progress(std::string what, std::int64_t total, std::string unit, std::int64_t first)
    : what_(std::move(what)),
      total_(total),
      unit_(std::move(unit)),
      first_(first),
      drawing_(is_root() && (mode == ProgressMode::forced || (mode == ProgressMode::automatic && stderr_is_terminal()))),
      plain_(is_root() && !drawing_ && mode == ProgressMode::automatic),
      start_(Clock::now()) {}

Progress::~Progress() { finish(); }

std::string Progress::full_what() const { return context.empty() ? what_ : context + ": " + what_; }

double Progress::elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

std::string Progress::line_text(const std::string& what, std::int64_t first, std::int64_t done,
                                std::int64_t total, const std::string& unit, double elapsed,
                                const std::string& detail, double eta_seconds) {
  std::ostringstream line;
  line << "kotml: " << what << " " << done;
  if (total > 0) line << "/" << total;
  line << " " << unit;
  if (!detail.empty()) line << ", " << detail;
  if (elapsed > 0 && done > first) {
    const double rate = static_cast<double>(done - first) / elapsed;
    line << ", " << rate_text(rate) << " " << unit << "/s";
    if (eta_seconds == eta_from_rate && total > 0) eta_seconds = static_cast<double>(total - done) / rate;
  }
  if (eta_seconds >= 0) line << ", ETA " << clock_text(eta_seconds);
  line << ", " << clock_text(elapsed) << " elapsed";
  return line.str();
}

void Progress::update(std::int64_t done, const std::string& detail, double eta_seconds) {
  if (finished_ || (!drawing_ && !plain_)) return;
  const double now = elapsed();
  if (drawing_) {
    if (now - last_written_ < redraw_interval && done != total_) return;
    std::string text = line_text(full_what(), first_, done, total_, unit_, now, detail, eta_seconds);
    const std::size_t width = terminal_columns() - 1;
    if (text.size() > width) text.resize(width);
    std::cerr << "\r\033[K" << text << std::flush;
    line_on_screen = true;
  } else {
    if (now - last_written_ < plain_interval) return;
    std::cerr << line_text(full_what(), first_, done, total_, unit_, now, detail, eta_seconds) << std::endl;
  }
  last_written_ = now;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawing_) clear_progress_line();
}

}  // namespace kotml::log
