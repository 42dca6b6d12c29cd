// Highly variable genes, scanpy's 'seurat' flavour (see hvg.hpp). The per-gene
// moments are a Kokkos kernel over the genes of the transposed matrix; the
// binning and ranking are O(genes) bookkeeping on the host.

#include "kotml/data/hvg.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kotml/core/math.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// Per (batch, gene): sum and sum of squares of expm1(x), and cells with x > 0,
/// accumulated over fixed chunks of rows (one thread per chunk owns its slice),
/// then summed over chunks in order, so the result does not depend on the
/// thread count. Arithmetic as scanpy's sparse path: expm1 and the square in
/// float, sums in double.
using Partials = Kokkos::View<double***, Kokkos::LayoutRight, MemSpace>;

struct GeneMomentChunks {
  Vector<const std::int64_t> indptr;
  Vector<const io::SparseIndex> indices;
  Vector<const float> values;
  Vector<const std::int32_t> batch;  // per cell
  Partials partial;                  // chunks × (batches · genes) × 3
  std::int64_t rows, rows_per_chunk, genes;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t chunk) const {
    for (std::size_t e = 0; e < partial.extent(1); ++e)
      for (int k = 0; k < 3; ++k) partial(chunk, e, k) = 0.0;
    const std::int64_t begin = chunk * rows_per_chunk;
    const std::int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t base = static_cast<std::int64_t>(batch(r)) * genes;
      for (std::int64_t p = indptr(r); p < indptr(r + 1); ++p) {
        const float x = values(p);
        const float v = kmath::expm1(x);
        double* slot = &partial(chunk, base + indices(p), 0);
        slot[0] += static_cast<double>(v);
        slot[1] += static_cast<double>(v * v);
        if (x > 0.0f) slot[2] += 1.0;
      }
    }
  }
};

struct SumGeneChunks {
  Partials partial;
  Matrix<double> moments;  // (batches · genes) × 3
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t e) const {
    double m[3] = {0, 0, 0};
    for (std::size_t chunk = 0; chunk < partial.extent(0); ++chunk)
      for (int k = 0; k < 3; ++k) m[k] += partial(chunk, e, k);
    for (int k = 0; k < 3; ++k) moments(e, k) = m[k];
  }
};

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

void run_gene_moment_chunks(const GeneMomentChunks& k, std::int64_t chunks) {
  Kokkos::parallel_for("kotml::data::hvg_gene_moment_chunks", Range(0, chunks), k);
}
void run_sum_gene_chunks(const SumGeneChunks& k, std::int64_t entries) {
  Kokkos::parallel_for("kotml::data::hvg_sum_gene_chunks", Range(0, entries), k);
}

/// Chunks: at most 256 and at most ~16 M partial values, both functions of the
/// problem's shape only.
std::int64_t hvg_rows_per_chunk(std::int64_t rows, std::int64_t entries) {
  const std::int64_t by_memory = std::max<std::int64_t>(1, (std::int64_t(1) << 24) / std::max<std::int64_t>(1, 3 * entries));
  const std::int64_t chunks = std::min<std::int64_t>(256, by_memory);
  return std::max<std::int64_t>(512, (rows + chunks - 1) / chunks);
}

struct Frame {
  std::vector<double> means, dispersions, dispersions_norm;
  std::vector<std::uint8_t> highly_variable;
};

/// pandas.cut(x, bins=n) codes: equal-width edges by numpy.linspace, lowest edge
/// lowered by 0.1% of the range, intervals (a, b].
std::vector<std::int64_t> mean_bins(const std::vector<double>& x, std::int64_t n_bins) {
  double lo = *std::min_element(x.begin(), x.end());
  double hi = *std::max_element(x.begin(), x.end());
  std::vector<double> edges(static_cast<std::size_t>(n_bins + 1));
  const auto linspace = [&](double a, double b) {
    const double step = (b - a) / static_cast<double>(n_bins);
    for (std::int64_t i = 0; i <= n_bins; ++i) edges[i] = static_cast<double>(i) * step + a;
    edges[n_bins] = b;
  };
  if (lo == hi) {
    lo -= lo != 0 ? 0.001 * std::fabs(lo) : 0.001;
    hi += hi != 0 ? 0.001 * std::fabs(hi) : 0.001;
    linspace(lo, hi);
  } else {
    linspace(lo, hi);
    edges[0] -= (hi - lo) * 0.001;
  }
  std::vector<std::int64_t> code(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    // searchsorted(side='left'): edges strictly below x.
    const auto id = std::lower_bound(edges.begin(), edges.end(), x[i]) - edges.begin();
    code[i] = id - 1;
  }
  return code;
}

