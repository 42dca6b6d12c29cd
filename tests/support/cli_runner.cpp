#include "support/cli_runner.hpp"

#include "kotml_test_paths.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kotml::test {
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<std::string> CliResult::error_lines() const {
  std::vector<std::string> lines;
  std::istringstream in(err);
  std::string line;
  // A run slow enough to report progress (one plain line every 5 s when stderr
  // is not a terminal, each ending in "elapsed") writes those before its error;
  // they are progress, not messages, and how many there are depends on speed.
  const std::string progress_end = " elapsed";
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const bool progress = line.rfind("kotml: ", 0) == 0 && line.size() > progress_end.size() &&
                          line.compare(line.size() - progress_end.size(), progress_end.size(), progress_end) == 0;
    if (!progress) lines.push_back(line);
  }
  return lines;
}

namespace {

/// The shell command that runs kotml with its output redirected.
std::string kotml_command(const std::vector<std::string>& args, int ranks, const std::string& out_path,
                          const std::string& err_path, const std::vector<std::string>& launcher = {}) {
  std::string command;
  for (const auto& word : launcher) command += shell_quote(word) + " ";
  if (ranks > 0) {
    command += std::string("env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 ") +
               std::string(paths::mpiexec) + " -n " + std::to_string(ranks) + " " + paths::mpiexec_preflags + " ";
  }
  command += shell_quote(paths::executable);
  for (const auto& a : args) command += " " + shell_quote(a);
  return command + " >" + shell_quote(out_path) + " 2>" + shell_quote(err_path) + " </dev/null";
}

// A child of an MPI test must not inherit the parent's MPI launch environment.
const char* const inherited_mpi_variables[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",        "PMIX_NAMESPACE",
    "OMPI_MCA_ess",         "OMPI_MCA_orte_ess_num_procs", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI2",     "PMIX_SERVER_URI21",    "OMPI_MCA_orte_hnp_uri"};

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

CliResult run_kotml(const std::vector<std::string>& args, int ranks) { return run_kotml_launched({}, args, ranks); }

CliResult run_kotml_launched(const std::vector<std::string>& launcher, const std::vector<std::string>& args,
                             int ranks) {
  TempDir scratch;
  const std::string out_path = scratch.file("stdout"), err_path = scratch.file("stderr");
  std::string clean_env = "env";
  for (const char* name : inherited_mpi_variables) clean_env += std::string(" -u ") + name;
  const int status = std::system(
      (clean_env + " sh -c " + shell_quote(kotml_command(args, ranks, out_path, err_path, launcher))).c_str());
  CliResult result;
  result.exit_code = exit_code_of(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

int start_kotml(const std::vector<std::string>& args, int ranks, const std::string& out_path,
                const std::string& err_path) {
  const std::string command = "exec " + kotml_command(args, ranks, out_path, err_path);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    for (const char* name : inherited_mpi_variables) ::unsetenv(name);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int wait_for(int pid, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return exit_code_of(status);
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<int> children_of(int parent) {
  std::vector<int> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z') children.push_back(std::stoi(name));
  }
  return children;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kotml-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

const std::string& toy2d_cohort() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string p = dir.file("toy.h5ad");
    const auto r = run_kotml({"simulate", "--kind", "toy2d", "--cells-per-mode", "15", "-o", p});
    if (r.exit_code != 0) throw std::runtime_error("kotml simulate failed: " + r.err);
    return p;
  }();
  return path;
}

std::string test_source_path(const std::string& relative) {
  return std::string(paths::source_dir) + "/" + relative;
}

std::string shared_data_path(const std::string& name) {
  return std::string(paths::shared_data_dir) + "/" + name;
}

bool file_exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace kotml::test
