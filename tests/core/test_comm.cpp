#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/exchange_grid.hpp"

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

// A bug found on one rank is a bug on every rank (exit 3), an exhausted memory
// is a user-facing error (exit 2), and a user error stays one; the kind crosses
// ranks with the message.
TEST(Comm, PhaseTellsBugsFromUserErrorsOnEveryRank) {
  Comm comm;
  const int last = comm.size() - 1;
  auto failure_from = [&](auto&& throw_on_last_rank) {
    try {
      comm.phase([&] {
        if (comm.rank() == last) throw_on_last_rank();
      });
    } catch (const kotml::dist::CollectiveError& e) {
      return kotml::Error(e);
    }
    ADD_FAILURE() << "the phase did not fail";
    return kotml::Error("", "", "");
  };

  const auto bug = failure_from([] { kotml::internal_check(1 + 1 == 3, "arithmetic broke"); });
  EXPECT_TRUE(bug.is_internal());
  EXPECT_EQ(bug.reason(), "arithmetic broke");

  const auto stray = failure_from([] { throw std::out_of_range("vector::_M_range_check"); });
  EXPECT_TRUE(stray.is_internal());
  EXPECT_EQ(stray.reason(), "vector::_M_range_check");

  const auto memory = failure_from([] { throw std::bad_alloc(); });
  EXPECT_FALSE(memory.is_internal());
  EXPECT_NE(memory.reason().find("out of memory"), std::string::npos) << memory.reason();

  const auto user = failure_from([] { throw kotml::Error("in.h5ad", "obs/y", "no such column"); });
  EXPECT_FALSE(user.is_internal());
  EXPECT_EQ(user.file(), "in.h5ad");
  EXPECT_EQ(user.element(), "obs/y");
  EXPECT_EQ(user.reason(), "no such column");
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

TEST(Comm, FloatGatherFillsTheCallersBufferInRankOrder) {
  // Rank r sends r + 1 values r·10 + k; the buffer holds them all, rank by rank.
  Comm comm;
  const int p = comm.size(), r = comm.rank();
  std::vector<float> mine(static_cast<std::size_t>(r + 1));
  for (int k = 0; k <= r; ++k) mine[static_cast<std::size_t>(k)] = static_cast<float>(10 * r + k);
  const std::int64_t total = static_cast<std::int64_t>(p) * (p + 1) / 2;
  std::vector<float> all(static_cast<std::size_t>(total), -1.0f);
  comm.allgatherv(mine.data(), r + 1, all.data(), total);
  std::size_t at = 0;
  for (int from = 0; from < p; ++from)
    for (int k = 0; k <= from; ++k) EXPECT_EQ(all[at++], static_cast<float>(10 * from + k));
  // A buffer of the wrong size is kotml's bug, seen on every rank alike.
  EXPECT_THROW(comm.allgatherv(mine.data(), r + 1, all.data(), total + 1), kotml::InternalError);
}

namespace {
constexpr kotml::dist::ExchangeRoute all_routes[] = {kotml::dist::ExchangeRoute::automatic,
                                                     kotml::dist::ExchangeRoute::direct,
                                                     kotml::dist::ExchangeRoute::grid};

std::string route_name(kotml::dist::ExchangeRoute route) {
  switch (route) {
    case kotml::dist::ExchangeRoute::automatic: return "automatic";
    case kotml::dist::ExchangeRoute::direct: return "direct";
    case kotml::dist::ExchangeRoute::grid: return "grid";
  }
  return "?";
}
}  // namespace

TEST(Comm, AlltoallvDeliversEachRanksShareInRankOrder) {
  // Rank r sends rank t the t + 1 values 100·r + 10·t + k; rank t receives
  // t + 1 values from each rank, in rank order.
  Comm comm;
  const int p = comm.size(), r = comm.rank();
  std::vector<std::int64_t> send, counts;
  for (int t = 0; t < p; ++t) {
    for (int k = 0; k <= t; ++k) send.push_back(100 * r + 10 * t + k);
    counts.push_back(t + 1);
  }
  for (const auto route : all_routes) {
    SCOPED_TRACE(route_name(route));
    std::vector<std::int64_t> received_counts;
    const auto received = comm.alltoallv(send, counts, received_counts, route);
    ASSERT_EQ(received.size(), static_cast<std::size_t>(p * (r + 1)));
    std::size_t at = 0;
    for (int from = 0; from < p; ++from) {
      EXPECT_EQ(received_counts[static_cast<std::size_t>(from)], r + 1);
      for (int k = 0; k <= r; ++k) EXPECT_EQ(received[at++], 100 * from + 10 * r + k);
    }
  }
  // Counts that do not match the buffer are kotml's bug, seen on every rank.
  counts[0] += comm.rank() == 0 ? 1 : 0;
  for (const auto route : all_routes) {
    std::vector<std::int64_t> received_counts;
    EXPECT_THROW(comm.alltoallv(send, counts, received_counts, route), kotml::InternalError) << route_name(route);
  }
}

TEST(Comm, AlltoallvDeliversSparseSharesAndSkipsTheEmptyOnes) {
  // Rank r sends r + 2 values only to rank (r + 1) mod p and, when r is odd, one
  // value to itself; rank 0 sends nothing to rank 1 when p > 2 (rank p − 1 sends
  // to 0). Empty shares are no messages, and the values still land in rank order.
  Comm comm;
  const int p = comm.size(), r = comm.rank();
  const int next = (r + 1) % p;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(p), 0), send;
  for (int t = 0; t < p; ++t) {
    const bool to_next = t == next && !(r == 0 && p > 2);
    const bool to_self = t == r && r % 2 == 1;
    if (to_next) {
      for (int k = 0; k < r + 2; ++k) send.push_back(1000 * r + k);
      counts[static_cast<std::size_t>(t)] += r + 2;
    }
    if (to_self && !to_next) {
      send.push_back(-r);
      counts[static_cast<std::size_t>(t)] += 1;
    }
  }
  std::vector<std::int64_t> expected, expected_counts;
  for (int from = 0; from < p; ++from) {
    const bool from_prev = (from + 1) % p == r && !(from == 0 && p > 2);
    const bool from_self = from == r && r % 2 == 1 && !from_prev;
    std::int64_t count = 0;
    if (from_prev)
      for (int k = 0; k < from + 2; ++k, ++count) expected.push_back(1000 * from + k);
    if (from_self) {
      expected.push_back(-r);
      ++count;
    }
    expected_counts.push_back(count);
  }
  for (const auto route : all_routes) {
    std::vector<std::int64_t> received_counts;
    EXPECT_EQ(comm.alltoallv(send, counts, received_counts, route), expected) << route_name(route);
    EXPECT_EQ(received_counts, expected_counts) << route_name(route);
  }
}

