// kotml's entry point: MPI, then Kokkos, then one subcommand.
//
// Error handling: option errors are the same on every rank, and a subcommand runs
// inside Comm::phase, so a kotml::Error reaches main as a CollectiveError known to
// every rank: rank 0 prints it once and every rank exits 2. A bug (InternalError
// or any other exception) inside a phase is agreed on the same way and exits 3
// with a line that says it is a bug. Subcommands wrap each stage that can fail
// on one rank alone in its own phase, so that no rank is left waiting in a
// collective; anything thrown outside a phase is printed by the rank that hit it,
// which aborts the job rather than let the others hang.

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <boost/program_options.hpp>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/blas_threads.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/version.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/io/hdf5.hpp"
#include "completion.hpp"
#include "parse.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

std::string kokkos_version() {
  const int v = KOKKOS_VERSION;
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string kokkos_backends() {
  std::string list;
  auto add = [&](const char* name) { list += (list.empty() ? "" : ", ") + std::string(name); };
#ifdef KOKKOS_ENABLE_SERIAL
  add("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  add("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  add("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  add("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  add("HIP");
#endif
#ifdef KOKKOS_ENABLE_SYCL
  add("SYCL");
#endif
  return list;
}

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string first_line(text, static_cast<std::size_t>(length));
  first_line = first_line.substr(0, first_line.find_first_of("\n,"));
  return first_line;
}

void print_version() {
  auto& out = log::out();
  out << "kotml " << version_string << " (git " << git_hash << ", " << build_type << ")\n"
      << "Kokkos " << kokkos_version() << ", backends: " << kokkos_backends()
      << " (default execution space: " << Kokkos::DefaultExecutionSpace::name() << ")\n"
      << "MPI: " << mpi_library() << "\n"
      << "HDF5: " << hdf5_version << "\n";
}

void print_general_help(const std::vector<Subcommand>& subcommands) {
  auto& out = log::out();
  out << "kotml " << version_string
      << " - optimal-transport metric learning for single-cell cohorts\n\n"
      << "Usage: kotml <subcommand> [options]\n"
      << "       mpirun -np N kotml <subcommand> [options]\n\n"
      << "Subcommands:\n";
  for (const auto& s : subcommands) {
    out << "  " << s.name << std::string(s.name.size() < 12 ? 12 - s.name.size() : 1, ' ')
        << s.summary << "\n";
  }
  out << "\nOptions for every subcommand:\n"
      << "  --help             print the subcommand's options with their defaults\n"
      << "  --config FILE      read options from an INI file; the command line wins\n"
      << "  --verbose          print a line to stderr for each step (epochs, phases)\n"
      << "  --quiet            no progress on stderr; --progress: the updating progress\n"
      << "                     line even when stderr is not a terminal (mpirun, batch)\n"
      << "  --kokkos-...       passed to Kokkos (e.g. --kokkos-num-threads=4)\n\n"
      << "  kotml --version    print the version, git hash, Kokkos version and backends\n"
      << "  kotml completion bash   print a bash completion script (source it, or save it\n"
      << "                     as ~/.local/share/bash-completion/completions/kotml)\n"
      << "Run 'kotml <subcommand> --help' for the options of one subcommand.\n";
}

log::ProgressMode progress_mode_of(const po::variables_map& vm) {
  const bool quiet = vm["quiet"].as<bool>(), forced = vm["progress"].as<bool>();
  if (quiet && forced) throw Error::option("progress", "cannot be combined with --quiet");
  if (quiet) return log::ProgressMode::quiet;
  return forced ? log::ProgressMode::forced : log::ProgressMode::automatic;
}

int dispatch(const std::vector<std::string>& args, const dist::Comm& comm) {
  const auto subcommands = all_subcommands();
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_general_help(subcommands);
    return args.empty() ? exit_user_error : exit_ok;
  }
  if (args[0] == "--version") {
    print_version();
    return exit_ok;
  }
  if (args[0] == "completion") {
    if (args.size() != 2 || args[1] != "bash")
      throw Error("", "", "usage: kotml completion bash (bash is the one shell it writes a script for)");
    log::out() << bash_completion(subcommands);
    return exit_ok;
  }
  const Subcommand* sub = nullptr;
  for (const auto& s : subcommands)
    if (s.name == args[0]) sub = &s;
  if (!sub) throw Error("", "", "unknown subcommand '" + args[0] + "' (see 'kotml --help')");

  po::positional_options_description positional;
  const po::options_description desc = options_of(*sub, positional);

  const std::vector<std::string> sub_args(args.begin() + 1, args.end());
  po::variables_map vm;
  try {
    // No guessing: boost would take --verbos for --verbose, and a prefix that
    // is whole today may become ambiguous, or mean another option, tomorrow.
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(sub_args).options(desc).positional(positional).style(style).run(), vm);
  } catch (const po::error& e) {
    throw Error("", "", option_error_text(e));
  }
  if (vm.count("help")) {
    log::out() << "Usage: " << sub->usage << "\n\n"
               << sub->summary << "\n\n"
               << "Example:\n  " << sub->example << "\n\n"
               << desc << "\n";
    return exit_ok;
  }
  if (vm.count("config"))
    store_config_file(vm["config"].as<std::string>(), *sub, desc, subcommands, vm);
  notify_options(vm);
  require_finite_numbers(vm, desc);
  log::set_verbose(vm["verbose"].as<bool>());
  log::set_progress_mode(progress_mode_of(vm));
  int code = exit_ok;
  timers::reset();
  comm.phase([&] { code = sub->run(vm, comm); });
  return code;
}

