// The progress line (kotml/core/progress.hpp): its text, its ETA, and what it
// writes in each mode. stderr is captured by swapping std::cerr's buffer.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <string>
#include <thread>

#include "kotml/core/log.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::log {
namespace {

/// Captures what std::cerr receives while it lives, and restores the mode.
class CapturedStderr {
 public:
  explicit CapturedStderr(ProgressMode mode) : old_(std::cerr.rdbuf(text_.rdbuf())), old_mode_(progress_mode()) {
    set_progress_mode(mode);
  }
  ~CapturedStderr() {
    std::cerr.rdbuf(old_);
    set_progress_mode(old_mode_);
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
  ProgressMode old_mode_;
};

TEST(Progress, ClockText) {
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(7.4), "0:07");
  EXPECT_EQ(clock_text(723), "12:03");
  EXPECT_EQ(clock_text(3723), "1:02:03");
  EXPECT_EQ(clock_text(-1), "?");
  EXPECT_EQ(clock_text(std::nan("")), "?");
  EXPECT_EQ(clock_text(INFINITY), "?");
}

TEST(Progress, LineHasCountRateEtaAndDetail) {
  // 30 of 120 in 10 s: 3 it/s, 90 left: 30 s.
  EXPECT_EQ(Progress::line_text("sinkhorn", 0, 30, 120, "it", 10.0, "error 1.00e-02", Progress::eta_from_rate),
            "kotml: sinkhorn 30/120 it, error 1.00e-02, 3.0 it/s, ETA 0:30, 0:10 elapsed");
  // A restart that began at 20: the rate counts the 10 done in this run.
  EXPECT_EQ(Progress::line_text("epoch", 20, 30, 120, "epochs", 10.0, "", Progress::eta_from_rate),
            "kotml: epoch 30/120 epochs, 1.0 epochs/s, ETA 1:30, 0:10 elapsed");
  // No ETA asked for, and none without a total.
  EXPECT_EQ(Progress::line_text("sinkhorn", 0, 30, 120, "it", 10.0, "", Progress::eta_unknown),
            "kotml: sinkhorn 30/120 it, 3.0 it/s, 0:10 elapsed");
  EXPECT_EQ(Progress::line_text("gw", 0, 5, 0, "it", 10.0, "", Progress::eta_from_rate),
            "kotml: gw 5 it, 0.5 it/s, 0:10 elapsed");
  // An ETA given by the loop wins over the rate's.
  EXPECT_EQ(Progress::line_text("sinkhorn", 0, 30, 120, "it", 10.0, "", 4.0),
            "kotml: sinkhorn 30/120 it, 3.0 it/s, ETA 0:04, 0:10 elapsed");
  // Nothing done yet: no rate.
  EXPECT_EQ(Progress::line_text("apsp", 0, 0, 50, "sources", 0.0, "", Progress::eta_from_rate),
            "kotml: apsp 0/50 sources, 0:00 elapsed");
}

TEST(Progress, NumbersInMessagesKeepSmallValues) {
  EXPECT_EQ(number_text(0.561583), "0.561583");
  EXPECT_EQ(number_text(0.05), "0.05");
  EXPECT_EQ(number_text(1e-9), "1e-09");
  EXPECT_EQ(number_text(-3.25e-8), "-3.25e-08");
  EXPECT_EQ(number_text(2000), "2000");
  EXPECT_EQ(number_text(0), "0");
  EXPECT_EQ(number_text(INFINITY), "inf");
  EXPECT_NE(number_text(1e-9), number_text(0));
}

TEST(Progress, IterationsToThresholdFollowTheGeometricDecay) {
  // 1e-1 -> 1e-2 over 10 iterations: a decade per 10, so 1e-2 -> 1e-5 takes 30.
  EXPECT_NEAR(iterations_to_threshold(1e-1, 1e-2, 10, 1e-5), 30.0, 1e-9);
  EXPECT_EQ(iterations_to_threshold(1e-1, 1e-6, 10, 1e-5), 0.0);
  // An error that did not fall gives no estimate.
  EXPECT_LT(iterations_to_threshold(1e-2, 1e-2, 10, 1e-5), 0.0);
  EXPECT_LT(iterations_to_threshold(1e-2, 2e-2, 10, 1e-5), 0.0);
  EXPECT_LT(iterations_to_threshold(INFINITY, 1e-2, 10, 1e-5), 0.0);
  EXPECT_LT(iterations_to_threshold(1e-1, 0.0, 10, 1e-5), 0.0);
}

TEST(Progress, QuietWritesNothing) {
  CapturedStderr captured(ProgressMode::quiet);
  {
    Progress progress("sinkhorn", 3, "it");
    for (int i = 0; i <= 3; ++i) progress.update(i, "error 1");
  }
  EXPECT_EQ(captured.text(), "");
}

TEST(Progress, PlainModeIsSilentForShortLoops) {
  // std::cerr is not a terminal here (it is a string stream's buffer, and the
  // test's stderr is a pipe or a file under ctest), so automatic means plain
  // lines, the first after plain_interval seconds.
  CapturedStderr captured(ProgressMode::automatic);
  {
    Progress progress("apsp", 10, "sources");
    for (int i = 0; i <= 10; ++i) progress.update(i);
  }
  EXPECT_EQ(captured.text(), "");
}

TEST(Progress, ForcedDrawsOneLineInPlaceAndErasesIt) {
  CapturedStderr captured(ProgressMode::forced);
  {
    Progress progress("sinkhorn", 4, "it");
    progress.update(1);  // within the first redraw interval: not drawn
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    progress.update(2, "error 5.00e-01");
    progress.update(3);  // within the redraw interval again: not drawn
    progress.update(4);  // the last step is always drawn
  }
  const std::string text = captured.text();
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_NE(text.find("\r\033[Kkotml: sinkhorn 2/4 it, "), std::string::npos) << text;
  EXPECT_NE(text.find("error 5.00e-01"), std::string::npos) << text;
  EXPECT_EQ(text.find("sinkhorn 1/4"), std::string::npos) << text;
  EXPECT_EQ(text.find("sinkhorn 3/4"), std::string::npos) << text;
  EXPECT_NE(text.find("sinkhorn 4/4"), std::string::npos) << text;
  // Ends erased: the last thing written is the erase sequence.
  const std::string erase = "\r\033[K";
  ASSERT_GE(text.size(), erase.size());
  EXPECT_EQ(text.substr(text.size() - erase.size()), erase);
}

TEST(Progress, LogLinesEraseADrawnLineFirst) {
  CapturedStderr captured(ProgressMode::forced);
  Progress progress("gw", 0, "it");
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  progress.update(1);
  warn("something");
  const std::string text = captured.text();
  EXPECT_NE(text.find("\r\033[Kkotml: gw 1 it, "), std::string::npos) << text;
  const std::string tail = "elapsed\r\033[Kkotml: warning: something\n";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << text;
  progress.finish();
  // Already erased by the warning: finish writes nothing more.
  EXPECT_EQ(captured.text(), text);
}

TEST(Progress, ContextPrefixesTheLine) {
  CapturedStderr captured(ProgressMode::forced);
  {
    const ProgressContext context("split 2/5");
    Progress progress("epoch", 3, "epochs");
    progress.update(3);
  }
  EXPECT_NE(captured.text().find("kotml: split 2/5: epoch 3/3 epochs"), std::string::npos) << captured.text();
  {
    Progress progress("epoch", 3, "epochs");
    progress.update(3);
  }
  EXPECT_NE(captured.text().find("kotml: epoch 3/3 epochs"), std::string::npos) << captured.text();
}

}  // namespace
}  // namespace kotml::log