TEST(Comm, AlltoallvThroughTheGridEqualsTheDirectExchange) {
  // Shares of pseudo-random sizes, a third of them empty (the self share too,
  // on some ranks), each value naming its sender, receiver and position; every
  // rank-count's grid has a short last row from 3 ranks on.
  Comm comm;
  const int p = comm.size(), r = comm.rank();
  std::vector<std::int64_t> send, counts;
  for (int t = 0; t < p; ++t) {
    const std::int64_t count = (7 * r + 5 * t + r * t) % 3 == 0 ? 0 : (r * 13 + t * 7) % 9 + 1;
    for (std::int64_t k = 0; k < count; ++k) send.push_back(1000000 * r + 1000 * t + k);
    counts.push_back(count);
  }
  std::vector<std::int64_t> direct_counts, grid_counts;
  const auto direct = comm.alltoallv(send, counts, direct_counts, kotml::dist::ExchangeRoute::direct);
  const auto grid = comm.alltoallv(send, counts, grid_counts, kotml::dist::ExchangeRoute::grid);
  EXPECT_EQ(grid, direct);
  EXPECT_EQ(grid_counts, direct_counts);
  std::size_t at = 0;
  for (int from = 0; from < p; ++from)
    for (std::int64_t k = 0; k < direct_counts[static_cast<std::size_t>(from)]; ++k, ++at)
      ASSERT_EQ(grid.at(at), 1000000 * from + 1000 * r + k) << "from rank " << from;
  EXPECT_EQ(at, grid.size());
}

