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
