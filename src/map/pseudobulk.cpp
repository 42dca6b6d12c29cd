// pairOT's pseudobulk: sums per (sample, cluster) group in float32, scaled to
// 1e5 and log1p-transformed (see kotml/map/pseudobulk.hpp).

#include "kotml/map/pseudobulk.hpp"

#include <cmath>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::map {

namespace {

void check_labels(const Labels& labels, std::int64_t n_cells, const std::string& what) {
  require(
      static_cast<std::int64_t>(labels.codes.size()) == n_cells, "", what,
      std::to_string(labels.codes.size()) + " labels for " + std::to_string(n_cells) + " cells");
  const auto n_names = static_cast<std::int64_t>(labels.names.size());
  for (std::size_t i = 0; i < labels.codes.size(); ++i) {
    const std::int32_t code = labels.codes[i];
    if (code < 0) throw Error("", what, "cell " + std::to_string(i) + " has no label");
    if (code >= n_names)
      throw Error("", what,
                  "cell " + std::to_string(i) + " has code " + std::to_string(code) +
                      " but there are " + std::to_string(n_names) + " categories");
  }
}

/// numpy's float32 pairwise sum (numpy/_core/src/umath/loops_utils.h.src,
/// FLOAT_pairwise_sum): below 8 terms a plain loop; up to 128 terms eight
/// interleaved accumulators, combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
/// then the remainder; above, the two halves (the first a multiple of 8 long).
float numpy_pairwise_sum(const float* a, std::int64_t n) {
  if (n < 8) {
    float res = -0.0f;
    for (std::int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    std::int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

/// A float32 row total as scipy's csr sum(axis=1) gives it: np.add.reduceat
/// over the row's stored (nonzero) values, i.e. the first value plus the
/// pairwise sum of the others.
float scipy_row_sum(const std::vector<float>& nonzero) {
  if (nonzero.empty()) return 0.0f;
  return nonzero[0] +
         numpy_pairwise_sum(nonzero.data() + 1, static_cast<std::int64_t>(nonzero.size()) - 1);
}

/// A consistent CSR of finite, non-negative values; its rows are cells
/// row_begin.. of the whole data set.
void check_counts(const data::HostCsr& counts, std::int64_t row_begin) {
  require(counts.rows >= 0 && counts.cols >= 0 &&
              static_cast<std::int64_t>(counts.indptr.size()) == counts.rows + 1 &&
              counts.indices.size() == counts.values.size() &&
              counts.indptr.back() == static_cast<std::int64_t>(counts.values.size()),
          "", "counts", "not a consistent CSR matrix");
  for (std::size_t k = 0; k < counts.values.size(); ++k) {
    const float v = counts.values[k];
    const std::int64_t column = counts.indices[k];
    if (column < 0 || column >= counts.cols)
      throw Error("", "counts",
                  "column index " + std::to_string(column) + " outside 0.." +
                      std::to_string(counts.cols - 1));
    if (!std::isfinite(v) || v < 0.0f) {
      std::int64_t row = 0;
      while (counts.indptr[static_cast<std::size_t>(row) + 1] <= static_cast<std::int64_t>(k))
        ++row;
      throw Error("", "counts",
                  "cell " + std::to_string(row_begin + row) + ", gene " + std::to_string(column) + " holds " +
                      (std::isnan(v) ? std::string("NaN") : std::to_string(v)) +
                      "; differential expression needs raw counts (finite and non-negative)");
    }
  }
}

}  // namespace

void check_de_input(const data::HostCsr& counts, const Labels& samples, const Labels& clusters) {
  check_counts(counts, 0);
  check_labels(samples, counts.rows, "sample labels");
  check_labels(clusters, counts.rows, "cluster labels");
}

void check_de_input(const data::HostCsr& counts, std::int64_t row_begin, const Labels& samples,
                    const Labels& clusters) {
  check_counts(counts, row_begin);
  const auto n_cells = static_cast<std::int64_t>(samples.codes.size());
  require(row_begin >= 0 && row_begin + counts.rows <= n_cells, "", "sample labels",
          std::to_string(n_cells) + " labels for cells " + std::to_string(row_begin) + ".." +
              std::to_string(row_begin + counts.rows - 1));
  check_labels(samples, n_cells, "sample labels");
  check_labels(clusters, n_cells, "cluster labels");
}

Pseudobulk pseudobulk(const data::HostCsr& counts, const Labels& samples, const Labels& clusters) {
  check_de_input(counts, samples, clusters);
  Pseudobulk out = pseudobulk_groups(samples, clusters, counts.cols);
  scale_group_sums(out, group_sums(data::transpose(counts), out));
  return out;
}

Pseudobulk pseudobulk_groups(const Labels& samples, const Labels& clusters, std::int64_t n_genes) {
  const auto n_cells = static_cast<std::int64_t>(samples.codes.size());
  check_labels(samples, n_cells, "sample labels");
  check_labels(clusters, n_cells, "cluster labels");
  const auto n_samples = static_cast<std::int64_t>(samples.names.size());
  const auto n_clusters = static_cast<std::int64_t>(clusters.names.size());

  // Cells per (sample, cluster): which clusters have a group of >= 2 cells.
  std::vector<std::int64_t> group_size(static_cast<std::size_t>(n_samples * n_clusters), 0);
  for (std::int64_t i = 0; i < n_cells; ++i)
    ++group_size[static_cast<std::size_t>(samples.codes[static_cast<std::size_t>(i)] * n_clusters +
                                          clusters.codes[static_cast<std::size_t>(i)])];
  Pseudobulk out;
  out.n_genes = n_genes;
  std::vector<std::uint8_t> has_cells(static_cast<std::size_t>(n_clusters), 0),
      tested(static_cast<std::size_t>(n_clusters), 0);
  for (std::int64_t s = 0; s < n_samples; ++s)
    for (std::int64_t c = 0; c < n_clusters; ++c) {
      const std::int64_t n = group_size[static_cast<std::size_t>(s * n_clusters + c)];
      if (n > 0) has_cells[static_cast<std::size_t>(c)] = 1;
      if (n >= 2) tested[static_cast<std::size_t>(c)] = 1;
    }
  for (std::int32_t c = 0; c < n_clusters; ++c) {
    if (tested[static_cast<std::size_t>(c)])
      out.tested_clusters.push_back(c);
    else if (has_cells[static_cast<std::size_t>(c)])
      out.skipped_clusters.push_back(c);
  }
  if (out.tested_clusters.size() < 2) {
    std::string reason = std::to_string(out.tested_clusters.size()) +
                         " cluster(s) with a pseudobulk group (a sample with at least 2 of its "
                         "cells); differential expression needs at least 2";
    throw Error("", "cluster labels", reason);
  }

  // First appearance, among the cells of tested clusters, of clusters (pairOT's
  // "c_i" renaming) and of samples.
  out.cluster_rank.assign(static_cast<std::size_t>(n_clusters), -1);
  std::vector<std::int32_t> sample_order, cluster_order;
  std::vector<std::uint8_t> sample_seen(static_cast<std::size_t>(n_samples), 0);
  for (std::int64_t i = 0; i < n_cells; ++i) {
    const std::int32_t c = clusters.codes[static_cast<std::size_t>(i)];
    if (!tested[static_cast<std::size_t>(c)]) continue;
    const std::int32_t s = samples.codes[static_cast<std::size_t>(i)];
    if (out.cluster_rank[static_cast<std::size_t>(c)] < 0) {
      out.cluster_rank[static_cast<std::size_t>(c)] =
          static_cast<std::int32_t>(cluster_order.size());
      cluster_order.push_back(c);
    }
    if (!sample_seen[static_cast<std::size_t>(s)]) {
      sample_seen[static_cast<std::size_t>(s)] = 1;
      sample_order.push_back(s);
    }
  }

  // Groups in pairOT's order; group index of each (sample, cluster), -1 if none.
  std::vector<std::int64_t> group_of(static_cast<std::size_t>(n_samples * n_clusters), -1);
  for (const std::int32_t s : sample_order)
    for (const std::int32_t c : cluster_order) {
      const auto key = static_cast<std::size_t>(s * n_clusters + c);
      if (group_size[key] < 2) continue;
      group_of[key] = static_cast<std::int64_t>(out.group_sample.size());
      out.group_sample.push_back(s);
      out.group_cluster.push_back(c);
      out.group_cells.push_back(group_size[key]);
    }
  out.n_groups = static_cast<std::int64_t>(out.group_sample.size());
  out.group_of_cell.resize(static_cast<std::size_t>(n_cells));
  for (std::size_t i = 0; i < out.group_of_cell.size(); ++i)
    out.group_of_cell[i] =
        group_of[static_cast<std::size_t>(samples.codes[i] * n_clusters + clusters.codes[i])];
  return out;
}

std::vector<float> group_sums(const data::HostCsr& by_gene, const Pseudobulk& groups) {
  require(by_gene.cols == static_cast<std::int64_t>(groups.group_of_cell.size()), "", "counts",
          std::to_string(by_gene.cols) + " cells for " + std::to_string(groups.group_of_cell.size()) +
              " labels");
  const std::int64_t width = by_gene.rows;
  std::vector<float> sums(static_cast<std::size_t>(groups.n_groups * width), 0.0f);
  for (std::int64_t j = 0; j < width; ++j)
    for (std::int64_t k = by_gene.indptr[static_cast<std::size_t>(j)];
         k < by_gene.indptr[static_cast<std::size_t>(j) + 1]; ++k) {
      const std::int64_t g =
          groups.group_of_cell[static_cast<std::size_t>(by_gene.indices[static_cast<std::size_t>(k)])];
      if (g >= 0) sums[static_cast<std::size_t>(g * width + j)] += by_gene.values[static_cast<std::size_t>(k)];
    }
  return sums;
}

void scale_group_sums(Pseudobulk& groups, const std::vector<float>& sums) {
  const std::int64_t n_genes = groups.n_genes;
  require(static_cast<std::int64_t>(sums.size()) == groups.n_groups * n_genes, "", "pseudobulk",
          "sums of the wrong size");
  groups.values.assign(static_cast<std::size_t>(groups.n_groups * n_genes), 0.0);
  std::vector<float> nonzero;
  for (std::int64_t g = 0; g < groups.n_groups; ++g) {
    const float* row = sums.data() + g * n_genes;
    nonzero.clear();
    for (std::int64_t j = 0; j < n_genes; ++j)
      if (row[j] != 0.0f) nonzero.push_back(row[j]);
    if (nonzero.empty()) continue;  // no stored entries in pairOT's CSR: zeros
    const float scale = 100000.0f / scipy_row_sum(nonzero);
    double* y = groups.values.data() + g * n_genes;
    for (std::int64_t j = 0; j < n_genes; ++j) {
      if (row[j] == 0.0f) continue;
      const float scaled = row[j] * scale;
      y[j] = static_cast<double>(std::log1p(scaled));
    }
  }
}

}  // namespace kotml::map
