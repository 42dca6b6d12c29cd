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
  /// stderr lines that are not blank, less periodic progress reports.
  std::vector<std::string> error_lines() const;
};

/// Runs `kotml args...`; with ranks > 0, under mpiexec with that many ranks.
/// Only call from rank 0 of a test (or from a non-MPI test).
CliResult run_kotml(const std::vector<std::string>& args, int ranks = 0);

/// run_kotml behind a launcher: the words of `launcher` (shell-quoted) come
/// first, then the command (mpiexec or kotml) as the launcher's arguments; e.g.
/// {"setpriv", "--bounding-set=-dac_override"} for a root without its
/// override of file permissions.
CliResult run_kotml_launched(const std::vector<std::string>& launcher, const std::vector<std::string>& args,
                             int ranks = 0);

/// Starts `kotml args...` in the background (under mpiexec with ranks > 0),
/// stdout and stderr into the given files; returns the pid of kotml itself, or
/// of mpiexec. For fault tests: end it with kill() and wait_for().
int start_kotml(const std::vector<std::string>& args, int ranks, const std::string& out_path,
                const std::string& err_path);

/// Waits up to timeout_seconds for a started process; its exit code (128 +
/// signal when killed), or -1 when it is still running at the timeout.
int wait_for(int pid, double timeout_seconds);

/// The pids of the running processes whose parent is `parent`.
std::vector<int> children_of(int parent);

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

/// A toy2d cohort written once per test process by `kotml simulate --kind toy2d
/// --cells-per-mode 15` (several tests of a binary share it).
const std::string& toy2d_cohort();

/// Path of a file under tests/ (fixtures), and of the shared real data.
std::string test_source_path(const std::string& relative);
std::string shared_data_path(const std::string& name);
bool file_exists(const std::string& path);

}  // namespace kotml::test
