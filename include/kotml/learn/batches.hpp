#pragma once
// Stratified mini-batches of donors, as GGML-OT's StratifiedBatchSampler: each
// class contributes max(1, round(batch_size · n_c / N)) donors per batch from
// its own shuffled pool until the pool runs dry, so later batches may lack a
// class (the trainer skips a batch without triplets). batch_size ≥ N gives one
// batch of every donor per epoch, as GGML-OT's default full-batch loader.
// Epoch e shuffles with random::Stream(seed, Purpose::batches, e): the batches
// depend on the seed and the epoch only.

#include <cstdint>
#include <vector>

namespace kotml::learn {

/// Batches of positions into `labels` for one epoch.
std::vector<std::vector<std::int64_t>> stratified_batches(const std::vector<int>& labels,
                                                          std::int64_t batch_size, std::uint64_t seed,
                                                          std::int64_t epoch);

/// Python's round(): halves to even.
std::int64_t round_half_even(double x);

}  // namespace kotml::learn
