#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
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
