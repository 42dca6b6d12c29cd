// Gene alignment and shared HVGs of a query/reference pair (see genes.hpp). The
// numerics are data/'s normalize_total, log1p and highly_variable_genes; this
// file only gathers their inputs.

#include "kotml/map/genes.hpp"

#include <algorithm>
#include <unordered_map>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/data/normalize_total.hpp"

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

/// Rows of a then rows of b (same columns).
/// Rows [begin, end) of the stacked sample (the query's sampled rows, then the
/// reference's), with their batches (query 0, reference 1).
data::HostCsr stacked_rows(const data::HostCsr& query, const std::vector<std::int64_t>& query_rows,
                           const data::HostCsr& reference, const std::vector<std::int64_t>& reference_rows,
                           std::int64_t begin, std::int64_t end, std::vector<std::int32_t>& batch) {
  data::HostCsr out;
  out.rows = end - begin;
  out.cols = query.cols;
  out.indptr.assign(1, 0);
  batch.clear();
  const auto n_query = static_cast<std::int64_t>(query_rows.size());
  for (std::int64_t i = begin; i < end; ++i) {
    const bool from_query = i < n_query;
    const data::HostCsr& side = from_query ? query : reference;
    const std::int64_t row = from_query ? query_rows[static_cast<std::size_t>(i)]
                                        : reference_rows[static_cast<std::size_t>(i - n_query)];
    const auto first = static_cast<std::size_t>(side.indptr[static_cast<std::size_t>(row)]);
    const auto last = static_cast<std::size_t>(side.indptr[static_cast<std::size_t>(row) + 1]);
    out.indices.insert(out.indices.end(), side.indices.begin() + first, side.indices.begin() + last);
    out.values.insert(out.values.end(), side.values.begin() + first, side.values.begin() + last);
    out.indptr.push_back(static_cast<std::int64_t>(out.values.size()));
    batch.push_back(from_query ? 0 : 1);
  }
  return out;
}

}  // namespace

std::vector<double> gene_totals(const data::HostCsr& counts) {
  std::vector<double> totals(static_cast<std::size_t>(counts.cols), 0.0);
  for (std::size_t p = 0; p < counts.values.size(); ++p) totals[counts.indices[p]] += counts.values[p];
  return totals;
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

data::HvgResult shared_highly_variable_genes(const dist::Comm& comm, const data::HostCsr& query_counts,
                                             const data::HostCsr& reference_counts,
                                             const std::vector<std::string>& gene_names,
                                             const SharedHvgOptions& options) {
  if (options.n_top_genes < 1) throw Error::option("n-top-genes", "must be at least 1");
  require(query_counts.cols == reference_counts.cols &&
              query_counts.cols == static_cast<std::int64_t>(gene_names.size()),
          "", "", "query and reference count matrices must have the same aligned genes");
  const auto query_rows = hvg_sample_rows(query_counts.rows, options, 0);
  const auto reference_rows = hvg_sample_rows(reference_counts.rows, options, 1);
  const auto total = static_cast<std::int64_t>(query_rows.size() + reference_rows.size());
  constexpr std::int64_t datasets = 2;
  const dist::Block own = data::hvg_row_block(total, query_counts.cols, datasets, comm.size(), comm.rank());
  std::vector<std::int32_t> batch;
  data::HostCsr x =
      stacked_rows(query_counts, query_rows, reference_counts, reference_rows, own.begin, own.end, batch);
  data::normalize_total(x, options.target_sum);
  data::log1p(x);
  data::HvgOptions hvg;
  hvg.n_top_genes = options.n_top_genes;
  return data::highly_variable_genes(comm, x, total, hvg, gene_names, batch, datasets);
}

}  // namespace kotml::map