TEST(ExchangeGrid, EveryPairHasOneForwarderAndNoRankTalksToMoreThanThreeRootsOfP) {
  for (int p = 1; p <= 300; ++p) {
    const kotml::dist::ExchangeGrid grid(p);
    const int w = grid.width();
    ASSERT_TRUE(w * w >= p && (w - 1) * (w - 1) < p) << p;
    const int rows = (p + w - 1) / w;
    std::vector<int> first_hop_in(static_cast<std::size_t>(p), 0);
    for (int s = 0; s < p; ++s)
      for (int c = 0; c < w; ++c) {
        const int m = grid.via(s, c);
        ASSERT_TRUE(m >= 0 && m < p && grid.column_of(m) == c) << p << ' ' << s << ' ' << c;
        // In s's row, or the full row above where s's short row has a gap.
        ASSERT_TRUE(m / w == s / w || (m / w == s / w - 1 && s / w * w + c >= p)) << p << ' ' << s << ' ' << c;
        if (c == grid.column_of(s)) {
          ASSERT_EQ(m, s);
        }
        const auto sources = grid.sources_through(m);
        ASSERT_TRUE(std::is_sorted(sources.begin(), sources.end()));
        ASSERT_EQ(std::count(sources.begin(), sources.end(), s), 1) << p << ' ' << s << ' ' << c;
        if (m != s) ++first_hop_in[static_cast<std::size_t>(m)];
      }
    for (int m = 0; m < p; ++m) {
      // sources_through lists exactly the ranks that send through m.
      const auto sources = grid.sources_through(m);
      ASSERT_EQ(static_cast<int>(sources.size()) - 1, first_hop_in[static_cast<std::size_t>(m)]) << p << ' ' << m;
      EXPECT_LE(static_cast<int>(sources.size()), 2 * w - 1) << p << ' ' << m;
      EXPECT_LE(static_cast<int>(grid.column(grid.column_of(m)).size()), rows);
    }
    // Every (source, receiver) pair passes through exactly one rank of the
    // receiver's column.
    for (int d = 0; d < p; ++d) {
      std::vector<int> times(static_cast<std::size_t>(p), 0);
      for (int m : grid.column(grid.column_of(d)))
        for (int s : grid.sources_through(m)) ++times[static_cast<std::size_t>(s)];
      ASSERT_EQ(std::count(times.begin(), times.end(), 1), p) << p << ' ' << d;
    }
  }
  EXPECT_THROW(kotml::dist::ExchangeGrid(0), kotml::InternalError);
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

TEST(InitializeMpi, SingletonSettingsOnlyWhereNoLauncherStartedTheProcess) {
  using Environment = std::map<std::string, std::string>;
  const auto settings_in = [](const Environment& environment) {
    return kotml::dist::singleton_settings([&](const char* name) -> const char* {
      const auto found = environment.find(name);
      return found == environment.end() ? nullptr : found->second.c_str();
    });
  };
  const auto bare = settings_in({{"PATH", "/usr/bin"}, {"SLURM_JOB_ID", "7"}});
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
  const std::vector<std::pair<std::string, std::string>> expected{{"OMPI_MCA_ess_singleton_isolated", "1"},
                                                                  {"OMPI_MCA_pml", "ob1"},
                                                                  {"OMPI_MCA_btl", "self"}};
  EXPECT_EQ(bare, expected);
#else
  EXPECT_TRUE(bare.empty());
#endif
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_FD"})
    EXPECT_TRUE(settings_in({{"PATH", "/usr/bin"}, {launcher, "0"}}).empty()) << launcher;
}
