// FOSCTTM of a paired matching (kotml/gw/quality.hpp): against a direct count
// from its definition, zero for the identity plan, the same value on 1, 2 and 3
// ranks, and the errors of a plan that cannot be scored.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/gw/quality.hpp"
#include "kotml/gw/row_partition.hpp"

using namespace kotml;

namespace {

struct PairedProblem {
  std::int64_t n = 0, d = 0;
  std::vector<double> plan;    // n × n, row-major
  std::vector<double> target;  // n × d
};

PairedProblem random_problem(std::int64_t n, std::int64_t d, unsigned seed) {
  PairedProblem p{n, d, std::vector<double>(static_cast<std::size_t>(n * n)),
                  std::vector<double>(static_cast<std::size_t>(n * d))};
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (auto& y : p.target) y = uniform(random);
  // Mostly near the diagonal, as a good matching is, with some mass elsewhere.
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      p.plan[static_cast<std::size_t>(i * n + j)] =
          uniform(random) * (std::abs(i - j) <= 2 ? 1.0 : 0.02) * (uniform(random) < 0.7 ? 1.0 : 0.0);
  return p;
}

/// SCOT's definition, counted directly on the host.
double foscttm_by_definition(const PairedProblem& p) {
  const std::int64_t n = p.n, d = p.d;
  std::vector<double> projected(static_cast<std::size_t>(n * d), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    double mass = 0;
    for (std::int64_t j = 0; j < n; ++j) mass += p.plan[static_cast<std::size_t>(i * n + j)];
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t c = 0; c < d; ++c)
        projected[static_cast<std::size_t>(i * d + c)] +=
            p.plan[static_cast<std::size_t>(i * n + j)] * p.target[static_cast<std::size_t>(j * d + c)];
    for (std::int64_t c = 0; c < d; ++c) projected[static_cast<std::size_t>(i * d + c)] /= mass;
  }
  auto distance = [&](std::int64_t i, std::int64_t j) {
    double sum = 0;
    for (std::int64_t c = 0; c < d; ++c) {
      const double diff = projected[static_cast<std::size_t>(i * d + c)] - p.target[static_cast<std::size_t>(j * d + c)];
      sum += diff * diff;
    }
    return std::sqrt(sum);
  };
  double rows = 0, columns = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t closer = 0;
    for (std::int64_t j = 0; j < n; ++j) closer += distance(i, j) < distance(i, i) ? 1 : 0;
    rows += static_cast<double>(closer) / static_cast<double>(n);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t closer = 0;
    for (std::int64_t i = 0; i < n; ++i) closer += distance(i, j) < distance(j, j) ? 1 : 0;
    columns += static_cast<double>(closer) / static_cast<double>(n);
  }
  return (rows / static_cast<double>(n) + columns / static_cast<double>(n)) / 2;
}

/// This rank's plan rows and the target, on the device, then the library's value.
double foscttm_on_ranks(const dist::Comm& comm, const PairedProblem& p) {
  const auto rows = gw::plan_rows(p.n, comm.size(), comm.rank());
  Matrix<double> plan("plan", rows.end - rows.begin, p.n);
  auto plan_h = Kokkos::create_mirror_view(plan);
  for (std::int64_t i = rows.begin; i < rows.end; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) plan_h(i - rows.begin, j) = p.plan[static_cast<std::size_t>(i * p.n + j)];
  Kokkos::deep_copy(plan, plan_h);
  Matrix<double> target("target", p.n, p.d);
  auto target_h = Kokkos::create_mirror_view(target);
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t c = 0; c < p.d; ++c) target_h(j, c) = p.target[static_cast<std::size_t>(j * p.d + c)];
  Kokkos::deep_copy(target, target_h);
  return gw::foscttm(comm, plan, rows.begin, p.n, target);
}

}  // namespace

TEST(Foscttm, EqualsTheDefinitionOnEveryRankCount) {
  const dist::Comm world;
  for (const unsigned seed : {1u, 2u, 3u}) {
    const auto problem = random_problem(97, 5, seed);
    const double expected = foscttm_by_definition(problem);
    EXPECT_GT(expected, 0.0);
    // The same counts; the definition divides its fractions in another order.
    const double distributed = foscttm_on_ranks(world, problem);
    EXPECT_DOUBLE_EQ(distributed, expected) << "seed " << seed;
    // Alone on this rank: the same bits as the distributed value.
    EXPECT_EQ(foscttm_on_ranks(dist::Comm(MPI_COMM_SELF), problem), distributed);
  }
}

TEST(Foscttm, IdentityPlanIsZeroAndAReversedOneIsFar) {
  const dist::Comm world;
  PairedProblem p = random_problem(40, 3, 7);
  std::fill(p.plan.begin(), p.plan.end(), 0.0);
  for (std::int64_t i = 0; i < p.n; ++i) p.plan[static_cast<std::size_t>(i * p.n + i)] = 1.0 / 40;
  EXPECT_EQ(foscttm_on_ranks(world, p), 0.0);
  // Points on a line, each sent to its mirror image: a projection is nearer
  // most points than its own partner.
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t c = 0; c < p.d; ++c) p.target[static_cast<std::size_t>(j * p.d + c)] = static_cast<double>(j);
  std::fill(p.plan.begin(), p.plan.end(), 0.0);
  for (std::int64_t i = 0; i < p.n; ++i) p.plan[static_cast<std::size_t>(i * p.n + (p.n - 1 - i))] = 1.0 / 40;
  const double reversed = foscttm_on_ranks(world, p);
  EXPECT_DOUBLE_EQ(reversed, foscttm_by_definition(p));
  EXPECT_GT(reversed, 0.4);
}

TEST(Foscttm, UnpairedCloudsAndEmptyRowsAreRefused) {
  const dist::Comm world;
  const auto p = random_problem(20, 2, 5);
  const auto rows = gw::plan_rows(20, world.size(), world.rank());
  Matrix<double> plan("plan", rows.end - rows.begin, 21);
  Matrix<double> target("target", 21, 2);
  EXPECT_THROW(gw::foscttm(world, plan, rows.begin, 20, target), dist::CollectiveError);
  // Every plan row empty: no barycentre.
  Matrix<double> empty("plan", rows.end - rows.begin, 20);
  Matrix<double> points("target", 20, 2);
  try {
    gw::foscttm(world, empty, rows.begin, 20, points);
    ADD_FAILURE() << "an all-zero plan was scored";
  } catch (const dist::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("no mass"), std::string::npos) << e.what();
  }
}
