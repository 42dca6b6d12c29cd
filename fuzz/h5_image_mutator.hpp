#pragma once
// A structure-aware mutator for HDF5 file images, for libFuzzer's
// LLVMFuzzerCustomMutator.
//
// kotml's readers trust the HDF5 library to parse bytes and distrust everything
// the bytes say: shapes, dtypes, encodings, attribute values, index arrays,
// category codes, links that are missing or of the wrong kind. Byte-level
// damage is what HDF5 itself parses (and what verify_readable survives in a
// child process, tested with corrupted files); flipping bytes in-process would
// only fuzz the HDF5 library. So each mutation opens the image with HDF5's
// in-memory (core) driver, changes one thing the way a wrong writer would
// (a value, a length, a type, an attribute, a link), and takes the image HDF5
// writes back. Every image the fuzzer sees is then a valid HDF5 file that says
// something wrong.

#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"

namespace kotml::fuzz {

/// Rewrites the image in data[0, size) by one to four mutations drawn from
/// `seed`; returns the new size (at most max_size). An image HDF5 cannot open
/// (libFuzzer's empty start) becomes a small valid file. When every attempt
/// grows the image past max_size, the input is returned unchanged.
std::size_t mutate_h5_image(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed);

}  // namespace kotml::fuzz

/// The libFuzzer entry points of a harness over HDF5 images: MPI and Kokkos
/// brought up once (fuzz_support.hpp), this mutator, and
/// `run(const std::uint8_t*, std::size_t)` on every input that is an HDF5
/// image (libFuzzer's empty start is not). `run` wraps its reads in
/// expect_only_user_errors.
#define KOTML_HDF5_IMAGE_FUZZER(run)                                                                        \
  extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {                                          \
    ::kotml::fuzz::initialise(argc, argv);                                                                \
    return 0;                                                                                             \
  }                                                                                                       \
  extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, \
                                                  unsigned seed) {                                        \
    return ::kotml::fuzz::mutate_h5_image(data, size, max_size, seed);                                    \
  }                                                                                                       \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {                     \
    if (::kotml::fuzz::is_hdf5_image(data, size)) run(data, size);                                        \
    return 0;                                                                                             \
  }
