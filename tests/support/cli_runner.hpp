#pragma once
// Runs the kotml program from a test, capturing its exit code, stdout and stderr,
// so tests can check what a user sees: one error line, exit code 2, no output
// file left behind.

#include <string>
#include <vector>

namespace kotml::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  /// stderr lines that are not blank.
  std::vector<std::string> error_lines() const;
};

/// Runs `kotml args...`; with ranks > 0, under mpiexec with that many ranks.
/// Only call from rank 0 of a test (or from a non-MPI test).
CliResult run_kotml(const std::vector<std::string>& args, int ranks = 0);

/// A fresh directory under the system temporary folder, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Path of a file under tests/ (fixtures), and of the shared real data.
std::string test_source_path(const std::string& relative);
std::string shared_data_path(const std::string& name);
bool file_exists(const std::string& path);

}  // namespace kotml::test
