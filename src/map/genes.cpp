// Gene alignment and shared HVGs of a query/reference pair (see genes.hpp). The
// numerics are data/'s normalize_total, log1p and highly_variable_genes; this
// file only gathers their inputs.

#include "kotml/map/genes.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/data/normalize_total.hpp"
#include "kotml/dist/exact_sum.hpp"

namespace kotml::map {
namespace {

std::unordered_map<std::string, std::int64_t> index_names(const std::vector<std::string>& names,
                                                          const std::string& label) {
  std::unordered_map<std::string, std::int64_t> index;
  index.reserve(names.size());
  for (std::size_t g = 0; g < names.size(); ++g)
    if (!index.emplace(names[g], static_cast<std::int64_t>(g)).second)
      throw Error(label, "var_names", "gene name '" + names[g] + "' appears more than once");
  return index;
}

}  // namespace

std::vector<double> gene_totals(const data::HostCsr& counts) {
  return gene_totals(dist::Comm(MPI_COMM_SELF), counts);
}

std::vector<double> gene_totals(const dist::Comm& comm, const data::HostCsr& rows) {
  // Integer counts of at most 2^24 each, over at most 2^29 rows, sum exactly in
  // double in any order: this rank's column sums go into the exact sum whole.
  // Other values go in one by one.
  constexpr float largest_term = 16777216.0f;
  constexpr std::int64_t most_rows = std::int64_t(1) << 29;
  bool exact = rows.rows <= most_rows;
  std::vector<double> partial(static_cast<std::size_t>(rows.cols), 0.0);
  for (std::size_t p = 0; p < rows.values.size(); ++p) {
    const float v = rows.values[p];
    exact = exact && std::trunc(v) == v && std::fabs(v) <= largest_term;
    partial[static_cast<std::size_t>(rows.indices[p])] += static_cast<double>(v);
  }
  dist::ExactSum total(static_cast<std::size_t>(rows.cols));
  // A count too large for the exact sum (2^116 and up: float holds it) fails on
  // its own rank: agreed on before the allreduce, so no rank waits in it.
  comm.phase([&] {
    if (exact) {
      total.add(partial);
    } else {
      for (std::size_t p = 0; p < rows.values.size(); ++p)
        total.add(static_cast<std::size_t>(rows.indices[p]), static_cast<double>(rows.values[p]));
    }
  });
  return total.allreduce(comm);
}

GeneAlignment align_genes(const std::vector<std::string>& query_names, const std::vector<double>& query_totals,
                          const std::vector<std::string>& reference_names,
                          const std::vector<double>& reference_totals, double min_counts,
                          const std::string& query_label, const std::string& reference_label) {
  require(query_names.size() == query_totals.size(), query_label, "var_names",
          "gene names and totals differ in length");
  require(reference_names.size() == reference_totals.size(), reference_label, "var_names",
          "gene names and totals differ in length");
  index_names(query_names, query_label);
  const auto reference = index_names(reference_names, reference_label);
  GeneAlignment out;
  for (std::size_t g = 0; g < query_names.size(); ++g) {
    if (!(query_totals[g] > min_counts)) continue;
    const auto it = reference.find(query_names[g]);
    if (it == reference.end() || !(reference_totals[static_cast<std::size_t>(it->second)] > min_counts)) continue;
    out.names.push_back(query_names[g]);
    out.query_index.push_back(static_cast<std::int64_t>(g));
    out.reference_index.push_back(it->second);
  }
  return out;
}

std::vector<std::int64_t> hvg_sample_rows(std::int64_t n_obs, const SharedHvgOptions& options, int dataset) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n_obs));
  for (std::int64_t i = 0; i < n_obs; ++i) rows[static_cast<std::size_t>(i)] = i;
  if (options.n_samples <= 0 || n_obs <= options.n_samples) return rows;
  random::Stream s(options.seed, random::Purpose::subsample,
                   (std::uint64_t(1) << 63) + static_cast<std::uint64_t>(dataset));
  for (std::int64_t i = 0; i < options.n_samples; ++i) {
    const auto j = i + static_cast<std::int64_t>(s.below(static_cast<std::uint64_t>(n_obs - i)));
    std::swap(rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
  }
  rows.resize(static_cast<std::size_t>(options.n_samples));
  std::sort(rows.begin(), rows.end());
  return rows;
}

HvgSampleShare hvg_sample_share(std::int64_t query_cells, std::int64_t reference_cells, std::int64_t genes,
                                const SharedHvgOptions& options, int ranks, int rank) {
  const auto query_rows = hvg_sample_rows(query_cells, options, 0);
  const auto reference_rows = hvg_sample_rows(reference_cells, options, 1);
  const auto n_query = static_cast<std::int64_t>(query_rows.size());
  HvgSampleShare share;
  share.total = n_query + static_cast<std::int64_t>(reference_rows.size());
  constexpr std::int64_t datasets = 2;
  const dist::Block own = data::hvg_row_block(share.total, genes, datasets, ranks, rank);
  const auto part = [&](const std::vector<std::int64_t>& rows, std::int64_t offset) {
    const auto size = static_cast<std::int64_t>(rows.size());
    const std::int64_t begin = std::clamp(own.begin - offset, std::int64_t(0), size);
    const std::int64_t end = std::clamp(own.end - offset, std::int64_t(0), size);
    return std::vector<std::int64_t>(rows.begin() + begin, rows.begin() + end);
  };
  share.query_rows = part(query_rows, 0);
  share.reference_rows = part(reference_rows, n_query);
  return share;
}

data::HvgResult shared_highly_variable_genes(const dist::Comm& comm, const data::HostCsr& query_counts,
                                             const data::HostCsr& reference_counts,
                                             const std::vector<std::string>& gene_names,
                                             const SharedHvgOptions& options) {
  require(query_counts.cols == reference_counts.cols &&
              query_counts.cols == static_cast<std::int64_t>(gene_names.size()),
          "", "", "query and reference count matrices must have the same aligned genes");
  const auto share = hvg_sample_share(query_counts.rows, reference_counts.rows,
                                      static_cast<std::int64_t>(gene_names.size()), options, comm.size(), comm.rank());
  data::HostCsr rows;
  rows.cols = query_counts.cols;
  rows.indptr.assign(1, 0);
  for (const std::int64_t row : share.query_rows) data::append_row(rows, query_counts, row);
  for (const std::int64_t row : share.reference_rows) data::append_row(rows, reference_counts, row);
  return shared_highly_variable_genes(comm, share, std::move(rows), gene_names, options);
}

data::HvgResult shared_highly_variable_genes(const dist::Comm& comm, const HvgSampleShare& share,
                                             data::HostCsr rows, const std::vector<std::string>& gene_names,
                                             const SharedHvgOptions& options) {
  if (options.n_top_genes < 1) throw Error::option("n-top-genes", "must be at least 1");
  require(rows.cols == static_cast<std::int64_t>(gene_names.size()) &&
              rows.rows == static_cast<std::int64_t>(share.query_rows.size() + share.reference_rows.size()),
          "", "", "the HVG sample's rows and the aligned genes do not match");
  std::vector<std::int32_t> batch(share.query_rows.size(), 0);
  batch.resize(share.query_rows.size() + share.reference_rows.size(), 1);
  data::normalize_total(rows, options.target_sum);
  data::log1p(rows);
  data::HvgOptions hvg;
  hvg.n_top_genes = options.n_top_genes;
  constexpr std::int64_t datasets = 2;
  return data::highly_variable_genes(comm, rows, share.total, hvg, gene_names, batch, datasets);
}

}  // namespace kotml::map
