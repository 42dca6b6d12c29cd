// The command-line program's contract: help, version, and one-line errors with
// exit code 2 for anything the user got wrong.

#include <gtest/gtest.h>

#include "support/cli_runner.hpp"

using kotml::test::run_kotml;

TEST(Cli, VersionNamesKokkosAndBackends) {
  const auto r = run_kotml({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kotml "), std::string::npos);
  EXPECT_NE(r.out.find("Kokkos "), std::string::npos);
  EXPECT_NE(r.out.find("backends:"), std::string::npos);
  EXPECT_NE(r.out.find("git "), std::string::npos);
}

TEST(Cli, HelpListsSubcommands) {
  const auto r = run_kotml({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos);
}

TEST(Cli, EverySubcommandHelpListsItsOptionsWithReadableDefaults) {
  for (const char* sub : {"info", "prep", "simulate", "knn-graph", "apsp", "train", "train-test",
                          "test", "distances", "gw", "ot"}) {
    const auto r = run_kotml({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.err;
    EXPECT_NE(r.out.find("--config"), std::string::npos) << sub;
    // Defaults print as typed: 17-digit renderings such as 0.10000000000000001
    // mean a double default escaped kotml::double_option.
    EXPECT_EQ(r.out.find("0000000000"), std::string::npos) << sub << ":\n" << r.out;
    EXPECT_EQ(r.out.find("9999999999"), std::string::npos) << sub << ":\n" << r.out;
  }
  const auto train = run_kotml({"train", "--help"});
  EXPECT_NE(train.out.find("--lr arg (=0.1)"), std::string::npos) << train.out;
}

TEST(Cli, NoArgumentsPrintsHelpAndFails) {
  const auto r = run_kotml({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("Usage:"), std::string::npos);
}

TEST(Cli, UnknownSubcommandIsOneLineExitTwo) {
  const auto r = run_kotml({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("unknown subcommand 'frobnicate'"), std::string::npos);
}

TEST(Cli, UnknownSubcommandOnThreeRanksPrintsOnce) {
  const auto r = run_kotml({"frobnicate"}, 3);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.error_lines().size(), 1u) << r.err;
}
