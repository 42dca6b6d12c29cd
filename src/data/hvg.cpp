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

/// Per (batch, gene): sum and sum of squares of expm1(x), and cells with x > 0.
/// Arithmetic as scanpy's sparse path: expm1 and the square in float, sums in
/// double.
struct GeneMoments {
  Vector<const std::int64_t> indptr;   // of the transpose: genes × cells
  Vector<const std::int64_t> indices;  // cell of each value
  Vector<const float> values;
  Vector<const std::int32_t> batch;    // per cell
  Matrix<double> sums, squares;        // batches × genes
  Matrix<std::int64_t> expressed;      // batches × genes
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t g) const {
    for (std::int64_t p = indptr(g); p < indptr(g + 1); ++p) {
      const std::int32_t b = batch(indices(p));
      const float x = values(p);
      const float v = kmath::expm1(x);
      sums(b, g) += static_cast<double>(v);
      squares(b, g) += static_cast<double>(v * v);
      if (x > 0.0f) ++expressed(b, g);
    }
  }
};

void run_gene_moments(const GeneMoments& k, std::int64_t genes) {
  Kokkos::parallel_for("kotml::data::hvg_gene_moments",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(0, genes), k);
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

  const HostCsr by_gene = transpose(log_data);
  GeneMoments k;
  k.indptr = detail::to_device("hvg indptr", by_gene.indptr);
  k.indices = detail::to_device("hvg indices", by_gene.indices);
  k.values = detail::to_device("hvg values", by_gene.values);
  k.batch = detail::to_device("hvg batch", batched ? batch : std::vector<std::int32_t>(log_data.rows, 0));
  k.sums = Matrix<double>("hvg sums", nb, genes);
  k.squares = Matrix<double>("hvg squares", nb, genes);
  k.expressed = Matrix<std::int64_t>("hvg expressed", nb, genes);
  if (genes > 0) run_gene_moments(k, genes);
  const auto sums = detail::to_host(k.sums);
  const auto squares = detail::to_host(k.squares);
  const auto expressed = detail::to_host(k.expressed);

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
