// pairOT's de_res_ova / de_res_ava tables: pseudobulk limma plus single-cell
// AUROC, from counts whose cells are spread over ranks and whose genes are
// exchanged into blocks (see kotml/map/de_tables.hpp).

#include "kotml/map/de_tables.hpp"

#include <Kokkos_Core.hpp>
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

/// AUROC pairs of the tested clusters: (first, second) with first's name
/// sorting first, as pairOT's categories do.
std::vector<std::pair<std::int32_t, std::int32_t>> auroc_pairs(const Pseudobulk& pb, const Labels& clusters) {
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
  const auto& tc = pb.tested_clusters;
  for (std::size_t i = 0; i < tc.size(); ++i)
    for (std::size_t j = i + 1; j < tc.size(); ++j) {
      const std::int32_t a = tc[i], b = tc[j];
      if (clusters.names[static_cast<std::size_t>(b)] < clusters.names[static_cast<std::size_t>(a)])
        pairs.emplace_back(b, a);
      else
        pairs.emplace_back(a, b);
    }
  return pairs;
}

/// Each cell's cluster code where the AUROC takes the cell (a tested cluster's
/// cell, kept by the downsampling), -1 elsewhere.
std::vector<std::int32_t> auroc_cells(const Pseudobulk& pb, const Labels& clusters, const DeOptions& options) {
  const auto n_codes = static_cast<std::int32_t>(clusters.names.size());
  std::vector<std::uint8_t> tested(static_cast<std::size_t>(n_codes), 0);
  for (const std::int32_t c : pb.tested_clusters) tested[static_cast<std::size_t>(c)] = 1;
  std::vector<std::int32_t> cluster_of_cell(clusters.codes.size(), -1);
  for (std::size_t i = 0; i < clusters.codes.size(); ++i)
    if (tested[static_cast<std::size_t>(clusters.codes[i])]) cluster_of_cell[i] = clusters.codes[i];
  const std::vector<std::uint8_t> keep =
      downsample_cells(cluster_of_cell, n_codes, options.n_samples_auroc, options.seed);
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (!keep[i]) cluster_of_cell[i] = -1;
  return cluster_of_cell;
}

/// Collective: every gene's group sums (groups × genes), from each rank's sums
/// of its block of genes (groups × block).
std::vector<float> gathered_group_sums(const dist::Comm& comm, const std::vector<float>& block_sums,
                                       const Pseudobulk& pb) {
  const std::int64_t groups = pb.n_groups, genes = pb.n_genes;
  std::vector<float> by_rank(static_cast<std::size_t>(groups * genes));
  comm.allgatherv(block_sums.data(), static_cast<std::int64_t>(block_sums.size()), by_rank.data(),
                  groups * genes);
  if (comm.size() == 1) return by_rank;
  std::vector<float> sums(by_rank.size());
  std::size_t offset = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const dist::Block block = dist::block_of(genes, comm.size(), r);
    const std::int64_t width = block.end - block.begin;
    for (std::int64_t g = 0; g < groups; ++g)
      for (std::int64_t j = 0; j < width; ++j)
        sums[static_cast<std::size_t>(g * genes + block.begin + j)] = by_rank[offset++];
  }
  return sums;
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
  return de_tables(dist::Comm(MPI_COMM_SELF), counts, 0, samples, clusters, options);
}

DeTables de_tables(const dist::Comm& comm, const data::HostCsr& counts, std::int64_t row_begin,
                   const Labels& samples, const Labels& clusters, const DeOptions& options) {
  Local local;
  Kokkos::Timer timer;
  data::HostCsr by_gene;  // this rank's block of genes × every cell
  comm.phase([&] {
    check_de_input(counts, row_begin, samples, clusters);
    local.pb = pseudobulk_groups(samples, clusters, counts.cols);
  });
  comm.phase([&] {
    by_gene =
        data::transpose_to_column_blocks(comm, counts, row_begin, static_cast<std::int64_t>(samples.codes.size()));
  });
  scale_group_sums(local.pb, gathered_group_sums(comm, group_sums(by_gene, local.pb), local.pb));
  local.seconds.pseudobulk = timer.seconds();

  comm.phase([&] {
    timer.reset();
    local.ova = limma_one_vs_all(local.pb, &local.warnings);
    local.ava = limma_all_vs_all(local.pb, &local.warnings);
    local.seconds.limma = timer.seconds();
    timer.reset();
    local.pairs = auroc_pairs(local.pb, clusters);
    local.auroc = auroc(by_gene, auroc_cells(local.pb, clusters, options),
                        static_cast<std::int32_t>(clusters.names.size()), local.pairs);
    local.seconds.auroc = timer.seconds();
  });
  timer.reset();
  // Blocks are gene-major and contiguous, so rank order is gene order.
  const std::vector<double> ova_auroc = comm.allgatherv(local.auroc.ova);
  const std::vector<double> ava_auroc = comm.allgatherv(local.auroc.ava);
  local.seconds.gather = timer.seconds();
  return assemble(local, clusters, ova_auroc, ava_auroc);
}

}  // namespace kotml::map
