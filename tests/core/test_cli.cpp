// The command-line program's contract: help, version, and one-line errors with
// exit code 2 for anything the user got wrong.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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

namespace {

const std::vector<std::string> all_subcommands{"info", "prep",      "simulate", "knn-graph", "apsp", "train",
                                               "train-test", "test", "distances", "gw",       "ot",   "map"};

/// The words of a line, split at spaces (examples hold no quoted words).
std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

TEST(Cli, SubcommandHelpGroupsOptionsAndShowsAnExampleThatParses) {
  for (const std::string& sub : all_subcommands) {
    const auto r = run_kotml({sub, "--help"});
    ASSERT_EQ(r.exit_code, 0) << sub << ": " << r.err;
    // Sections in order, the general ones last.
    std::size_t at = 0;
    for (const char* section : {"Input:", "Model:", "Solver:", "Parallel and memory:", "Output:", "General:"}) {
      const auto found = r.out.find(std::string("\n") + section + "\n");
      if (found == std::string::npos) continue;
      EXPECT_GT(found, at) << sub << ": " << section << " out of order\n" << r.out;
      at = found;
    }
    EXPECT_NE(r.out.find("\nGeneral:\n"), std::string::npos) << sub;
    EXPECT_NE(r.out.find("\nSolver:\n") + r.out.find("\nModel:\n") + r.out.find("\nInput:\n"), 3 * std::string::npos)
        << sub << ": no section besides General";
    // The example, given back to kotml with --help, parses: every option in it
    // is one the subcommand takes (an unknown option is an error before --help).
    const auto example_at = r.out.find("Example:\n  ");
    ASSERT_NE(example_at, std::string::npos) << sub;
    const auto line_begin = example_at + 11;
    const std::string example = r.out.substr(line_begin, r.out.find('\n', line_begin) - line_begin);
    auto words = words_of(example);
    if (words.size() > 3 && words[0] == "mpirun") words.erase(words.begin(), words.begin() + 3);
    ASSERT_GE(words.size(), 2u) << example;
    EXPECT_EQ(words[0], "kotml") << example;
    EXPECT_EQ(words[1], sub) << example;
    words.erase(words.begin());
    words.push_back("--help");
    const auto parsed = run_kotml(words);
    EXPECT_EQ(parsed.exit_code, 0) << sub << ": the example does not parse: " << example << "\n" << parsed.err;
  }
}

TEST(Cli, BashCompletionCompletesSubcommandsAndTheirOptions) {
  const auto script = run_kotml({"completion", "bash"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  kotml::test::TempDir dir;
  {
    std::ofstream(dir.file("kotml.bash")) << script.out;
  }
  // What bash completes for a command line, by calling the generated function
  // as bash's completion would.
  auto complete = [&](const std::string& line) {
    const std::string command = "bash -c 'source " + dir.file("kotml.bash") + " && COMP_WORDS=(" + line +
                                ") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _kotml && echo \"${COMPREPLY[*]}\"'";
    std::string text;
    FILE* pipe = popen(command.c_str(), "r");
    char buffer[4096];
    for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
    EXPECT_EQ(pclose(pipe), 0) << command;
    return words_of(text);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(complete("kotml tr"), (V{"train", "train-test"}));
  EXPECT_EQ(complete("kotml ot --epsilon"), (V{"--epsilon", "--epsilon-init", "--epsilon-decay"}));
  EXPECT_EQ(complete("kotml map --query-l"), (V{"--query-label-col"}));
  EXPECT_EQ(complete("kotml --ver"), (V{"--version"}));
  // General options are every subcommand's.
  EXPECT_EQ(complete("kotml gw --prog"), (V{"--progress"}));
  EXPECT_EQ(complete("kotml completion b"), (V{"bash"}));
  // Every option of a subcommand's --help is offered, and nothing else.
  const auto help = run_kotml({"apsp", "--help"});
  std::vector<std::string> listed;  // "  --name arg ..." or "  -o [ --output ] arg ..."
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    const auto words = words_of(line);
    if (line.rfind("  --", 0) == 0) listed.push_back(words[0]);
    if (line.rfind("  -", 0) == 0 && words.size() > 2 && words[1] == "[") listed.push_back(words[2]);
  }
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  auto offered = complete("kotml apsp -");
  std::sort(offered.begin(), offered.end());
  EXPECT_EQ(offered, listed);
  // Other shells are named, not guessed.
  const auto zsh = run_kotml({"completion", "zsh"});
  EXPECT_EQ(zsh.exit_code, 2);
  EXPECT_NE(zsh.err.find("kotml completion bash"), std::string::npos) << zsh.err;
}

TEST(Cli, AbbreviatedOptionsAreRefusedNotGuessed) {
  // Boost's default style took --verbos as --verbose (found writing the
  // tutorial's test); a misspelt option must be an error.
  const auto r = run_kotml({"info", "--verbos", "x.h5ad"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--verbos"), std::string::npos) << r.err;
  EXPECT_EQ(r.error_lines().size(), 1u) << r.err;
}

TEST(Cli, NonFiniteNumbersAreRefusedWhereTheDefaultIsFinite) {
  // Found by the JSON schema test: --tol inf or --rho nan ran, and the run's
  // JSON record held null for them.
  for (const auto& [args, fragment] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"gw", "x.h5", "-o", "y.h5", "--tol", "inf"}, "--tol: must be finite"},
           {{"gw", "x.h5", "-o", "y.h5", "--rho", "nan"}, "--rho: must be a number"},
           {{"train-test", "--builtin", "toy2d", "--sinkhorn-tol", "-inf"}, "--sinkhorn-tol: must be finite"},
           {{"map", "q.h5ad", "r.h5ad", "--out", "o", "--query-label-col", "a", "--ref-label-col", "b",
             "--query-sample-col", "c", "--ref-sample-col", "d", "--auroc-threshold", "nan"},
            "--auroc-threshold"}}) {
    const auto r = run_kotml(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }
  // prep's --max-disp is infinite by default, so inf is a value there: the run
  // gets as far as its missing input.
  const auto prep = run_kotml({"prep", "missing.h5ad", "-o", "out.h5ad", "--max-disp", "inf"});
  EXPECT_EQ(prep.exit_code, 2);
  EXPECT_NE(prep.err.find("missing.h5ad"), std::string::npos) << prep.err;
}

TEST(Cli, UnknownSinkhornDomainIsOneLineExitTwo) {
  for (const auto& [command, out] : std::vector<std::pair<std::string, std::string>>{
           {"train", "--out"}, {"train-test", "--out"}, {"distances", "-o"}}) {
    const auto r = run_kotml({command, "--builtin", "toy2d", "--entropic-reg", "0.1", "--sinkhorn-domain", "linear",
                              out, "never-written"});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("--sinkhorn-domain: must be auto, log or scaling, got 'linear'"), std::string::npos) << r.err;
  }
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

// Open MPI 4 puts every isolated singleton's session under the same
// ${TMPDIR}/ompi.<host>.<uid>/jf.0, so two kotml processes started together
// raced on it (one removing it while the other was in MPI_Init). A file in
// that place makes every singleton that uses it fail at once: kotml must run
// on a base directory of its own, and leave nothing behind.
TEST(Cli, SingletonsUseTheirOwnSessionDirectory) {
  kotml::test::TempDir tmp;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const std::string shared = tmp.file("ompi." + std::string(host) + "." + std::to_string(::getuid()));
  std::ofstream(shared) << "not a directory";
  const auto r = kotml::test::run_kotml_launched({"env", "TMPDIR=" + tmp.path()}, {"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path())) left.push_back(entry.path().string());
  EXPECT_EQ(left, std::vector<std::string>{shared});
}

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// No subcommand writes over one of its inputs, whatever path names it, or over
// a device, and each says so in one line before any work (issue: outputs onto
// inputs destroyed the input).
TEST(Cli, NoSubcommandWritesOverItsInputOrASpecialFile) {
  kotml::test::TempDir dir;
  const auto input = dir.file("in.h5ad");
  ASSERT_EQ(run_kotml({"simulate", "--kind", "toy2d", "-o", input, "--seed", "3"}).exit_code, 0);
  std::filesystem::create_directory(dir.file("sub"));
  std::filesystem::create_hard_link(input, dir.file("hard.h5ad"));
  std::filesystem::create_symlink(input, dir.file("soft.h5ad"));
  const auto dotted = dir.file("sub/../in.h5ad");
  const auto before = file_bytes(input);
  ASSERT_FALSE(before.empty());
  const std::vector<std::vector<std::string>> cases = {
      {"prep", input, "-o", dotted},
      {"knn-graph", input, "-o", input},
      {"knn-graph", input, "-o", dir.file("soft.h5ad")},
      {"apsp", input, "-o", dir.file("hard.h5ad")},
      {"gw", input, "--target", input, "-o", dotted},
      {"distances", input, "--metric", "euclidean", "-o", input},
      {"train", input, "--out", dir.file("run"), "--checkpoint", input},
      {"train", input, "--out", dir.file("run"), "--write-h5ad", dir.file("hard.h5ad")},
      {"train-test", input, "--out", dir.file("run"), "--write-h5ad", dotted},
      {"ot", "--source", input, "--target", input, "--plan", dotted},
  };
  for (const auto& args : cases) {
    const auto r = run_kotml(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_EQ(r.exit_code, 2) << line << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << line << r.err;
    EXPECT_NE(r.err.find("is the input"), std::string::npos) << line << r.err;
    EXPECT_EQ(file_bytes(input), before) << line;
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"simulate", "--kind", "toy2d", "-o", "/dev/null"},
           {"knn-graph", input, "-o", "/dev/null"},
           {"ot", "--source", input, "--target", input, "--plan", "/dev/null"},
           {"apsp", input, "-o", dir.file("sub")}}) {
    const auto r = run_kotml(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  }
  struct stat devnull {};
  ASSERT_EQ(::stat("/dev/null", &devnull), 0);
  EXPECT_TRUE(S_ISCHR(devnull.st_mode));
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("sub")));
  // A missing output folder of a single-file output is found before any work.
  const auto r = run_kotml({"knn-graph", input, "-o", dir.file("nowhere/graph.h5")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run")));  // refused before the folder was made
}

// A path that is not UTF-8 is recorded in the output's JSON configuration with
// U+FFFD in place of the bad bytes, instead of failing when the JSON is written.
TEST(Cli, InputPathThatIsNotUtf8IsRecordedInTheOutput) {
  kotml::test::TempDir dir;
  const auto input = dir.file("cells-\xff\xfe.h5ad");
  ASSERT_EQ(run_kotml({"simulate", "--kind", "toy2d", "-o", input, "--seed", "3"}).exit_code, 0);
  const auto output = dir.file("graph.h5");
  const auto r = run_kotml({"knn-graph", input, "-o", output, "--k", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(file_bytes(output).find("cells-\xef\xbf\xbd\xef\xbf\xbd.h5ad"), std::string::npos);  // in kotml_config
}

// Options files and inputs that are not regular files: refused at once, with
// one line, rather than read as empty (a directory), read forever (/dev/zero),
// blocked on (a FIFO), or silently ignored (a nested config key).
TEST(Cli, ConfigurationAndInputsMustBeRegularFiles) {
  kotml::test::TempDir dir;
  auto expect_error = [](const std::vector<std::string>& args, const std::string& fragment) {
    const auto r = run_kotml(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.error_lines()[0].find(fragment), std::string::npos) << r.error_lines()[0];
  };
  expect_error({"info", "x.h5", "--config", dir.path()}, "not a regular file");
  expect_error({"info", "x.h5", "--config", "/dev/zero"}, "not a regular file");
  {
    std::ofstream ini(dir.file("nested.ini"));
    ini << "config = other.ini\n";
  }
  expect_error({"info", "x.h5", "--config", dir.file("nested.ini")}, "cannot name another");
  // Found by fuzz_config: an empty key matched every option as a prefix, and
  // boost's "ambiguous option" left as an internal error (exit 3).
  for (const char* line : {"= 1\n", "[ot]\n= 1\n", "ot. = 1\n"}) {
    {
      std::ofstream ini(dir.file("nameless.ini"));
      ini << line;
    }
    expect_error({"ot", "--config", dir.file("nameless.ini")}, "a value without an option name");
  }
  // Found by fuzz_config: boost's message for a bad value replaced "%value%"
  // with the value until none was left, so a value holding "%value%" hung
  // kotml, on the command line and in an INI file alike.
  {
    std::ofstream ini(dir.file("placeholder.ini"));
    ini << "[ot]\nepsilon = %value%\n";
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"ot", "--epsilon", "%value%"},
                                                                 {"ot", "--config", dir.file("placeholder.ini")}}) {
    const auto r = kotml::test::run_kotml_launched({"timeout", "60"}, args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.error_lines()[0].find("the argument ('%value%') for option"), std::string::npos) << r.err;
  }
  {
    std::ofstream big(dir.file("big.ini"));
    big << "# " << std::string(2 << 20, 'x') << "\n";
  }
  expect_error({"info", "x.h5", "--config", dir.file("big.ini")}, "at most 1 MiB");
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  expect_error({"info", dir.file("fifo")}, "not a regular file");
}

// A full disk (ENOSPC, a 16 KiB tmpfs in a private mount namespace) and a
// directory the user may not write in (EACCES; root runs without its override
// of file permissions) end in one line naming the output and exit 2, on one
// rank and on two, with nothing left behind: no output and no temporary.
TEST(Cli, FullDiskAndDeniedWritesLeaveNothing) {
  kotml::test::TempDir dir;
  const std::string full = dir.file("full"), denied = dir.file("denied"), listing = dir.file("listing");
  std::filesystem::create_directory(full);
  std::filesystem::create_directory(denied);
  std::filesystem::permissions(denied, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                           std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  const bool root = ::geteuid() == 0;
  // Runs the command with `full` mounted as a small tmpfs, then lists it.
  const std::vector<std::string> small_disk = {
      "unshare", root ? "-m" : "-rm", "sh", "-c",
      "mount -t tmpfs -o size=16k kotml-test \"$1\" || exit 77; shift; \"$@\"; status=$?; ls -A \"$0\" > \"$0.list\" 2>&1;"
      " cp \"$0.list\" '" + listing + "'; exit $status",
      full, full};
  const std::vector<std::string> without_override = {"setpriv", "--bounding-set=-dac_override,-dac_read_search"};
  for (int ranks : {0, 2}) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    const auto r = kotml::test::run_kotml_launched(
        small_disk, {"simulate", "--kind", "toy2d", "-o", full + "/cohort.h5ad"}, ranks);
    if (r.exit_code == 77) GTEST_SKIP() << "cannot mount a tmpfs here: " << r.err;
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.error_lines()[0].find(full + "/cohort.h5ad: "), std::string::npos) << r.err;
    EXPECT_NE(r.error_lines()[0].find("No space left on device"), std::string::npos) << r.err;
    ASSERT_TRUE(kotml::test::file_exists(listing)) << "the full disk was not listed";
    std::ifstream left(listing);
    const std::string names((std::istreambuf_iterator<char>(left)), std::istreambuf_iterator<char>());
    EXPECT_EQ(names, "") << "left on the full disk: " << names;
    std::filesystem::remove(listing);

    const auto d = root ? kotml::test::run_kotml_launched(
                              without_override, {"simulate", "--kind", "toy2d", "-o", denied + "/cohort.h5ad"}, ranks)
                        : run_kotml({"simulate", "--kind", "toy2d", "-o", denied + "/cohort.h5ad"}, ranks);
    EXPECT_EQ(d.exit_code, 2) << d.err;
    ASSERT_EQ(d.error_lines().size(), 1u) << d.err;
    EXPECT_NE(d.error_lines()[0].find("Permission denied"), std::string::npos) << d.err;
    EXPECT_TRUE(std::filesystem::is_empty(denied));
  }
}
