#include "fuzz_support.hpp"

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <sanitizer/lsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace kotml::fuzz {
namespace {

std::unique_ptr<dist::Comm>& world_storage() {
  static std::unique_ptr<dist::Comm> comm;
  return comm;
}

// What MPI and Kokkos allocate at start-up and leave at exit is theirs (Open
// MPI keeps much of it to the end); LeakSanitizer looks past it, and sees
// every allocation made in between, where the inputs are read.
void finalise() {
  __lsan_disable();
  world_storage().reset();
  if (Kokkos::is_initialized()) Kokkos::finalize();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

void initialise(int* argc, char*** argv) {
  __lsan_disable();
  // Open MPI's own SIGABRT/SIGSEGV handlers would stand in front of
  // libFuzzer's, which save the input that crashed.
  setenv("OMPI_MCA_opal_signal", "30", 0);  // SIGPWR: one no fuzzer uses; an empty list upsets LSan
  dist::initialize_mpi(argc, argv);
  // Kokkos sees no arguments: libFuzzer's flags are not its own.
  int kokkos_argc = 1;
  char* kokkos_argv[] = {(*argv)[0], nullptr};
  Kokkos::initialize(kokkos_argc, kokkos_argv);
  world_storage() = std::make_unique<dist::Comm>(MPI_COMM_WORLD);
  std::atexit(finalise);
  __lsan_enable();
}

const dist::Comm& world() { return *world_storage(); }

void report_bug(const std::string& what) {
  std::fprintf(stderr, "kotml fuzz: a bug, not a user error: %s\n", what.c_str());
  std::abort();
}

// Not instrumented: a loop over every byte of a 1 MiB image taught libFuzzer
// nothing and cost 4% of fuzz_h5ad's time in coverage callbacks.
__attribute__((no_sanitize("coverage"))) std::uint64_t choice_hash(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t k = 0; k < size; ++k) h = (h ^ data[k]) * 1099511628211ull;
  return h;
}

bool is_hdf5_image(const std::uint8_t* data, std::size_t size) {
  static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  return size >= 512 && std::memcmp(data, signature, sizeof signature) == 0;
}

}  // namespace kotml::fuzz