/// scanpy's _highly_variable_genes_single_batch on the genes given (mean and
/// unbiased variance of expm1 data per gene).
Frame seurat_frame(std::vector<double> mean, const std::vector<double>& var, const HvgOptions& o) {
  const std::size_t n = mean.size();
  Frame f;
  f.dispersions.resize(n);
  for (std::size_t g = 0; g < n; ++g) {
    if (mean[g] == 0.0) mean[g] = 1e-12;
    double d = var[g] / mean[g];
    if (d == 0.0) d = nan;
    f.dispersions[g] = std::log(d);  // NaN for NaN or negative (rounding) input, as numpy
    mean[g] = std::log1p(mean[g]);
  }
  f.means = mean;
  f.dispersions_norm.assign(n, nan);
  f.highly_variable.assign(n, 0);
  if (n == 0) return f;

  const auto code = mean_bins(f.means, o.n_bins);
  std::vector<double> sum(static_cast<std::size_t>(o.n_bins), 0.0);
  std::vector<std::int64_t> count(static_cast<std::size_t>(o.n_bins), 0);
  for (std::size_t g = 0; g < n; ++g)
    if (!std::isnan(f.dispersions[g])) {
      sum[code[g]] += f.dispersions[g];
      ++count[code[g]];
    }
  std::vector<double> avg(sum.size(), nan), dev(sum.size(), nan);
  for (std::size_t b = 0; b < sum.size(); ++b)
    if (count[b] > 0) avg[b] = sum[b] / static_cast<double>(count[b]);
  std::vector<double> ss(sum.size(), 0.0);
  for (std::size_t g = 0; g < n; ++g)
    if (!std::isnan(f.dispersions[g])) ss[code[g]] += (f.dispersions[g] - avg[code[g]]) * (f.dispersions[g] - avg[code[g]]);
  for (std::size_t b = 0; b < sum.size(); ++b)
    if (count[b] > 1) dev[b] = std::sqrt(ss[b] / static_cast<double>(count[b] - 1));
  for (std::size_t b = 0; b < sum.size(); ++b)
    if (std::isnan(dev[b])) {  // a bin with one gene: normalise to 1
      dev[b] = avg[b];
      avg[b] = 0.0;
    }
  for (std::size_t g = 0; g < n; ++g) f.dispersions_norm[g] = (f.dispersions[g] - avg[code[g]]) / dev[code[g]];

  if (o.n_top_genes > 0) {
    std::vector<double> finite;
    for (const double v : f.dispersions_norm)
      if (!std::isnan(v)) finite.push_back(v);
    if (finite.empty()) return f;
    const auto take = std::min<std::size_t>(static_cast<std::size_t>(o.n_top_genes), finite.size());
    std::sort(finite.begin(), finite.end(), std::greater<>());
    const double cutoff = finite[take - 1];
    for (std::size_t g = 0; g < n; ++g)
      f.highly_variable[g] = !std::isnan(f.dispersions_norm[g]) && f.dispersions_norm[g] >= cutoff;
  } else {
    for (std::size_t g = 0; g < n; ++g) {
      double d = f.dispersions_norm[g];
      // numpy.nan_to_num: NaN -> 0, ±inf -> ±largest double.
      if (std::isnan(d)) d = 0.0;
      if (std::isinf(d)) d = d > 0 ? std::numeric_limits<double>::max() : -std::numeric_limits<double>::max();
      f.highly_variable[g] = f.means[g] > o.min_mean && f.means[g] < o.max_mean && d > o.min_disp && d < o.max_disp;
    }
  }
  return f;
}

double nan_mean(const std::vector<double>& v) {
  double s = 0;
  std::int64_t n = 0;
  for (const double x : v)
    if (!std::isnan(x)) {
      s += x;
      ++n;
    }
  return n ? s / static_cast<double>(n) : nan;
}

}  // namespace

std::vector<std::int64_t> HvgResult::selected() const {
  std::vector<std::int64_t> out;
  for (std::size_t g = 0; g < highly_variable.size(); ++g)
    if (highly_variable[g]) out.push_back(static_cast<std::int64_t>(g));
  return out;
}

