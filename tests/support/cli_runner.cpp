#include "support/cli_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

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
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  return lines;
}

CliResult run_kotml(const std::vector<std::string>& args, int ranks) {
  TempDir scratch;
  std::string command;
  if (ranks > 0) {
    command = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 ") +
              KOTML_MPIEXEC + " -n " + std::to_string(ranks) + " " + KOTML_MPIEXEC_PREFLAGS + " ";
  }
  command += shell_quote(KOTML_EXECUTABLE);
  for (const auto& a : args) command += " " + shell_quote(a);
  const std::string out_path = scratch.file("stdout"), err_path = scratch.file("stderr");
  command += " >" + shell_quote(out_path) + " 2>" + shell_quote(err_path) + " </dev/null";
  // A child of an MPI test must not inherit the parent's MPI launch environment.
  const std::string clean_env =
      "env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMIX_NAMESPACE "
      "-u OMPI_MCA_ess -u OMPI_MCA_orte_ess_num_procs -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI3 "
      "-u PMIX_SERVER_URI2 -u PMIX_SERVER_URI21 -u OMPI_MCA_orte_hnp_uri ";
  const int status = std::system((clean_env + "sh -c " + shell_quote(command)).c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
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

std::string test_source_path(const std::string& relative) {
  return std::string(KOTML_TEST_SOURCE_DIR) + "/" + relative;
}

std::string shared_data_path(const std::string& name) {
  return std::string(KOTML_SHARED_DATA_DIR) + "/" + name;
}

bool file_exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace kotml::test
