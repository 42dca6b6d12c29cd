#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "support/cli_runner.hpp"

TEST(AtomicFile, WritesWholeFileAndLeavesNoTemporary) {
  kotml::test::TempDir dir;
  const auto path = dir.file("out.txt");
  kotml::write_text_atomically(path, "hello\n");
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "hello");
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) (void)e, ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(AtomicFile, UncommittedWriteKeepsOldFile) {
  kotml::test::TempDir dir;
  const auto path = dir.file("keep.txt");
  kotml::write_text_atomically(path, "old");
  {
    kotml::AtomicFile file(path);
    std::ofstream(file.temporary_path()) << "half-written";
    // no commit: as if the writer failed
  }
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "old");
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) (void)e, ++entries;
  EXPECT_EQ(entries, 1);  // no temporary left
}

TEST(AtomicFile, MissingDirectoryIsAnError) {
  EXPECT_THROW(kotml::write_text_atomically("/nonexistent-dir-kotml/x.txt", "x"), kotml::Error);
}

TEST(Error, MessageIsOneLineNamingFileAndElement) {
  const kotml::Error e("a.h5ad", "obs/donor", "column not found\nsecond line");
  const std::string what = e.what();
  EXPECT_EQ(what.find('\n'), std::string::npos);
  EXPECT_NE(what.find("a.h5ad: obs/donor: column not found"), std::string::npos);
}

// A reason given as a callable is built only when the check fails.
TEST(Error, RequireBuildsALazyReasonOnlyOnFailure) {
  int built = 0;
  const auto reason = [&] {
    ++built;
    return std::string("value ") + std::to_string(7) + " is out of range";
  };
  kotml::require(true, "f.h5", "x", reason);
  EXPECT_EQ(built, 0);
  try {
    kotml::require(false, "f.h5", "x", reason);
    FAIL() << "require(false) returned";
  } catch (const kotml::Error& e) {
    EXPECT_NE(std::string(e.what()).find("f.h5: x: value 7 is out of range"), std::string::npos) << e.what();
  }
  EXPECT_EQ(built, 1);
  EXPECT_THROW(kotml::require(false, "f.h5", "x", "a literal reason"), kotml::Error);
}

namespace {

std::string this_hosts_temporary(const std::string& target, long pid) {
  // The host part as AtomicFile writes it: found from a writer of this process.
  kotml::AtomicFile probe(target);
  const std::string own = probe.temporary_path();
  const std::string pid_text = "." + std::to_string(static_cast<long>(::getpid()));
  const std::string tmp_marker = ".tmp.";
  const auto host_begin = own.rfind(tmp_marker) + tmp_marker.size();
  const std::string host = own.substr(host_begin, own.size() - pid_text.size() - host_begin);
  return kotml::temporary_path_for(target, host, pid);
}

/// A process id that no live process has: a child that has been reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return static_cast<long>(child);
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST(AtomicFile, TemporaryNameFitsTheFileSystemForLongNames) {
  kotml::test::TempDir dir;
  const std::string name(251, 'n');
  const auto path = dir.file(name + ".h5");  // 254 characters: the suffix must not push it past 255
  kotml::write_text_atomically(path, "long\n");
  EXPECT_TRUE(std::filesystem::exists(path));
  const auto temporary = kotml::temporary_path_for(path, "some-host", 4194304);
  EXPECT_LE(std::filesystem::path(temporary).filename().string().size(), 255u);
  EXPECT_EQ(std::filesystem::path(temporary).parent_path(), std::filesystem::path(path).parent_path());
  EXPECT_NE(temporary.find(".tmp.some-host.4194304"), std::string::npos);
}

TEST(AtomicFile, RemovesTemporariesOfDeadWritersOnThisHostOnly) {
  kotml::test::TempDir dir;
  const auto target = dir.file("checkpoint.h5");
  const auto stale = this_hosts_temporary(target, dead_pid());
  const auto live = this_hosts_temporary(target, static_cast<long>(::getppid()));  // a live process
  const auto other_host = kotml::temporary_path_for(target, "another-node", dead_pid());
  for (const auto& p : {stale, live, other_host}) std::ofstream(p) << "partial";
  kotml::write_text_atomically(target, "new\n");
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other_host));  // may be a live writer elsewhere on a shared file system
  EXPECT_TRUE(std::filesystem::exists(target));
}

TEST(AtomicFile, SigtermRemovesTheLiveTemporaryAndStillTerminates) {
  kotml::test::TempDir dir;
  const auto target = dir.file("results.h5");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    kotml::install_temporary_cleanup();
    kotml::AtomicFile file(target);
    std::ofstream(file.temporary_path()) << "half-written";
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(10);
    for (;;) ::pause();
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(entries_of(dir.path()).size(), 1u);  // the child's temporary exists
  ::kill(child, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_TRUE(entries_of(dir.path()).empty());
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(CheckOutputPath, RefusesInputsByIdentitySpecialFilesAndMissingFolders) {
  kotml::test::TempDir dir;
  const auto input = dir.file("in.h5ad");
  std::ofstream(input) << "input";
  std::filesystem::create_directory(dir.file("sub"));
  std::filesystem::create_hard_link(input, dir.file("hard.h5ad"));
  std::filesystem::create_symlink(input, dir.file("soft.h5ad"));
  const std::vector<std::string> inputs{input};
  auto refused = [&](const std::string& output, const std::string& fragment, bool created_later = false) {
    try {
      kotml::check_output_path(output, inputs, "output", created_later);
    } catch (const kotml::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--output"), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << output << ": " << what;
      return;
    }
    ADD_FAILURE() << output << " was accepted";
  };
  refused(input, "is the input");
  refused(dir.file("sub/../in.h5ad"), "is the input");
  refused(dir.file("hard.h5ad"), "is the input");
  refused(dir.file("soft.h5ad"), "is the input");
  refused("/dev/null", "not a regular file");
  refused(dir.file("sub"), "not a regular file");
  refused(dir.file("missing/out.h5"), "does not exist");
  refused(dir.file("in.h5ad/out.h5"), "not a directory", true);
  refused("", "needs a file name");
  EXPECT_NO_THROW(kotml::check_output_path(dir.file("out.h5"), inputs, "output"));
  EXPECT_NO_THROW(kotml::check_output_path(dir.file("new/deeper/out.h5"), inputs, "output", true));
  EXPECT_NO_THROW(kotml::check_output_directory(dir.file("new/deeper"), "out"));
  EXPECT_THROW(kotml::check_output_directory(input, "out"), kotml::Error);
  struct stat devnull {};
  ASSERT_EQ(::stat("/dev/null", &devnull), 0);
  EXPECT_TRUE(S_ISCHR(devnull.st_mode));
}