HvgResult highly_variable_genes(const HostCsr& log_data, const HvgOptions& options,
                                const std::vector<std::string>& gene_names, const std::vector<std::int32_t>& batch,
                                std::int64_t n_batches) {
  const std::int64_t genes = log_data.cols;
  const bool batched = !batch.empty();
  const std::int64_t nb = batched ? n_batches : 1;
  std::vector<std::int64_t> cells_in(static_cast<std::size_t>(nb), 0);
  if (batched)
    for (const auto b : batch) ++cells_in[b];
  else
    cells_in[0] = log_data.rows;

  const std::vector<std::int32_t> no_batches(batched ? 0 : static_cast<std::size_t>(log_data.rows), 0);
  GeneMomentChunks k;
  k.indptr = detail::stage(log_data.indptr);
  k.indices = detail::stage(log_data.indices);
  k.values = detail::stage(log_data.values);
  k.batch = detail::stage(batched ? batch : no_batches);
  k.rows = log_data.rows;
  k.genes = genes;
  k.rows_per_chunk = hvg_rows_per_chunk(log_data.rows, nb * genes);
  const std::int64_t chunks = (log_data.rows + k.rows_per_chunk - 1) / k.rows_per_chunk;
  k.partial = Partials(no_init("hvg partials"), chunks, nb * genes, 3);
  Matrix<double> moments_device(no_init("hvg moments"), nb * genes, 3);
  if (chunks > 0 && genes > 0) {
    run_gene_moment_chunks(k, chunks);
    run_sum_gene_chunks(SumGeneChunks{k.partial, moments_device}, nb * genes);
  } else {
    Kokkos::deep_copy(moments_device, 0.0);
  }
  const auto moments = detail::to_host(moments_device);
  std::vector<double> sums(nb * genes), squares(nb * genes);
  std::vector<std::int64_t> expressed(nb * genes);
  for (std::int64_t e = 0; e < nb * genes; ++e) {
    sums[e] = moments[e * 3];
    squares[e] = moments[e * 3 + 1];
    expressed[e] = static_cast<std::int64_t>(moments[e * 3 + 2]);
  }

  // One frame per batch over the genes it uses (all genes without batches).
  std::vector<Frame> frames;
  for (std::int64_t b = 0; b < nb; ++b) {
    const auto n = static_cast<double>(cells_in[b]);
    std::vector<std::int64_t> used;
    std::vector<double> mean, var;
    for (std::int64_t g = 0; g < genes; ++g) {
      if (batched && expressed[b * genes + g] == 0) continue;
      used.push_back(g);
      const double m = sums[b * genes + g] / n;
      double v = squares[b * genes + g] / n - m * m;
      if (cells_in[b] != 1) v *= n / (n - 1.0);
      mean.push_back(m);
      var.push_back(v);
    }
    const Frame part = seurat_frame(mean, var, options);
    Frame full;
    full.means.assign(genes, 0.0);
    full.dispersions.assign(genes, 0.0);
    full.dispersions_norm.assign(genes, 0.0);
    full.highly_variable.assign(genes, 0);
    for (std::size_t u = 0; u < used.size(); ++u) {
      full.means[used[u]] = part.means[u];
      full.dispersions[used[u]] = part.dispersions[u];
      full.dispersions_norm[used[u]] = part.dispersions_norm[u];
      full.highly_variable[used[u]] = part.highly_variable[u];
    }
    frames.push_back(std::move(full));
  }

  HvgResult r;
  if (!batched) {
    r.means = frames[0].means;
    r.dispersions = frames[0].dispersions;
    r.dispersions_norm = frames[0].dispersions_norm;
    r.highly_variable = frames[0].highly_variable;
    return r;
  }

  r.n_batches = nb;
  r.means.resize(genes);
  r.dispersions.resize(genes);
  r.dispersions_norm.resize(genes);
  r.highly_variable_nbatches.assign(genes, 0);
  r.highly_variable_intersection.assign(genes, 0);
  r.highly_variable.assign(genes, 0);
  for (std::int64_t g = 0; g < genes; ++g) {
    std::vector<double> m, d, dn;
    for (const auto& f : frames) {
      m.push_back(f.means[g]);
      d.push_back(f.dispersions[g]);
      dn.push_back(f.dispersions_norm[g]);
      r.highly_variable_nbatches[g] += f.highly_variable[g];
    }
    r.means[g] = nan_mean(m);
    r.dispersions[g] = nan_mean(d);
    r.dispersions_norm[g] = nan_mean(dn);
    r.highly_variable_intersection[g] = r.highly_variable_nbatches[g] == nb;
  }
  if (options.n_top_genes > 0) {
    // Ranked by batches selecting the gene, then by normalised dispersion (NaN
    // last); pandas keeps ties in the groupby's order, which is by gene name.
    std::vector<std::int64_t> order(static_cast<std::size_t>(genes));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t a, std::int64_t b) { return gene_names[a] < gene_names[b]; });
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      if (r.highly_variable_nbatches[a] != r.highly_variable_nbatches[b])
        return r.highly_variable_nbatches[a] > r.highly_variable_nbatches[b];
      const double da = r.dispersions_norm[a], db = r.dispersions_norm[b];
      if (std::isnan(da) || std::isnan(db)) return !std::isnan(da) && std::isnan(db);
      return da > db;
    });
    for (std::int64_t i = 0; i < std::min(genes, options.n_top_genes); ++i) r.highly_variable[order[i]] = 1;
  } else {
    for (std::int64_t g = 0; g < genes; ++g) {
      const double d = std::isnan(r.dispersions_norm[g]) ? 0.0 : r.dispersions_norm[g];
      r.highly_variable[g] =
          r.means[g] > options.min_mean && r.means[g] < options.max_mean && d > options.min_disp && d < options.max_disp;
    }
  }
  return r;
}

}  // namespace kotml::data
