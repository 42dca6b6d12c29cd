// The shared HVG selection split over ranks: every rank count gives the bits of
// one process, and each side is sampled to n_samples cells before the
// selection (pairOT's _get_shared_highly_variable_genes).

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kotml/data/hvg.hpp"
#include "kotml/data/normalize_total.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/map/genes.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;
using namespace kotml::map;

namespace {

/// The DE fixture's 322 cells × 100 genes, five times, copy c with its counts
/// times c + 1: 1610 cells, so that the stacked sample spans several chunks of
/// rows and every rank of 2 or 3 gets some.
data::HostCsr fixture_counts() {
  const auto f = io::h5::File::open_read(test::test_source_path("map/fixtures/de_fixture.h5"));
  const auto shape = f.read<std::int64_t>("counts/shape");
  const auto indptr = f.read<std::int64_t>("counts/indptr");
  const auto indices = f.read<io::SparseIndex>("counts/indices");
  const auto values = f.read<float>("counts/values");
  constexpr int copies = 5;
  data::HostCsr c;
  c.rows = copies * shape[0];
  c.cols = shape[1];
  c.indptr.assign(1, 0);
  for (int copy = 0; copy < copies; ++copy)
    for (std::int64_t r = 0; r < shape[0]; ++r) {
      for (std::int64_t p = indptr[r]; p < indptr[r + 1]; ++p) {
        c.indices.push_back(indices[static_cast<std::size_t>(p)]);
        c.values.push_back(static_cast<float>(copy + 1) * values[static_cast<std::size_t>(p)]);
      }
      c.indptr.push_back(static_cast<std::int64_t>(c.values.size()));
    }
  return c;
}

/// The rows of `x` in reverse order with every count doubled plus one where
/// stored: a second dataset with the same genes and other statistics.
data::HostCsr other_side(const data::HostCsr& x) {
  data::HostCsr y;
  y.rows = x.rows;
  y.cols = x.cols;
  y.indptr.assign(1, 0);
  for (std::int64_t r = x.rows - 1; r >= 0; --r) {
    for (std::int64_t p = x.indptr[r]; p < x.indptr[r + 1]; ++p) {
      y.indices.push_back(x.indices[static_cast<std::size_t>(p)]);
      y.values.push_back(2.0f * x.values[static_cast<std::size_t>(p)] + 1.0f);
    }
    y.indptr.push_back(static_cast<std::int64_t>(y.values.size()));
  }
  return y;
}

std::vector<std::string> gene_names(std::int64_t n) {
  std::vector<std::string> names;
  for (std::int64_t g = 0; g < n; ++g) names.push_back("g" + std::to_string(g));
  return names;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void expect_same(const data::HvgResult& a, const data::HvgResult& b) {
  EXPECT_TRUE(same_bits(a.means, b.means));
  EXPECT_TRUE(same_bits(a.dispersions, b.dispersions));
  EXPECT_TRUE(same_bits(a.dispersions_norm, b.dispersions_norm));
  EXPECT_EQ(a.highly_variable, b.highly_variable);
  EXPECT_EQ(a.highly_variable_nbatches, b.highly_variable_nbatches);
}

}  // namespace

TEST(SharedHvgSplit, EveryRankCountGivesOneProcessBits) {
  const dist::Comm world, self(MPI_COMM_SELF);
  const auto query = fixture_counts();
  const auto reference = other_side(query);
  const auto names = gene_names(query.cols);
  SharedHvgOptions o;
  o.n_top_genes = 20;
  // The rows are really split: the last rank has a block of its own.
  const auto last = data::hvg_row_block(2 * query.rows, query.cols, 2, world.size(), world.size() - 1);
  EXPECT_GT(last.end - last.begin, 0);
  EXPECT_EQ(last.end, 2 * query.rows);
  const auto one = shared_highly_variable_genes(self, query, reference, names, o);
  const auto all = shared_highly_variable_genes(world, query, reference, names, o);
  expect_same(one, all);
  EXPECT_EQ(static_cast<std::int64_t>(all.selected().size()), o.n_top_genes);
}

TEST(SharedHvgSplit, EachSideIsSampledBeforeTheSelection) {
  const dist::Comm world;
  const auto query = fixture_counts();
  const auto reference = other_side(query);
  const auto names = gene_names(query.cols);
  SharedHvgOptions o;
  o.n_top_genes = 20;
  o.n_samples = query.rows / 3;
  o.seed = 4;
  const auto sampled = shared_highly_variable_genes(world, query, reference, names, o);

  // The same selection by hand: the sampled rows of each side, stacked, then
  // normalised and log1p'd, on one process.
  data::HostCsr x;
  x.cols = query.cols;
  x.indptr.assign(1, 0);
  std::vector<std::int32_t> batch;
  for (int side = 0; side < 2; ++side) {
    const data::HostCsr& counts = side == 0 ? query : reference;
    for (const auto r : hvg_sample_rows(counts.rows, o, side)) {
      for (std::int64_t p = counts.indptr[r]; p < counts.indptr[r + 1]; ++p) {
        x.indices.push_back(counts.indices[static_cast<std::size_t>(p)]);
        x.values.push_back(counts.values[static_cast<std::size_t>(p)]);
      }
      x.indptr.push_back(static_cast<std::int64_t>(x.values.size()));
      batch.push_back(side);
      ++x.rows;
    }
  }
  ASSERT_EQ(x.rows, 2 * o.n_samples);
  data::normalize_total(x, o.target_sum);
  data::log1p(x);
  data::HvgOptions h;
  h.n_top_genes = o.n_top_genes;
  expect_same(sampled, data::highly_variable_genes(x, h, names, batch, 2));

  // And sampling changed the statistics.
  o.n_samples = 0;
  const auto whole = shared_highly_variable_genes(world, query, reference, names, o);
  EXPECT_FALSE(same_bits(whole.means, sampled.means));
}
