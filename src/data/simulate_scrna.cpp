// Single-cell-like count cohorts with a known answer.
//
// Model (all rates per gene g, cell type k, class c, donor d, cell i):
//   baseline       b_g ~ N(0, baseline_log_sd)
//   programmes     type k up-regulates its marker genes by ~N(marker_log_fold, 0.5)
//   class effect   in the planted types, planted gene j gets ±planted_log_fold·c/(C-1)
//                  (signs alternate over the planted genes), nothing elsewhere
//   proportions    class c ≥ 1 shifts the log-proportion of one non-planted type by
//                  proportion_shift; each donor draws its proportions from a
//                  Dirichlet with concentration donor_concentration around them
//   donor noise    e_dg ~ N(0, donor_log_sd) on every gene of every type
//   library        L_i = library_size · exp(N(0, library_log_sd))
//   counts         y_ig ~ NB(mean L_i · pi_ckg · exp(e_dg), dispersion phi),
//                  pi_ck = softmax_g(b + programme_k + effect_ck)
// so the only gene-level class signal sits in the planted genes of the planted
// types, and composition carries a second, independent class signal.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"
#include "kotml/data/samplers.hpp"
#include "kotml/data/simulate.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

/// k distinct values of [0, n) in draw order (partial Fisher–Yates).
std::vector<std::int64_t> choose(random::Stream& rng, std::vector<std::int64_t> pool, std::int64_t k) {
  for (std::int64_t i = 0; i < k; ++i) {
    const auto j = i + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(pool.size() - i)));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(static_cast<std::size_t>(k));
  return pool;
}

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

/// Per cell: its type (categorical draw on its donor's proportions) and library
/// size. Uses the first words of the cell's stream; the count kernels continue
/// from words_per_cell_header.
constexpr std::uint64_t words_per_cell_header = 3;  // one uniform, one normal

struct ScrnaCellKernel {
  Kokkos::View<const std::int32_t*, MemSpace> cell_donor;
  Matrix<const double> donor_proportions;  // D × K, cumulative
  Kokkos::View<std::int32_t*, MemSpace> cell_type;
  Kokkos::View<double*, MemSpace> library;
  std::uint64_t seed;
  double library_size, library_log_sd;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    random::Stream s(seed, random::Purpose::simulate, cell_stream_base + static_cast<std::uint64_t>(i));
    const std::int32_t d = cell_donor(i);
    const double u = s.uniform();
    const auto n_types = static_cast<std::int32_t>(donor_proportions.extent(1));
    std::int32_t k = 0;
    while (k + 1 < n_types && u >= donor_proportions(d, k)) ++k;
    cell_type(i) = k;
    library(i) = library_size * kmath::exp(library_log_sd * s.normal());
  }
};

/// Draws cell i's counts gene by gene from its stream, after the header words.
/// With write == false it only counts the non-zeros (to size the CSR); with
/// write == true it fills the row. Both passes draw the same numbers.
struct ScrnaCountKernel {
  Kokkos::View<const std::int32_t*, MemSpace> cell_donor;
  Kokkos::View<const std::int32_t*, MemSpace> cell_class;
  Kokkos::View<const std::int32_t*, MemSpace> cell_type;
  Kokkos::View<const double*, MemSpace> library;
  Matrix<const double> class_type_rates;  // (C·K) × G, rows sum to one
  Matrix<const double> donor_factor;      // D × G, exp(e_dg)
  Kokkos::View<std::int64_t*, MemSpace> row_nnz;
  Kokkos::View<const std::int64_t*, MemSpace> indptr;
  Kokkos::View<std::int32_t*, MemSpace> indices;
  Kokkos::View<float*, MemSpace> values;
  std::uint64_t seed;
  double phi;
  std::int32_t n_types;
  bool write;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    random::Stream s(seed, random::Purpose::simulate, cell_stream_base + static_cast<std::uint64_t>(i),
                     words_per_cell_header);
    const std::int32_t d = cell_donor(i);
    const std::int64_t row = static_cast<std::int64_t>(cell_class(i)) * n_types + cell_type(i);
    const auto n_genes = static_cast<std::int64_t>(class_type_rates.extent(1));
    std::int64_t nnz = 0;
    std::int64_t at = write ? indptr(i) : 0;
    for (std::int64_t g = 0; g < n_genes; ++g) {
      const double mean = library(i) * class_type_rates(row, g) * donor_factor(d, g);
      const std::int64_t y = sample::negative_binomial(s, mean, phi);
      if (y == 0) continue;
      ++nnz;
      if (write) {
        indices(at) = static_cast<std::int32_t>(g);
        values(at) = static_cast<float>(y);
        ++at;
      }
    }
    if (!write) row_nnz(i) = nnz;
  }
};

