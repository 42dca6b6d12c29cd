// pairOT's de_res_ova / de_res_ava tables: pseudobulk limma plus single-cell
// AUROC, the AUROC's genes split over ranks (see kotml/map/de_tables.hpp).

#include "kotml/map/de_tables.hpp"

#include <Kokkos_Core.hpp>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "kotml/core/error.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/map/auroc.hpp"
#include "kotml/map/limma.hpp"

namespace kotml::map {

const DeTable& DeTables::one_vs_all(std::int32_t cluster) const {
  require(cluster >= 0 && static_cast<std::size_t>(cluster) < ova.size() &&
              !ova[static_cast<std::size_t>(cluster)].empty(),
          "", "DE tables", "no one-vs-all table for cluster code " + std::to_string(cluster));
  return ova[static_cast<std::size_t>(cluster)];
}

const DeTable& DeTables::all_vs_all(std::int32_t cluster, std::int32_t other) const {
  const auto n = static_cast<std::int64_t>(cluster_names.size());
  require(cluster >= 0 && cluster < n && other >= 0 && other < n &&
              !ava[static_cast<std::size_t>(cluster * n + other)].empty(),
          "", "DE tables",
          "no all-vs-all table for cluster codes " + std::to_string(cluster) + " vs " +
              std::to_string(other));
  return ava[static_cast<std::size_t>(cluster * n + other)];
}

namespace {

/// What every rank computes, plus the AUROC of its own genes.
struct Local {
  Pseudobulk pb;
  std::vector<DeStats> ova;
  AllVsAll ava;
  /// AUROC pairs: (first, second) with first's name sorting first, as pairOT's
  /// categories do.
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  AurocResult auroc;
  std::vector<std::string> warnings;
  DeSeconds seconds;
};

Local compute_local(const data::HostCsr& counts, const Labels& samples, const Labels& clusters,
                    const DeOptions& options, std::int64_t gene_begin, std::int64_t gene_end) {
  Local local;
  Kokkos::Timer timer;
  local.pb = pseudobulk(counts, samples, clusters);
  local.seconds.pseudobulk = timer.seconds();

  timer.reset();
  local.ova = limma_one_vs_all(local.pb, &local.warnings);
  local.ava = limma_all_vs_all(local.pb, &local.warnings);
  local.seconds.limma = timer.seconds();

  timer.reset();
  const auto n_codes = static_cast<std::int32_t>(clusters.names.size());
  std::vector<std::uint8_t> tested(static_cast<std::size_t>(n_codes), 0);
  for (const std::int32_t c : local.pb.tested_clusters) tested[static_cast<std::size_t>(c)] = 1;
  const auto& tc = local.pb.tested_clusters;
  for (std::size_t i = 0; i < tc.size(); ++i)
    for (std::size_t j = i + 1; j < tc.size(); ++j) {
      const std::int32_t a = tc[i], b = tc[j];
      if (clusters.names[static_cast<std::size_t>(b)] < clusters.names[static_cast<std::size_t>(a)])
        local.pairs.emplace_back(b, a);
      else
        local.pairs.emplace_back(a, b);
    }
  std::vector<std::int32_t> cluster_of_cell(clusters.codes.size(), -1);
  for (std::size_t i = 0; i < clusters.codes.size(); ++i)
    if (tested[static_cast<std::size_t>(clusters.codes[i])]) cluster_of_cell[i] = clusters.codes[i];
  const std::vector<std::uint8_t> keep =
      downsample_cells(cluster_of_cell, n_codes, options.n_samples_auroc, options.seed);
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (!keep[i]) cluster_of_cell[i] = -1;
  data::HostCsr by_gene;
  if (gene_begin == 0 && gene_end == counts.cols) {
    by_gene = data::transpose(counts);
  } else {
    std::vector<std::int64_t> columns(static_cast<std::size_t>(gene_end - gene_begin));
    std::iota(columns.begin(), columns.end(), gene_begin);
    by_gene = data::transpose(data::select_columns(counts, columns));
  }
  local.auroc = auroc(by_gene, cluster_of_cell, n_codes, local.pairs);
  local.seconds.auroc = timer.seconds();
  return local;
}

/// pairOT's float32 AUROC of the second of two clusters: 1 − float(first) in
/// double, stored as float.
float second_of_two(double first) {
  return static_cast<float>(1.0 - static_cast<double>(static_cast<float>(first)));
}

DeTables assemble(const Local& local, const Labels& clusters, const std::vector<double>& ova_auroc,
                  const std::vector<double>& ava_auroc) {
  const Pseudobulk& pb = local.pb;
  const auto n_codes = static_cast<std::int64_t>(clusters.names.size());
  const auto n_genes = static_cast<std::size_t>(pb.n_genes);
  const auto n_pairs = local.pairs.size();
  DeTables out;
  out.n_genes = pb.n_genes;
  out.cluster_names = clusters.names;
  out.clusters = pb.tested_clusters;
  out.skipped_clusters = pb.skipped_clusters;
  out.warnings = local.warnings;
  out.seconds = local.seconds;
  out.ova.resize(static_cast<std::size_t>(n_codes));
  out.ova_prior.resize(static_cast<std::size_t>(n_codes));
  out.ava.resize(static_cast<std::size_t>(n_codes * n_codes));

  // OVA: with exactly two clusters pairOT derives the second's AUROC from the first's.
  std::int32_t second = -1;
  if (pb.tested_clusters.size() == 2) second = local.pairs[0].second;
  for (const std::int32_t c : pb.tested_clusters) {
    const DeStats& s = local.ova[static_cast<std::size_t>(c)];
    DeTable& t = out.ova[static_cast<std::size_t>(c)];
    t.logfc = s.logfc;
    t.p_value = s.p_value;
    t.adj_p_value = s.adj_p_value;
    t.auroc.resize(n_genes);
    const std::int32_t source = c == second ? local.pairs[0].first : c;
    for (std::size_t g = 0; g < n_genes; ++g) {
      const double a =
          ova_auroc[g * static_cast<std::size_t>(n_codes) + static_cast<std::size_t>(source)];
      t.auroc[g] = c == second ? second_of_two(a) : static_cast<float>(a);
    }
    out.ova_prior[static_cast<std::size_t>(c)] = {s.s2_prior, s.df_prior, s.df_total};
  }

  // AVA: limma's contrast in R's level order, AUROC in name order; the other
  // direction negates logFC and takes the complementary AUROC.
  const auto pair_index = [&](std::int32_t a, std::int32_t b) {
    for (std::size_t k = 0; k < n_pairs; ++k)
      if ((local.pairs[k].first == a && local.pairs[k].second == b) ||
          (local.pairs[k].first == b && local.pairs[k].second == a))
        return k;
    throw std::logic_error("kotml::map::de_tables: no AUROC pair for a limma contrast");
  };
  for (std::size_t k = 0; k < local.ava.stats.size(); ++k) {
    const std::int32_t a = local.ava.first[k], b = local.ava.second[k];
    const DeStats& s = local.ava.stats[k];
    const std::size_t p = pair_index(a, b);
    for (const bool forward : {true, false}) {
      const std::int32_t from = forward ? a : b, to = forward ? b : a;
      DeTable& t = out.ava[static_cast<std::size_t>(from * n_codes + to)];
      t.logfc.resize(n_genes);
      for (std::size_t g = 0; g < n_genes; ++g) t.logfc[g] = forward ? s.logfc[g] : -s.logfc[g];
      t.p_value = s.p_value;
      t.adj_p_value = s.adj_p_value;
      t.auroc.resize(n_genes);
      const bool first = local.pairs[p].first == from;
      for (std::size_t g = 0; g < n_genes; ++g) {
        const double x = ava_auroc[g * n_pairs + p];
        t.auroc[g] = first ? static_cast<float>(x) : second_of_two(x);
      }
    }
    if (k == 0) out.ava_prior = {s.s2_prior, s.df_prior, s.df_total};
  }
  return out;
}

}  // namespace

DeTables de_tables(const data::HostCsr& counts, const Labels& samples, const Labels& clusters,
                   const DeOptions& options) {
  const Local local = compute_local(counts, samples, clusters, options, 0, counts.cols);
  return assemble(local, clusters, local.auroc.ova, local.auroc.ava);
}

DeTables de_tables(const dist::Comm& comm, const data::HostCsr& counts, const Labels& samples,
                   const Labels& clusters, const DeOptions& options) {
  Local local;
  comm.phase([&] {
    const dist::Block block = dist::block_of(counts.cols, comm.size(), comm.rank());
    local = compute_local(counts, samples, clusters, options, block.begin, block.end);
  });
  Kokkos::Timer timer;
  // Blocks are gene-major and contiguous, so rank order is gene order.
  const std::vector<double> ova_auroc = comm.allgatherv(local.auroc.ova);
  const std::vector<double> ava_auroc = comm.allgatherv(local.auroc.ava);
  local.seconds.gather = timer.seconds();
  DeTables out = assemble(local, clusters, ova_auroc, ava_auroc);
  return out;
}

}  // namespace kotml::map
