// Faults a long training run meets on a cluster, caused for real:
//  * kill -9 at many moments of a checkpointing run leaves either a valid
//    checkpoint or none, and the run continued from what is left (or started
//    again) ends bit-identical to an uninterrupted one, with no temporaries
//    left behind;
//  * a rank killed in the middle of a 2-rank run ends the job on every rank
//    within seconds instead of leaving the other rank waiting in a collective.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/learn/checkpoint.hpp"
#include "support/cli_runner.hpp"

namespace kotml {
namespace {

using test::run_kotml;
using test::TempDir;

const std::string& toy_file() { return test::toy2d_cohort(); }

constexpr int epochs = 40;

std::vector<std::string> training(const std::string& out) {
  return {"train", toy_file(), "--n-cells", "all", "--out", out, "--n-comps", "2", "--epochs",
          std::to_string(epochs), "--stop-thr", "0", "--checkpoint-every", "1"};
}

std::vector<double> learned_metric(const std::string& out) {
  return io::h5::File::open_read(out + "/results.h5").read<double>("A");
}

std::vector<std::string> temporaries_in(const std::string& folder) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(entry.path().filename().string());
  return found;
}

TEST(Faults, KillNineAtManyMomentsLeavesACheckpointOrNoneAndRestartsBitIdentical) {
  TempDir straight;
  const auto started = std::chrono::steady_clock::now();
  const auto reference = run_kotml(training(straight.path()));
  const double run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const auto expected = learned_metric(straight.path());

  constexpr int kill_points = 12;
  int mid_run_checkpoints = 0;
  for (int point = 0; point < kill_points; ++point) {
    TempDir out;
    const double delay = run_seconds * (0.25 + 0.7 * point / (kill_points - 1));
    const int pid = test::start_kotml(training(out.path()), 0, out.file("stdout"), out.file("stderr"));
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    ::kill(pid, SIGKILL);
    const int killed = test::wait_for(pid, 30);
    ASSERT_NE(killed, -1) << "the killed run did not end";

    const std::string checkpoint = out.file("checkpoint.h5");
    std::vector<std::string> restart = training(out.path());
    if (std::filesystem::exists(checkpoint)) {
      learn::Checkpoint c;
      EXPECT_NO_THROW(c = learn::read_checkpoint(checkpoint)) << "kill at " << delay << " s";
      if (killed != 0 && c.epochs_done > 0 && c.epochs_done < epochs) ++mid_run_checkpoints;
      restart.push_back("--restart");
    }
    const auto resumed = run_kotml(restart);
    ASSERT_EQ(resumed.exit_code, 0) << "kill at " << delay << " s: " << resumed.err;
    EXPECT_EQ(learned_metric(out.path()), expected) << "kill at " << delay << " s";
    EXPECT_TRUE(temporaries_in(out.path()).empty())
        << "kill at " << delay << " s left " << temporaries_in(out.path()).front();
  }
  // The kills must have hit the training itself, not only its start or end.
  EXPECT_GE(mid_run_checkpoints, 1) << "no kill landed between two checkpoints (run of " << run_seconds << " s)";
}

TEST(Faults, AKilledRankEndsTheJobOnEveryRank) {
  TempDir out;
  std::vector<std::string> args = training(out.path());
  args[9] = "100000";  // --epochs: far longer than the test waits
  const int launcher = test::start_kotml(args, 2, out.file("stdout"), out.file("stderr"));
  std::vector<int> ranks;
  for (int tries = 0; tries < 500 && ranks.size() < 2; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ranks = test::children_of(launcher);
  }
  ASSERT_EQ(ranks.size(), 2u) << "mpiexec did not start two ranks";
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // into the training
  ::kill(ranks[1], SIGKILL);
  const int code = test::wait_for(launcher, 20);
  if (code == -1) {
    for (int pid : test::children_of(launcher)) ::kill(pid, SIGKILL);
    ::kill(launcher, SIGKILL);
    test::wait_for(launcher, 10);
  }
  ASSERT_NE(code, -1) << "the job still ran 20 s after one rank was killed";
  EXPECT_NE(code, 0);
  EXPECT_TRUE(test::children_of(launcher).empty());
  EXPECT_FALSE(test::file_exists(out.file("results.h5")));
}

}  // namespace
}  // namespace kotml
