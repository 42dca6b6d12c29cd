// pairOT's per-gene Mann–Whitney AUROC (see kotml/map/auroc.hpp).

#include "kotml/map/auroc.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"

namespace kotml::map {

std::vector<std::uint8_t> downsample_cells(const std::vector<std::int32_t>& cluster_of_cell,
                                           std::int32_t n_clusters, std::int64_t n_samples,
                                           std::uint64_t seed) {
  std::vector<std::vector<std::int64_t>> members(static_cast<std::size_t>(n_clusters));
  for (std::size_t i = 0; i < cluster_of_cell.size(); ++i) {
    const std::int32_t c = cluster_of_cell[i];
    if (c < 0) continue;
    if (c >= n_clusters)
      throw Error("", "cluster labels",
                  "cell " + std::to_string(i) + " has code " + std::to_string(c) +
                      " but there are " + std::to_string(n_clusters) + " clusters");
    members[static_cast<std::size_t>(c)].push_back(static_cast<std::int64_t>(i));
  }
  std::vector<std::uint8_t> keep(cluster_of_cell.size(), 0);
  for (std::int32_t c = 0; c < n_clusters; ++c) {
    auto& cells = members[static_cast<std::size_t>(c)];
    const auto m = static_cast<std::int64_t>(cells.size());
    std::int64_t kept = m;
    if (n_samples > 0 && m > n_samples) {
      random::Stream stream(seed, random::Purpose::map_auroc_downsample,
                            static_cast<std::uint64_t>(c));
      for (std::int64_t k = 0; k < n_samples; ++k) {
        const auto j =
            k + static_cast<std::int64_t>(stream.below(static_cast<std::uint64_t>(m - k)));
        std::swap(cells[static_cast<std::size_t>(k)], cells[static_cast<std::size_t>(j)]);
      }
      kept = n_samples;
    }
    for (std::int64_t k = 0; k < kept; ++k)
      keep[static_cast<std::size_t>(cells[static_cast<std::size_t>(k)])] = 1;
  }
  return keep;
}

namespace {

struct Entry {
  float value;
  std::int32_t cluster;
};

/// Scratch of one chunk of genes.
struct Scratch {
  std::vector<Entry> entries;
  std::vector<float> by_cluster;             // entries' values grouped by cluster, ascending
  std::vector<std::int64_t> offset;          // n_clusters + 1
  std::vector<std::int64_t> nonzero;         // per cluster
  std::vector<std::int64_t> twice_rank_sum;  // per cluster (OVA)
};

/// U / (n1 n2) from 2 R₁ (exact integers), 0.5 when either side is empty.
double auc_from_rank_sum(std::int64_t twice_r1, std::int64_t n1, std::int64_t n2) {
  if (n1 == 0 || n2 == 0) return 0.5;
  const std::int64_t twice_u = twice_r1 - n1 * (n1 + 1);
  return (static_cast<double>(twice_u) * 0.5) / (static_cast<double>(n1) * static_cast<double>(n2));
}

}  // namespace

AurocResult auroc(const data::HostCsr& by_gene, const std::vector<std::int32_t>& cluster_of_cell,
                  std::int32_t n_clusters,
                  const std::vector<std::pair<std::int32_t, std::int32_t>>& pairs) {
  require(static_cast<std::int64_t>(cluster_of_cell.size()) == by_gene.cols, "", "cluster labels",
          std::to_string(cluster_of_cell.size()) + " labels for " + std::to_string(by_gene.cols) +
              " cells");
  require(n_clusters >= 0, "", "cluster labels", "negative number of clusters");
  std::vector<std::int64_t> cluster_size(static_cast<std::size_t>(n_clusters), 0);
  for (std::size_t i = 0; i < cluster_of_cell.size(); ++i) {
    const std::int32_t c = cluster_of_cell[i];
    if (c < -1 || c >= n_clusters)
      throw Error("", "cluster labels",
                  "cell " + std::to_string(i) + " has code " + std::to_string(c) +
                      " but there are " + std::to_string(n_clusters) + " clusters");
    if (c >= 0) ++cluster_size[static_cast<std::size_t>(c)];
  }
  for (const auto& [a, b] : pairs)
    require(
        a >= 0 && a < n_clusters && b >= 0 && b < n_clusters && a != b, "", "cluster pairs",
        "pair (" + std::to_string(a) + ", " + std::to_string(b) + ") is not two distinct clusters");
  for (std::int64_t g = 0; g < by_gene.rows; ++g)
    for (std::int64_t k = by_gene.indptr[static_cast<std::size_t>(g)];
         k < by_gene.indptr[static_cast<std::size_t>(g) + 1]; ++k) {
      const float v = by_gene.values[static_cast<std::size_t>(k)];
      if (!std::isfinite(v) || v < 0.0f)
        throw Error("", "counts",
                    "gene " + std::to_string(g) + ", cell " +
                        std::to_string(by_gene.indices[static_cast<std::size_t>(k)]) + " holds " +
                        (std::isnan(v) ? std::string("NaN") : std::to_string(v)) +
                        "; the AUROC needs raw counts (finite and non-negative)");
    }
  std::int64_t n_total = 0;
  for (const std::int64_t n : cluster_size) n_total += n;

  AurocResult out;
  out.n_genes = by_gene.rows;
  out.n_clusters = n_clusters;
  const auto n_pairs = static_cast<std::int64_t>(pairs.size());
  out.ova.assign(static_cast<std::size_t>(out.n_genes * n_clusters), 0.5);
  out.ava.assign(static_cast<std::size_t>(out.n_genes * n_pairs), 0.5);

  constexpr std::int64_t chunk = 32;
  const std::int64_t n_chunks = (out.n_genes + chunk - 1) / chunk;
  const std::int64_t* indptr = by_gene.indptr.data();
  const io::SparseIndex* indices = by_gene.indices.data();
  const float* values = by_gene.values.data();
  const std::int32_t* label = cluster_of_cell.data();
  double* ova = out.ova.data();
  double* ava = out.ava.data();
  const auto nc = static_cast<std::size_t>(n_clusters);
  // Each chunk of genes is one unit of work with its own scratch: genes never
  // share state, and every gene's numbers are computed the same way wherever it is.
  // Launched in slices, so that the progress line moves between them.
  const std::int64_t slice = std::max<std::int64_t>(1, (n_chunks + 99) / 100);
  log::Progress progress("DE: AUROC", out.n_genes, "genes");
  for (std::int64_t first = 0; first < n_chunks; first += slice) {
    progress.update(std::min(out.n_genes, first * chunk));
    Kokkos::parallel_for(
        "kotml::map::auroc", Kokkos::RangePolicy<HostExecSpace>(first, std::min(n_chunks, first + slice)),
        [&](std::int64_t ch) {
          Scratch s;
          s.offset.resize(nc + 1);
          s.nonzero.resize(nc);
          s.twice_rank_sum.resize(nc);
          const std::int64_t g_end = std::min(out.n_genes, (ch + 1) * chunk);
          for (std::int64_t g = ch * chunk; g < g_end; ++g) {
            s.entries.clear();
            for (std::int64_t k = indptr[g]; k < indptr[g + 1]; ++k) {
              const std::int32_t c = label[indices[k]];
              if (c < 0 || values[k] == 0.0f) continue;
              s.entries.push_back({values[k], c});
            }
            std::sort(s.entries.begin(), s.entries.end(), [](const Entry& a, const Entry& b) {
              return a.value < b.value || (a.value == b.value && a.cluster < b.cluster);
            });
            const auto m = static_cast<std::int64_t>(s.entries.size());
            const std::int64_t n_zero = n_total - m;
            std::fill(s.nonzero.begin(), s.nonzero.end(), 0);
            std::fill(s.twice_rank_sum.begin(), s.twice_rank_sum.end(), 0);
            // OVA: ranks among all included cells; a tie over positions [i, j)
            // of the nonzero values has rank n_zero + (i + 1 + j)/2.
            for (std::int64_t i = 0; i < m;) {
              std::int64_t j = i + 1;
              while (j < m && s.entries[static_cast<std::size_t>(j)].value ==
                                  s.entries[static_cast<std::size_t>(i)].value)
                ++j;
              const std::int64_t twice_rank = 2 * n_zero + i + 1 + j;
              for (std::int64_t e = i; e < j; ++e) {
                const auto c =
                    static_cast<std::size_t>(s.entries[static_cast<std::size_t>(e)].cluster);
                s.twice_rank_sum[c] += twice_rank;
                ++s.nonzero[c];
              }
              i = j;
            }
            for (std::size_t c = 0; c < nc; ++c) {
              const std::int64_t n1 = cluster_size[c];
              const std::int64_t twice_r1 = s.twice_rank_sum[c] + (n1 - s.nonzero[c]) * (n_zero + 1);
              ova[g * n_clusters + static_cast<std::int64_t>(c)] =
                  auc_from_rank_sum(twice_r1, n1, n_total - n1);
            }
            if (n_pairs == 0) continue;
            // Values grouped by cluster, each group ascending (a stable pass over
            // the sorted entries).
            s.offset[0] = 0;
            for (std::size_t c = 0; c < nc; ++c) s.offset[c + 1] = s.offset[c] + s.nonzero[c];
            s.by_cluster.resize(static_cast<std::size_t>(m));
            {
              std::vector<std::int64_t>& fill = s.twice_rank_sum;  // reused as write cursors
              for (std::size_t c = 0; c < nc; ++c) fill[c] = s.offset[c];
              for (const Entry& e : s.entries)
                s.by_cluster[static_cast<std::size_t>(fill[static_cast<std::size_t>(e.cluster)]++)] =
                    e.value;
            }
            // AVA: merge the two clusters' sorted values; ties across both share
            // their average rank.
            for (std::int64_t k = 0; k < n_pairs; ++k) {
              const auto a = static_cast<std::size_t>(pairs[static_cast<std::size_t>(k)].first);
              const auto b = static_cast<std::size_t>(pairs[static_cast<std::size_t>(k)].second);
              const float* va = s.by_cluster.data() + s.offset[a];
              const float* vb = s.by_cluster.data() + s.offset[b];
              const std::int64_t p = s.nonzero[a], q = s.nonzero[b];
              const std::int64_t na = cluster_size[a], nb = cluster_size[b];
              const std::int64_t zeros = na + nb - p - q;
              std::int64_t ia = 0, ib = 0, pos = 0, twice_r = 0;
              while (ia < p || ib < q) {
                const float v = ib >= q || (ia < p && va[ia] <= vb[ib]) ? va[ia] : vb[ib];
                std::int64_t ta = 0, tb = 0;
                while (ia + ta < p && va[ia + ta] == v) ++ta;
                while (ib + tb < q && vb[ib + tb] == v) ++tb;
                const std::int64_t tie = ta + tb;
                twice_r += ta * (2 * zeros + 2 * pos + tie + 1);
                pos += tie;
                ia += ta;
                ib += tb;
              }
              const std::int64_t twice_r1 = twice_r + (na - p) * (zeros + 1);
              ava[g * n_pairs + k] = auc_from_rank_sum(twice_r1, na, nb);
            }
          }
        });
    Kokkos::fence();
  }
  return out;
}

}  // namespace kotml::map