/// The one line an error is reported with: a user error names what to change, a
/// bug says that it is one and which kotml has it.
std::string error_line(const Error& e) {
  if (!e.is_internal()) return std::string("kotml: error: ") + e.what();
  return std::string("kotml: internal error (a bug in kotml ") + version_string + ", git " +
         git_hash + "; please report it with the command line): " + e.what();
}

/// Option errors are found identically on every rank, before any communication.
int dispatch_agreed(const std::vector<std::string>& args, const dist::Comm& comm) {
  try {
    return dispatch(args, comm);
  } catch (const dist::CollectiveError&) {
    throw;
  } catch (const Error& e) {
    throw dist::CollectiveError(e);
  }
}

/// The command-line words that may name input files: all but the values of the
/// output options, whose old contents are about to be replaced (walking them
/// would only take cores from the run).
std::vector<std::string> possible_inputs(int argc, char* argv[]) {
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "-o" || word == "--output" || word == "--out") {
      ++i;
      continue;
    }
    if (word.rfind("--output=", 0) == 0 || word.rfind("--out=", 0) == 0) continue;
    words.push_back(word);
  }
  return words;
}

}  // namespace
}  // namespace kotml::cli

int main(int argc, char* argv[]) {
  // The input files' verification walks (child processes) run while MPI and
  // Kokkos start, instead of after them.
  kotml::io::h5::start_verification(kotml::cli::possible_inputs(argc, argv));
  kotml::dist::initialize_mpi(&argc, &argv);
  int code = kotml::exit_ok;
  {
    const kotml::dist::Comm comm(MPI_COMM_WORLD);
    kotml::log::set_rank(comm.rank());

    // Kokkos sees only its own flags; in particular it never sees --help.
    std::vector<char*> kokkos_argv{argv[0]};
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
      if (std::strncmp(argv[i], "--kokkos-", 9) == 0)
        kokkos_argv.push_back(argv[i]);
      else
        args.emplace_back(argv[i]);
    }
    int kokkos_argc = static_cast<int>(kokkos_argv.size());
    kokkos_argv.push_back(nullptr);

    Kokkos::ScopeGuard kokkos(kokkos_argc, kokkos_argv.data());
    // After MPI and Kokkos, so that neither replaces the handler: a terminated
    // run removes the temporaries of the outputs it was writing.
    kotml::install_temporary_cleanup();
    kotml::use_one_blas_thread();
    try {
      code = kotml::cli::dispatch_agreed(args, comm);
    } catch (const kotml::dist::CollectiveError& e) {
      if (comm.is_root()) std::cerr << kotml::cli::error_line(e) << std::endl;
      code = e.is_internal() ? kotml::exit_internal_error : kotml::exit_user_error;
    } catch (...) {
      // Thrown outside any phase, on this rank alone: the others may wait in a
      // collective, so the job ends here.
      const kotml::Error failure = kotml::dist::failure_of_current_exception();
      std::cerr << kotml::cli::error_line(failure) << std::endl;
      code = failure.is_internal() ? kotml::exit_internal_error : kotml::exit_user_error;
      if (comm.size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
    }
  }
  kotml::io::h5::cancel_pending_verification();
  MPI_Finalize();
  return code;
}