struct ExclusiveScan {
  Kokkos::View<const std::int64_t*, MemSpace> counts;
  Kokkos::View<std::int64_t*, MemSpace> offsets;  // n + 1
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, std::int64_t& running, const bool final) const {
    const std::int64_t c = counts(i);
    if (final) offsets(i) = running;
    running += c;
    if (final && i + 1 == static_cast<std::int64_t>(counts.extent(0))) offsets(i + 1) = running;
  }
};

using CellPolicy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

void run_cells(const ScrnaCellKernel& k, std::int64_t n) {
  Kokkos::parallel_for("kotml::data::simulate_scrna::cells", CellPolicy(0, n), k);
}
void run_counts(const ScrnaCountKernel& k, std::int64_t n) {
  Kokkos::parallel_for("kotml::data::simulate_scrna::counts", CellPolicy(0, n), k);
}
void run_scan(const ExclusiveScan& k, std::int64_t n) {
  Kokkos::parallel_scan("kotml::data::simulate_scrna::indptr", CellPolicy(0, n), k);
}

}  // namespace

void ScrnaOptions::validate() const {
  if (n_classes < 2) throw Error::option("n-classes", "must be at least 2");
  if (donors_per_class < 1) throw Error::option("donors-per-class", "must be at least 1");
  if (cells_per_donor < 1) throw Error::option("cells-per-donor", "must be at least 1");
  if (n_types < 1) throw Error::option("n-types", "must be at least 1");
  if (n_genes < 2) throw Error::option("n-genes", "must be at least 2");
  if (n_genes > std::numeric_limits<std::int32_t>::max())
    throw Error::option("n-genes", "must be at most 2147483647 (the columns of a sparse matrix are numbered in 32 bits)");
  if (n_planted_genes < 0 || n_planted_genes > n_genes)
    throw Error::option("n-planted-genes", "must be between 0 and --n-genes");
  if (n_planted_types < 0 || n_planted_types > n_types)
    throw Error::option("n-planted-types", "must be between 0 and --n-types");
  if (!(markers_fraction >= 0.0 && markers_fraction <= 1.0))
    throw Error::option("markers-fraction", "must be in [0, 1]");
  if (!(library_size > 0.0) || !std::isfinite(library_size))
    throw Error::option("library-size", "must be positive");
  if (!(nb_dispersion >= 0.0) || !std::isfinite(nb_dispersion))
    throw Error::option("nb-dispersion", "must be zero or positive");
  if (!(donor_concentration > 0.0)) throw Error::option("donor-concentration", "must be positive");
  for (const auto& [name, value] : {std::pair<const char*, double>{"library-log-sd", library_log_sd},
                                    {"donor-log-sd", donor_log_sd},
                                    {"baseline-log-sd", baseline_log_sd}})
    if (!(value >= 0.0) || !std::isfinite(value)) throw Error::option(name, "must be zero or positive");
  if (!std::isfinite(planted_log_fold) || !std::isfinite(proportion_shift) || !std::isfinite(marker_log_fold))
    throw Error::option("planted-log-fold", "effects must be finite");
}

