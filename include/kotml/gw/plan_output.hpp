#pragma once
// Writing a row-distributed GW plan to HDF5 on rank 0: dense (N × K), or the
// t largest entries of each row (indices N × t, int64, and values N × t, in
// decreasing value, ties to the smaller column).

#include <cstdint>
#include <string>

#include "kotml/dist/comm.hpp"
#include "kotml/gw/sampled_gw.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::gw {

/// Collective. Rank 0 writes `dataset` (N × K, float32 or float64) into `file`
/// (other ranks pass nullptr), receiving the other ranks' rows in rank order,
/// chunk by chunk. A write failure is agreed on at the end (CollectiveError).
void write_dense_plan(const SampledGwResult& result, bool float32, const dist::Comm& comm,
                      io::h5::File* file, const std::string& dataset);

/// Collective. Rank 0 writes <group>/indices and <group>/values (N × t).
void write_top_k_plan(const SampledGwResult& result, std::int64_t t, const dist::Comm& comm,
                      io::h5::File* file, const std::string& group);

}  // namespace kotml::gw
