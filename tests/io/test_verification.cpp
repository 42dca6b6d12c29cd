// The verification walks kotml's main begins before MPI_Init
// (h5::start_verification) against the ones verify_readable begins itself: the
// same verdicts, never a verdict about bytes that have changed since, and no
// child process left behind.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "io_test_support.hpp"
#include "kotml/core/error.hpp"
#include "kotml/io/hdf5.hpp"
#include "support/cli_runner.hpp"

namespace h5 = kotml::io::h5;
namespace t = kotml::io::test;
using kotml::test::TempDir;

namespace {

// Positions in dense_f32.h5ad where the HDF5 library itself crashes or never
// returns (found by the sweep of test_bad_input.cpp; test_info_cli.cpp checks
// that they still do).
constexpr std::int64_t crash_offset = 30720, hang_offset = 7168;

std::string copy_of_fixture(const TempDir& dir, const std::string& name, std::int64_t damaged_at = -1) {
  const std::string path = dir.file(name);
  t::copy_file(t::fixture("dense_f32.h5ad"), path);
  if (damaged_at >= 0) t::overwrite_bytes(path, damaged_at, 16);
  return path;
}

/// verify_readable's error message, or "" when the walk passed.
std::string verdict(const std::string& path) {
  try {
    h5::verify_readable(path);
  } catch (const kotml::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<int> children() {
  std::vector<int> pids = kotml::test::children_of(static_cast<int>(::getpid()));
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace

TEST(EarlyVerification, AWalkBegunEarlyGivesTheVerdictOfOneBegunLate) {
  TempDir dir;
  const std::string crash = copy_of_fixture(dir, "crash.h5ad", crash_offset);
  const std::string good = copy_of_fixture(dir, "good.h5ad");
  // Options, numbers and missing files are passed over; "--option=path" is a path.
  h5::start_verification({"train", "--input=" + crash, good, "--epochs", "3", dir.file("absent.h5ad"), "-o"});
  ASSERT_EQ(h5::pending_verifications(), 2u);
  const std::string early = verdict(crash);
  EXPECT_EQ(h5::pending_verifications(), 1u);
  EXPECT_NE(early.find("the file is damaged"), std::string::npos) << early;
  // A damaged file is never remembered, so this is a walk begun here.
  EXPECT_EQ(verdict(crash), early);
  EXPECT_EQ(verdict(good), "");
  EXPECT_EQ(h5::pending_verifications(), 0u);
}

TEST(EarlyVerification, AFileChangedAfterItsWalkBeganIsWalkedAgain) {
  TempDir dir;
  const std::string path = copy_of_fixture(dir, "changing.h5ad");
  h5::start_verification({path});
  ASSERT_EQ(h5::pending_verifications(), 1u);
  // Long enough for the walk of the intact bytes to pass, so that taking its
  // verdict would let the damage below through.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  t::overwrite_bytes(path, crash_offset, 16);
  const std::string late = verdict(path);
  EXPECT_NE(late.find("the file is damaged"), std::string::npos) << "the early walk's verdict was taken: " << late;
  EXPECT_EQ(h5::pending_verifications(), 0u);
}

TEST(EarlyVerification, OneFileUnderTwoNamesIsWalkedOnce) {
  TempDir dir;
  const std::string path = copy_of_fixture(dir, "named_twice.h5ad");
  const std::string relative = std::filesystem::relative(path).string();
  ASSERT_NE(relative, path);
  h5::start_verification({relative, path});
  EXPECT_EQ(h5::pending_verifications(), 1u);
  EXPECT_EQ(verdict(path), "");
  EXPECT_EQ(h5::pending_verifications(), 0u);
}

TEST(EarlyVerification, CancelledWalksLeaveNoChildBehind) {
  TempDir dir;
  const std::string hang = copy_of_fixture(dir, "hang.h5ad", hang_offset);
  const std::string good = copy_of_fixture(dir, "good.h5ad");
  const std::vector<int> before = children();
  h5::start_verification({hang, good});
  ASSERT_EQ(h5::pending_verifications(), 2u);
  EXPECT_GT(children().size(), before.size());
  h5::cancel_pending_verification();
  EXPECT_EQ(h5::pending_verifications(), 0u);
  EXPECT_EQ(children(), before);
}

TEST(EarlyVerification, OffWithTheWalk) {
  TempDir dir;
  const std::string good = copy_of_fixture(dir, "good.h5ad");
  ::setenv("KOTML_H5_VERIFY", "0", 1);
  h5::start_verification({good});
  ::unsetenv("KOTML_H5_VERIFY");
  EXPECT_EQ(h5::pending_verifications(), 0u);
}