SimulatedData simulate_scrna(const ScrnaOptions& o) {
  o.validate();
  random::Stream rng(o.seed, random::Purpose::simulate, 0);
  const std::int64_t G = o.n_genes, K = o.n_types, C = o.n_classes;
  const std::int64_t D = C * o.donors_per_class;

  std::vector<double> baseline(G);
  for (auto& b : baseline) b = rng.normal(0.0, o.baseline_log_sd);

  // Type programmes: marker genes per type with positive log-folds.
  const auto n_markers =
      o.markers_fraction > 0.0
          ? std::min<std::int64_t>(G, std::max<std::int64_t>(1, std::llround(o.markers_fraction * G)))
          : std::int64_t(0);
  std::vector<double> programme(K * G, 0.0);
  std::vector<char> is_marker(G, 0);
  std::vector<double> marker_table;
  for (std::int64_t k = 0; k < K; ++k) {
    for (const auto g : choose(rng, iota(G), n_markers)) {
      programme[k * G + g] = rng.normal(o.marker_log_fold, 0.5);
      is_marker[g] = 1;
      marker_table.push_back(static_cast<double>(g));
    }
  }

  // Planted types and genes: genes above the median baseline that no programme
  // uses, so the class effect is visible and not confounded with a marker.
  const auto planted_types = choose(rng, iota(K), o.n_planted_types);
  std::vector<std::int64_t> candidates;
  {
    std::vector<double> sorted(baseline);
    std::nth_element(sorted.begin(), sorted.begin() + G / 2, sorted.end());
    const double median = sorted[G / 2];
    for (std::int64_t g = 0; g < G; ++g)
      if (!is_marker[g] && baseline[g] >= median) candidates.push_back(g);
    if (static_cast<std::int64_t>(candidates.size()) < o.n_planted_genes) candidates = iota(G);
  }
  const auto planted_genes = choose(rng, candidates, o.n_planted_genes);
  std::vector<double> planted_sign(planted_genes.size());
  for (std::size_t j = 0; j < planted_genes.size(); ++j) planted_sign[j] = j % 2 == 0 ? 1.0 : -1.0;

  // Class-dependent composition: class c ≥ 1 favours one non-planted type (or
  // any type when all are planted).
  std::vector<double> base_log_proportion(K);
  for (auto& b : base_log_proportion) b = rng.normal(0.0, 0.3);
  std::vector<std::int64_t> shift_candidates;
  for (std::int64_t k = 0; k < K; ++k)
    if (std::find(planted_types.begin(), planted_types.end(), k) == planted_types.end())
      shift_candidates.push_back(k);
  if (shift_candidates.empty()) shift_candidates = iota(K);
  std::vector<double> class_proportion(C * K);
  std::vector<double> shifted_type(C, -1.0);
  for (std::int64_t c = 0; c < C; ++c) {
    double total = 0;
    for (std::int64_t k = 0; k < K; ++k) {
      double l = base_log_proportion[k];
      if (c > 0 && k == shift_candidates[(c - 1) % shift_candidates.size()]) {
        l += o.proportion_shift;
        shifted_type[c] = static_cast<double>(k);
      }
      total += (class_proportion[c * K + k] = std::exp(l));
    }
    for (std::int64_t k = 0; k < K; ++k) class_proportion[c * K + k] /= total;
  }

  // Rates per (class, type), normalised over genes.
  std::vector<double> rates(C * K * G);
  std::vector<double> planted_effect(static_cast<std::size_t>(C) * planted_genes.size(), 0.0);
  for (std::int64_t c = 0; c < C; ++c) {
    const double fold = o.planted_log_fold * static_cast<double>(c) / static_cast<double>(C - 1);
    for (std::size_t j = 0; j < planted_genes.size(); ++j) planted_effect[c * planted_genes.size() + j] = planted_sign[j] * fold;
    for (std::int64_t k = 0; k < K; ++k) {
      double* r = &rates[(c * K + k) * G];
      for (std::int64_t g = 0; g < G; ++g) r[g] = baseline[g] + programme[k * G + g];
      if (std::find(planted_types.begin(), planted_types.end(), k) != planted_types.end())
        for (std::size_t j = 0; j < planted_genes.size(); ++j) r[planted_genes[j]] += planted_sign[j] * fold;
      const double top = *std::max_element(r, r + G);
      double total = 0;
      for (std::int64_t g = 0; g < G; ++g) total += (r[g] = std::exp(r[g] - top));
      for (std::int64_t g = 0; g < G; ++g) r[g] /= total;
    }
  }

  // Donors: composition and gene noise.
  std::vector<double> donor_cumulative(D * K), donor_factor(D * G);
  std::vector<double> donor_proportion(D * K);
  for (std::int64_t d = 0; d < D; ++d) {
    const std::int64_t c = d / o.donors_per_class;
    double total = 0;
    for (std::int64_t k = 0; k < K; ++k)
      total += (donor_proportion[d * K + k] = sample::gamma(rng, o.donor_concentration * class_proportion[c * K + k]));
    double running = 0;
    for (std::int64_t k = 0; k < K; ++k) {
      donor_proportion[d * K + k] /= total;
      running += donor_proportion[d * K + k];
      donor_cumulative[d * K + k] = running;
    }
    for (std::int64_t g = 0; g < G; ++g) donor_factor[d * G + g] = std::exp(rng.normal(0.0, o.donor_log_sd));
  }

  // Cells, donor by donor.
  const std::int64_t n_cells = D * o.cells_per_donor;
  std::vector<std::int32_t> cell_donor(n_cells), cell_class(n_cells);
  for (std::int64_t i = 0; i < n_cells; ++i) {
    cell_donor[i] = static_cast<std::int32_t>(i / o.cells_per_donor);
    cell_class[i] = static_cast<std::int32_t>(cell_donor[i] / o.donors_per_class);
  }
  ScrnaCellKernel cells;
  cells.cell_donor = detail::to_device("scrna cell donor", cell_donor);
  cells.donor_proportions = detail::to_device("scrna donor cumulative proportions", donor_cumulative, D, K);
  cells.cell_type = Kokkos::View<std::int32_t*, MemSpace>(no_init("scrna cell type"), n_cells);
  cells.library = Kokkos::View<double*, MemSpace>(no_init("scrna library"), n_cells);
  cells.seed = o.seed;
  cells.library_size = o.library_size;
  cells.library_log_sd = o.library_log_sd;
  run_cells(cells, n_cells);

  ScrnaCountKernel counts;
  counts.cell_donor = cells.cell_donor;
  counts.cell_class = detail::to_device("scrna cell class", cell_class);
  counts.cell_type = cells.cell_type;
  counts.library = cells.library;
  counts.class_type_rates = detail::to_device("scrna rates", rates, C * K, G);
  counts.donor_factor = detail::to_device("scrna donor factor", donor_factor, D, G);
  counts.row_nnz = Kokkos::View<std::int64_t*, MemSpace>(no_init("scrna row nnz"), n_cells);
  counts.seed = o.seed;
  counts.phi = o.nb_dispersion;
  counts.n_types = static_cast<std::int32_t>(K);
  counts.write = false;
  run_counts(counts, n_cells);

  Kokkos::View<std::int64_t*, MemSpace> indptr(no_init("scrna indptr"), n_cells + 1);
  run_scan(ExclusiveScan{counts.row_nnz, indptr}, n_cells);
  std::int64_t nnz = 0;
  Kokkos::deep_copy(nnz, Kokkos::subview(indptr, n_cells));
  counts.indptr = indptr;
  counts.indices = Kokkos::View<std::int32_t*, MemSpace>(no_init("scrna indices"), nnz);
  counts.values = Kokkos::View<float*, MemSpace>(no_init("scrna values"), nnz);
  counts.write = true;
  run_counts(counts, n_cells);

  SimulatedData data;
  data.kind = "scrna";
  data.n_obs = n_cells;
  data.n_vars = G;
  data.sparse = true;
  data.indptr = detail::to_host(indptr);
  data.indices = detail::to_host(counts.indices);
  data.values = detail::to_host(counts.values);
  const auto type_host = detail::to_host(cells.cell_type);
  const auto library_host = detail::to_host(cells.library);

  for (std::int64_t g = 0; g < G; ++g) data.var_names.push_back("gene_" + std::to_string(g));
  std::vector<std::string> sample(n_cells), group(n_cells), cell_type(n_cells);
  const int width = std::max<int>(3, static_cast<int>(std::to_string(D - 1).size()));
  for (std::int64_t i = 0; i < n_cells; ++i) {
    std::string id = std::to_string(cell_donor[i]);
    sample[i] = "donor_" + std::string(static_cast<std::size_t>(std::max<int>(0, width - static_cast<int>(id.size()))), '0') + id;
    group[i] = "class_" + std::to_string(cell_class[i]);
    cell_type[i] = "type_" + std::to_string(type_host[i]);
  }
  data.obs.emplace_back("sample", std::move(sample));
  data.obs.emplace_back("patient_group", std::move(group));
  data.obs.emplace_back("cell_type", std::move(cell_type));
  data.obs_numeric.emplace_back("library_size", library_host);

  std::vector<double> planted_flag(G, 0.0);
  for (const auto g : planted_genes) planted_flag[g] = 1.0;
  data.var_numeric.emplace_back("planted", planted_flag);
  data.var_numeric.emplace_back("baseline_log_rate", baseline);

  std::vector<double> planted_genes_d(planted_genes.begin(), planted_genes.end());
  std::vector<double> planted_types_d(planted_types.begin(), planted_types.end());
  std::sort(planted_types_d.begin(), planted_types_d.end());
  const auto n_planted = static_cast<std::int64_t>(planted_genes.size());
  data.uns.push_back({"planted_genes", planted_genes_d, {n_planted}});
  data.uns.push_back({"planted_types", planted_types_d, {static_cast<std::int64_t>(planted_types_d.size())}});
  data.uns.push_back({"planted_log_fold", planted_effect, {C, n_planted}});
  data.uns.push_back({"shifted_type", shifted_type, {C}});
  data.uns.push_back({"class_type_proportions", class_proportion, {C, K}});
  data.uns.push_back({"donor_type_proportions", donor_proportion, {D, K}});
  data.uns.push_back({"type_markers", marker_table, {K, n_markers}});
  std::string names;
  for (const auto g : planted_genes) names += (names.empty() ? "" : ",") + data.var_names[g];
  data.uns_strings.emplace_back("planted_gene_names", names);
  data.uns_strings.emplace_back("simulation/kind", "scrna");
  data.uns_scalars.emplace_back("simulation/seed", static_cast<double>(o.seed));
  data.uns_scalars.emplace_back("simulation/nb_dispersion", o.nb_dispersion);
  data.uns_scalars.emplace_back("simulation/library_size", o.library_size);
  return data;
}

}  // namespace kotml::data
