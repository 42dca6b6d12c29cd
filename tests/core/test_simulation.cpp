// core/simulation.hpp outside a simulated cluster: sampling and folding exist
// only in the smpi build, so every compute block runs every time and every
// folded buffer is the caller's own memory.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"

namespace {

TEST(Simulation, EveryComputeBlockRunsOutsideASimulation) {
  int runs = 0;
  for (int k = 0; k < 5; ++k) kotml::sim::compute("test::block", [&] { ++runs; });
  EXPECT_EQ(runs, 5);
}

TEST(Simulation, FoldedBuffersAtOneSiteAreSeparateOutsideASimulation) {
  auto first = kotml::sim::folded<double>("test::folded", 1000, true);
  auto second = kotml::sim::folded<double>("test::folded", 1000, true);
  ASSERT_EQ(first.view.extent(0), 1000u);
  ASSERT_EQ(second.view.extent(0), 1000u);
  EXPECT_EQ(first.memory, nullptr);
  EXPECT_NE(first.view.data(), second.view.data());
  Kokkos::deep_copy(first.view, 1.0);
  Kokkos::deep_copy(second.view, 2.0);
  auto host = Kokkos::create_mirror_view_and_copy(kotml::HostSpace(), first.view);
  for (std::size_t k = 0; k < host.extent(0); ++k) ASSERT_EQ(host(k), 1.0);
}

}  // namespace

namespace {

TEST(Simulation, EveryIterationIsRealOutsideASimulation) {
  kotml::sim::Replay replay;
  for (int it = 0; it < 5; ++it) EXPECT_EQ(replay.begin(it), kotml::sim::Replay::Step::real) << "iteration " << it;
  int ran = 0;
  kotml::sim::Replay::uncharged([&] { ++ran; });
  EXPECT_EQ(ran, 1);
}

}  // namespace

namespace {

TEST(Simulation, LikeItemsRunAsOneCallOutsideASimulation) {
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;
  kotml::sim::like_items("test::items", 7, [&](std::int64_t first, std::int64_t last) { calls.emplace_back(first, last); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, 0);
  EXPECT_EQ(calls[0].second, 7);
}

TEST(Simulation, SharedCopiesAndAnswerBuffersAreTheCallersOwnOutsideASimulation) {
  kotml::Vector<double> values("test::values", 64);
  Kokkos::deep_copy(values, 3.0);
  std::vector<std::shared_ptr<void>> keep;
  const auto copy = kotml::sim::shared_copy("test::shared", values, true, keep);
  EXPECT_EQ(copy.data(), values.data());
  EXPECT_TRUE(keep.empty());
  const auto answer = kotml::sim::answer_buffer<float>("test::answer", 32);
  EXPECT_EQ(answer.memory, nullptr);
  EXPECT_EQ(answer.view.extent(0), 32u);
}

}  // namespace
