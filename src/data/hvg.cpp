// Highly variable genes, scanpy's 'seurat' flavour (see hvg.hpp). The per-gene
// moments are a Kokkos kernel over the genes of the transposed matrix; the
// binning and ranking are O(genes) bookkeeping on the host.

#include "kotml/data/hvg.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/dist/fixed_point.hpp"
#include "kotml/dist/partition.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// Per (batch, gene): sum and sum of squares of expm1(x), and cells with x > 0,
/// accumulated in double over fixed chunks of rows (one thread per chunk owns
/// its slice; the chunks are a function of the whole input's shape), then the
/// chunks' sums added exactly (dist::WideFixed) over chunks and ranks, so the
/// result depends on neither the thread count nor the rank count. Arithmetic
/// as scanpy's sparse path: expm1 and the square in float, sums in double.
using Partials = Kokkos::View<double***, Kokkos::LayoutRight, MemSpace>;
using MomentFixed = dist::WideFixed;

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

/// Per moment value v = e·3 + k: the chunks' partial sums added exactly into
/// wide fixed point (one thread owns each value's limbs), so that the total
/// does not depend on how the chunks are spread over ranks. A partial that
/// cannot be held (an overflowed float square) poisons its total.
struct DepositGeneChunks {
  Partials partial;
  Kokkos::View<std::int64_t*, MemSpace> limbs;  // values × MomentFixed::limbs
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t v) const {
    std::int64_t* limb = &limbs(v * MomentFixed::limbs);
    for (int l = 0; l < MomentFixed::limbs; ++l) limb[l] = 0;
    const std::int64_t e = v / 3;
    const int k = static_cast<int>(v % 3);
    for (std::size_t chunk = 0; chunk < partial.extent(0); ++chunk)
      if (!MomentFixed::deposit(limb, partial(chunk, e, k))) MomentFixed::poison(limb);
  }
};

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

