#pragma once
// What every kotml fuzzer shares: MPI (one rank) and Kokkos brought up once, as
// `kotml` does, and the rule a fuzzer checks besides the sanitizers': a bad
// input may only end in a user error, as `kotml` classifies what escapes a
// command (dist::failure_of_current_exception: kotml::Error, or std::bad_alloc
// as "out of memory"). An InternalError, an Error of the internal kind, or any
// other exception is a bug: the fuzzer aborts so that libFuzzer keeps the
// input. Allocations above 4 GiB fail as std::bad_alloc (ASAN_OPTIONS in
// fuzz/CMakeLists.txt), as they may in a real run.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::fuzz {

/// MPI_Init and Kokkos::initialize, finalised at exit. Call from LLVMFuzzerInitialize.
void initialise(int* argc, char*** argv);

/// MPI_COMM_WORLD of this one-rank process.
const dist::Comm& world();

[[noreturn]] void report_bug(const std::string& what);

/// Runs body; user errors are the expected outcome of a bad input.
template <class Body>
void expect_only_user_errors(Body&& body) {
  try {
    body();
  } catch (...) {
    const Error failure = dist::failure_of_current_exception();
    if (failure.is_internal()) report_bug(failure.what());
  }
}

/// FNV-1a of the input: the fuzzers derive their choices (which column, which
/// weights mode) from it, so that an input always replays the same way.
std::uint64_t choice_hash(const std::uint8_t* data, std::size_t size);

/// True when the bytes start with HDF5's signature. Inputs the structure-aware
/// mutator did not write (libFuzzer's empty start) are skipped: byte-level
/// damage is the HDF5 library's to parse, and verify_readable's to survive.
bool is_hdf5_image(const std::uint8_t* data, std::size_t size);

}  // namespace kotml::fuzz
