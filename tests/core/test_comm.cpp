#include <gtest/gtest.h>

#include "kotml/dist/comm.hpp"

using kotml::dist::Comm;

TEST(Comm, AgreeWithoutFailureReturns) {
  Comm comm;
  EXPECT_NO_THROW(comm.agree(std::nullopt));
}

TEST(Comm, FailureOnOneRankReachesEveryRank) {
  Comm comm;
  const int failing = comm.size() - 1;  // the last rank fails
  std::optional<kotml::Error> mine;
  if (comm.rank() == failing) mine = kotml::Error("f.h5ad", "obs/x", "broken on the last rank");
  try {
    comm.agree(mine);
    ADD_FAILURE() << "agree returned although a rank failed";
  } catch (const kotml::dist::CollectiveError& e) {
    EXPECT_EQ(e.file(), "f.h5ad");
    EXPECT_EQ(e.element(), "obs/x");
    EXPECT_EQ(e.reason(), "broken on the last rank");
  }
}

TEST(Comm, LowestFailingRankWins) {
  Comm comm;
  std::optional<kotml::Error> mine = kotml::Error("", "", "rank " + std::to_string(comm.rank()));
  try {
    comm.agree(mine);
    ADD_FAILURE();
  } catch (const kotml::dist::CollectiveError& e) {
    EXPECT_EQ(e.reason(), "rank 0");
  }
}

TEST(Comm, PhaseCatchesErrorsAndAgrees) {
  Comm comm;
  EXPECT_THROW(comm.phase([&] {
    if (comm.rank() == 0) throw kotml::Error("", "", "only rank 0");
  }),
               kotml::dist::CollectiveError);
  EXPECT_NO_THROW(comm.phase([] {}));
}

TEST(Comm, BroadcastsAndGathers) {
  Comm comm;
  std::string text = comm.is_root() ? "from root" : "";
  comm.bcast_string(text);
  EXPECT_EQ(text, "from root");

  std::vector<std::string> texts;
  if (comm.is_root()) texts = {"a", "", "ccc"};
  comm.bcast_strings(texts);
  ASSERT_EQ(texts.size(), 3u);
  EXPECT_EQ(texts[2], "ccc");

  const auto all = comm.allgatherv(std::vector<double>(static_cast<std::size_t>(comm.rank()), comm.rank()));
  EXPECT_EQ(all.size(), static_cast<std::size_t>(comm.size() * (comm.size() - 1) / 2));
  EXPECT_EQ(comm.sum(std::int64_t(comm.rank() + 1)), comm.size() * (comm.size() + 1) / 2);
  EXPECT_EQ(comm.max(double(comm.rank())), comm.size() - 1.0);
  EXPECT_TRUE(comm.any(comm.rank() == 0));
  EXPECT_FALSE(comm.all(comm.rank() == 0 && comm.size() > 1));
}

TEST(Comm, SumByIdIsIndependentOfOwnership) {
  // 10 units whose partials have very different magnitudes: the sum in id
  // order is the same bits whichever rank owns which unit.
  Comm comm;
  const int units = 10, width = 3;
  auto partial = [](int u, int k) { return std::pow(10.0, (u * 7 + k * 3) % 17 - 8) * (u % 2 ? -1 : 1); };
  std::vector<kotml::GlobalId> ids;
  std::vector<double> partials;
  for (int u = units - 1; u >= 0; --u) {  // reverse order on purpose
    if ((u * 5 + 3) % comm.size() != comm.rank()) continue;
    ids.push_back(u);
    for (int k = 0; k < width; ++k) partials.push_back(partial(u, k));
  }
  const auto total = comm.sum_by_id(ids, partials, width);
  for (int k = 0; k < width; ++k) {
    double expected = 0;
    for (int u = 0; u < units; ++u) expected += partial(u, k);
    EXPECT_EQ(total[static_cast<std::size_t>(k)], expected);
  }
}