void run_gene_moment_chunks(const GeneMomentChunks& k, std::int64_t chunks) {
  Kokkos::parallel_for("kotml::data::hvg_gene_moment_chunks", Range(0, chunks), k);
}
void run_deposit_gene_chunks(const DepositGeneChunks& k, std::int64_t values) {
  Kokkos::parallel_for("kotml::data::hvg_deposit_gene_chunks", Range(0, values), k);
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

namespace {

/// The per-(batch, gene) moments over all rows of all ranks.
struct GeneMoments {
  std::vector<double> sums, squares;
  std::vector<std::int64_t> expressed, cells_in;
};

/// `comm` null: this process holds every row. Otherwise `log_rows` are this
/// rank's rows, whole chunks of `rows_per_chunk` (hvg_row_block). Collective
/// when comm is given.
GeneMoments gene_moments(const dist::Comm* comm, const HostCsr& log_rows, std::int64_t rows_per_chunk,
                         const std::vector<std::int32_t>& batch, std::int64_t nb) {
  const std::int64_t genes = log_rows.cols, entries = nb * genes;
  const bool batched = !batch.empty();
  GeneMoments out;
  out.cells_in.assign(static_cast<std::size_t>(nb), 0);
  if (batched)
    for (const auto b : batch) ++out.cells_in[static_cast<std::size_t>(b)];
  else
    out.cells_in[0] = log_rows.rows;
  if (comm != nullptr && comm->size() > 1) comm->sum_in_place(out.cells_in.data(), out.cells_in.size());

  const std::vector<std::int32_t> no_batches(batched ? 0 : static_cast<std::size_t>(log_rows.rows), 0);
  GeneMomentChunks k;
  k.indptr = detail::stage(log_rows.indptr);
  k.indices = detail::stage(log_rows.indices);
  k.values = detail::stage(log_rows.values);
  k.batch = detail::stage(batched ? batch : no_batches);
  k.rows = log_rows.rows;
  k.genes = genes;
  k.rows_per_chunk = rows_per_chunk;
  const std::int64_t chunks = (log_rows.rows + rows_per_chunk - 1) / rows_per_chunk;
  k.partial = Partials(no_init("kotml::data::hvg_partials"), chunks, entries, 3);
  Kokkos::View<std::int64_t*, MemSpace> limbs(no_init("kotml::data::hvg_moment_limbs"),
                                              entries * 3 * MomentFixed::limbs);
  if (chunks > 0 && genes > 0) run_gene_moment_chunks(k, chunks);
  run_deposit_gene_chunks(DepositGeneChunks{k.partial, limbs}, entries * 3);
  const auto totals = dist::allreduce_fixed<MomentFixed>(comm, limbs, entries * 3);

  out.sums.resize(static_cast<std::size_t>(entries));
  out.squares.resize(static_cast<std::size_t>(entries));
  out.expressed.resize(static_cast<std::size_t>(entries));
  constexpr double largest_moment = 0x1p100;  // a poisoned total is far above
  for (std::int64_t e = 0; e < entries; ++e) {
    const double square = totals[static_cast<std::size_t>(3 * e + 1)];
    if (!(square < largest_moment))
      throw Error("", "X",
                  "the variance of gene " + std::to_string(e % genes) +
                      " overflows: its normalised values are too large to square in float32");
    out.sums[static_cast<std::size_t>(e)] = totals[static_cast<std::size_t>(3 * e)];
    out.squares[static_cast<std::size_t>(e)] = square;
    out.expressed[static_cast<std::size_t>(e)] = static_cast<std::int64_t>(totals[static_cast<std::size_t>(3 * e + 2)]);
  }
  return out;
}

HvgResult select_genes(const GeneMoments& moments, std::int64_t genes, const HvgOptions& options,
                       const std::vector<std::string>& gene_names, bool batched, std::int64_t nb) {
  const auto& sums = moments.sums;
  const auto& squares = moments.squares;
  const auto& expressed = moments.expressed;
  const auto& cells_in = moments.cells_in;

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

}  // namespace

dist::Block hvg_row_block(std::int64_t rows, std::int64_t genes, std::int64_t n_batches, int ranks, int rank) {
  const std::int64_t per_chunk = hvg_rows_per_chunk(rows, std::max<std::int64_t>(n_batches, 1) * genes);
  const dist::Block chunks = dist::block_of((rows + per_chunk - 1) / per_chunk, ranks, rank);
  return {std::min(chunks.begin * per_chunk, rows), std::min(chunks.end * per_chunk, rows)};
}

HvgResult highly_variable_genes(const HostCsr& log_data, const HvgOptions& options,
                                const std::vector<std::string>& gene_names, const std::vector<std::int32_t>& batch,
                                std::int64_t n_batches) {
  const bool batched = !batch.empty();
  const std::int64_t nb = batched ? n_batches : 1;
  const auto moments =
      gene_moments(nullptr, log_data, hvg_rows_per_chunk(log_data.rows, nb * log_data.cols), batch, nb);
  return select_genes(moments, log_data.cols, options, gene_names, batched, nb);
}

HvgResult highly_variable_genes(const dist::Comm& comm, const HostCsr& log_rows, std::int64_t total_rows,
                                const HvgOptions& options, const std::vector<std::string>& gene_names,
                                const std::vector<std::int32_t>& batch, std::int64_t n_batches) {
  const bool batched = n_batches > 0;
  const std::int64_t nb = batched ? n_batches : 1;
  const dist::Block own = hvg_row_block(total_rows, log_rows.cols, nb, comm.size(), comm.rank());
  if (log_rows.rows != own.end - own.begin || (batched && static_cast<std::int64_t>(batch.size()) != log_rows.rows))
    throw InternalError("highly_variable_genes: rank " + std::to_string(comm.rank()) + " has " +
                        std::to_string(log_rows.rows) + " rows, its block is " + std::to_string(own.end - own.begin));
  const auto moments = gene_moments(&comm, log_rows, hvg_rows_per_chunk(total_rows, nb * log_rows.cols), batch, nb);
  return select_genes(moments, log_rows.cols, options, gene_names, batched, nb);
}

}  // namespace kotml::data
