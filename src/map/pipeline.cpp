// The phases of `kotml map` (see pipeline.hpp).

#include "kotml/map/pipeline.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <type_traits>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"
#include "kotml/data/normalize_total.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/map/features.hpp"

namespace kotml::map {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::string> label_column(const io::AnnDataReader& reader, const std::string& column,
                                      const std::string& option) {
  const auto columns = reader.obs_columns();
  if (column.empty()) throw Error::option(option, "is required (the obs column to read)");
  if (std::find(columns.begin(), columns.end(), column) == columns.end())
    throw Error(reader.path(), "obs/" + column, "no such obs column (set --" + option + ")");
  const io::Column c = reader.obs(column);
  for (std::int64_t i = 0; i < c.size(); ++i)
    if (c.is_missing(i))
      throw Error(reader.path(), "obs/" + column, "cell " + std::to_string(i) + " has no label (missing value)");
  auto labels = c.as_strings();
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i].empty()) throw Error(reader.path(), "obs/" + column, "cell " + std::to_string(i) + " has an empty label");
  return labels;
}

/// Clusters that have at least one (sample, cluster) group of two or more cells,
/// the pseudobulk's condition for a cluster to be tested.
std::vector<std::uint8_t> testable_clusters(const MapInput& side) {
  const auto k = static_cast<std::size_t>(side.n_clusters());
  const auto s = side.samples.names.size();
  std::vector<std::int64_t> cells(k * s, 0);
  for (std::size_t i = 0; i < side.clusters.codes.size(); ++i)
    ++cells[static_cast<std::size_t>(side.samples.codes[i]) * k + static_cast<std::size_t>(side.clusters.codes[i])];
  std::vector<std::uint8_t> ok(k, 0);
  for (std::size_t g = 0; g < cells.size(); ++g)
    if (cells[g] >= 2) ok[g % k] = 1;
  return ok;
}

void check_testable(const MapInput& side, std::vector<std::string>& warnings) {
  const auto ok = testable_clusters(side);
  std::int64_t n_ok = 0;
  for (std::size_t c = 0; c < ok.size(); ++c) {
    if (ok[c]) {
      ++n_ok;
    } else {
      warnings.push_back(side.role + " cluster '" + side.clusters.names[c] +
                         "' has no sample with 2 or more cells: it gets no DE tables and no marker genes "
                         "(label distance 1 to every cluster)");
    }
  }
  if (n_ok < 2)
    throw Error(side.path, "obs/" + side.clusters.names.front(),
                "only " + std::to_string(n_ok) + " cluster(s) have a sample with 2 or more cells; "
                "differential expression needs at least 2");
}

GeneTable gene_table(const DeTable& d) {
  GeneTable t;
  const auto n = d.logfc.size();
  t.gene.resize(n);
  t.log_fc = d.logfc;
  t.adj_p_value = d.adj_p_value;
  t.auroc.resize(n);
  for (std::size_t g = 0; g < n; ++g) {
    t.gene[g] = static_cast<std::int64_t>(g);
    t.auroc[g] = static_cast<double>(d.auroc[g]);
  }
  return t;
}

std::vector<std::int64_t> hvg_columns(const std::vector<std::int64_t>& aligned_index,
                                      const std::vector<std::int64_t>& hvg) {
  std::vector<std::int64_t> columns;
  columns.reserve(hvg.size());
  for (const auto h : hvg) columns.push_back(aligned_index[static_cast<std::size_t>(h)]);
  return columns;
}

std::vector<float> side_features(const MapInput& side, const std::vector<std::int64_t>& columns,
                                 const std::string& use_rep, std::int64_t begin, std::int64_t end,
                                 std::int64_t& dim) {
  if (!use_rep.empty()) {
    const io::AnnDataReader reader(side.path);
    auto values = embedding_features(reader, use_rep, begin, end);
    const auto shape = reader.describe("obsm/" + use_rep).shape;
    dim = shape.size() == 2 ? shape[1] : 0;
    return values;
  }
  dim = static_cast<std::int64_t>(columns.size());
  require(begin >= side.row_begin && end <= side.row_begin + side.counts.rows, side.path, side.element,
          "features of cells " + std::to_string(begin) + ".." + std::to_string(end) + " asked of a rank holding " +
              std::to_string(side.row_begin) + ".." + std::to_string(side.row_begin + side.counts.rows));
  return rank_features(data::select_columns(side.counts, columns, begin - side.row_begin, end - side.row_begin));
}

template <class T>
Matrix<T> device_matrix(const std::vector<float>& values, std::int64_t rows, std::int64_t cols, const char* label) {
  Matrix<T> m(no_init(label), rows, cols);
  auto host = Kokkos::create_mirror_view(m);
  for (std::size_t k = 0; k < values.size(); ++k) host.data()[k] = static_cast<T>(values[k]);
  Kokkos::deep_copy(m, host);
  return m;
}

/// The reference's features as the solver's points: the gathered features
/// themselves when they are float in host memory (the solver packs its own
/// copy, so they live only until it is built), a converted copy otherwise.
template <class T>
Matrix<T> reference_points(const MapFeatures& features, std::int64_t rows) {
  const auto& values = features.reference.view;
  if constexpr (std::is_same<T, float>::value && device_is_host) {
    return Matrix<T>(values.data(), rows, features.dim);
  } else {
    Matrix<T> m(no_init("kotml::map::reference_features"), rows, features.dim);
    auto host = Kokkos::create_mirror_view(m);
    for (std::size_t k = 0; k < values.extent(0); ++k) host.data()[k] = static_cast<T>(values(k));
    Kokkos::deep_copy(m, host);
    return m;
  }
}

template <class V>
Vector<V> device_vector(const std::vector<V>& values, const char* label) {
  Vector<V> v(no_init(label), values.size());
  Kokkos::deep_copy(v, HostVector<const V>(values.data(), values.size()));
  return v;
}

std::vector<double> local_slice(const std::vector<double>& all, const ot::RowBlock& rows) {
  return {all.begin() + rows.begin, all.begin() + rows.begin + rows.count};
}

std::vector<std::int32_t> local_slice(const std::vector<std::int32_t>& all, const ot::RowBlock& rows) {
  return {all.begin() + rows.begin, all.begin() + rows.begin + rows.count};
}

/// The cluster mappings from the column masses Tᵀ·1[ℓ = x] (k_q × m). They
/// are the same exact sums on every rank, so a simulated run whose solve spans
/// every process folds them (the one buffer of k_q × m that grows with the
/// reference on every rank).
template <class T>
void aggregate_mapping(const dist::Comm& comm, ot::TiledSinkhorn<T>& solver, const MapInput& query,
                       const MapInput& reference, MapResult& result) {
  const timers::Scope timed("mapping");
  const auto k_q = static_cast<std::int32_t>(query.n_clusters());
  const auto codes = local_slice(query.clusters.codes, result.rows);
  const auto column_mass = sim::folded<double, HostSpace>(
      "kotml::map::column_mass", static_cast<std::size_t>(k_q * reference.n_cells()), comm.spans_world());
  solver.transpose_apply(std::vector<double>(static_cast<std::size_t>(result.rows.count), 1.0), codes, k_q,
                         column_mass.view.data());
  std::vector<double> query_cluster_mass(static_cast<std::size_t>(k_q), 0.0);
  for (std::size_t i = 0; i < result.a.size(); ++i)
    query_cluster_mass[static_cast<std::size_t>(query.clusters.codes[i])] += result.a[i];
  result.mapping = cluster_mapping(column_mass.view.data(), k_q, result.b, reference.clusters.codes,
                                   reference.n_clusters(), query_cluster_mass);
}

/// The block distances over each cluster's sampled cells.
template <class T>
void aggregate_distance(ot::TiledSinkhorn<T>& solver, const MapInput& query, const MapInput& reference,
                        const MapOptions& options, MapResult& result) {
  const timers::Scope timed("distance");
  const auto k_q = query.n_clusters(), k_r = reference.n_clusters();
  const auto q_keep = distance_sample(query.clusters.codes, k_q, options.distance_samples, options.seed, Side::query);
  const auto r_keep =
      distance_sample(reference.clusters.codes, k_r, options.distance_samples, options.seed, Side::reference);
  std::vector<std::int32_t> row_groups(static_cast<std::size_t>(result.rows.count));
  for (std::int64_t i = 0; i < result.rows.count; ++i) {
    const auto global = static_cast<std::size_t>(result.rows.begin + i);
    row_groups[static_cast<std::size_t>(i)] = q_keep[global] ? query.clusters.codes[global] : -1;
  }
  std::vector<std::int32_t> col_groups(r_keep.size());
  for (std::size_t j = 0; j < r_keep.size(); ++j) col_groups[j] = r_keep[j] ? reference.clusters.codes[j] : -1;
  const auto blocks = solver.block_sums(row_groups, static_cast<std::int32_t>(k_q), col_groups,
                                        static_cast<std::int32_t>(k_r));
  DistanceSums sums(k_q, k_r);
  sums.mass = blocks.mass;
  sums.weighted_cost = blocks.cost;
  sums.cost = blocks.plain_cost;
  sums.count = blocks.count;
  result.distance = cluster_distance(sums);
}

/// Per query cell: the reference cluster receiving most of its mass, and the
/// share; gathered to every rank in row order.
template <class T>
void transfer_labels(const dist::Comm& comm, ot::TiledSinkhorn<T>& solver, const MapInput& reference,
                     MapResult& result) {
  const timers::Scope timed("transfer");
  const auto k_r = static_cast<std::int32_t>(reference.n_clusters());
  const auto row_mass = solver.apply(std::vector<double>(reference.clusters.codes.size(), 1.0),
                                     reference.clusters.codes, k_r);
  std::vector<std::int64_t> label(static_cast<std::size_t>(result.rows.count));
  std::vector<double> score(static_cast<std::size_t>(result.rows.count));
  for (std::int64_t i = 0; i < result.rows.count; ++i) {
    const double* mass = row_mass.data() + i * k_r;
    std::int32_t best = 0;
    double total = 0;
    for (std::int32_t y = 0; y < k_r; ++y) {
      total += mass[y];
      if (mass[y] > mass[best]) best = y;
    }
    label[static_cast<std::size_t>(i)] = best;
    score[static_cast<std::size_t>(i)] = total > 0 ? mass[best] / total : 0.0;
  }
  const auto all_labels = comm.allgatherv(label);
  result.transfer_label.assign(all_labels.begin(), all_labels.end());
  result.transfer_score = comm.allgatherv(score);
}

template <class T>
MapResult solve_in(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                   const MapPreprocessing& pre, const MapOptions& options) {
  MapResult result;
  result.rows = ot::RowBlock::of(query.n_cells(), comm.size(), comm.rank());
  const auto& rows = result.rows;
  MapFeatures features = map_features(comm, query, reference, pre, options, rows);
  std::optional<timers::Scope> timed(std::in_place, "stage");

  result.a = marginal(query.clusters.codes, query.n_clusters(), options.marginals);
  result.b = marginal(reference.clusters.codes, reference.n_clusters(), options.marginals);
  // pairOT hands Dlab to its cost as float32.
  result.label_table.resize(pre.label.distance.size());
  for (std::size_t k = 0; k < pre.label.distance.size(); ++k)
    result.label_table[k] = static_cast<double>(static_cast<float>(pre.label.distance[k]));

  ot::PointCost cost;
  cost.kind = ot::Cost::cosine;
  cost.feature_weight = options.lambda_feature / 2;
  cost.label.table = result.label_table;
  cost.label.row_labels = query.n_clusters();
  cost.label.col_labels = reference.n_clusters();
  cost.label.weight = options.lambda_label;

  const auto m = reference.n_cells();
  const auto x = device_matrix<T>(features.query, rows.count, features.dim, "kotml::map::query_features");
  const auto a_local = device_vector(local_slice(result.a, rows), "kotml::map::a");
  const auto b = device_vector(result.b, "kotml::map::b");
  const auto x_labels = device_vector(local_slice(query.clusters.codes, rows), "kotml::map::query_labels");
  const auto y_labels = device_vector(reference.clusters.codes, "kotml::map::reference_labels");

  timed.emplace("solve");
  ot::TiledSinkhorn<T> solver(comm, rows, {x, a_local, x_labels}, {reference_points<T>(features, m), b, y_labels},
                              cost, options.sinkhorn);
  features = MapFeatures{};  // the solver packed its own copy of the reference's
  auto start = std::chrono::steady_clock::now();
  result.report = solver.solve();
  result.seconds_solve = seconds_since(start);
  if (result.report.status == ot::SolveStatus::numerical_error)
    throw Error("", "sinkhorn",
                "the iterations produced non-finite potentials (epsilon " + log::number_text(result.report.epsilon) +
                    " is too small for the costs, or the marginals cannot be matched); nothing written");
  result.f = comm.allgatherv(solver.f());
  result.g = solver.g();
  log::info("map: Sinkhorn " + std::to_string(result.report.iterations) + " iterations, error " +
            log::number_text(result.report.errors.empty() ? 0.0 : result.report.errors.back()) + ", " +
            std::to_string(result.seconds_solve) + " s");

  timed.reset();
  start = std::chrono::steady_clock::now();
  aggregate_mapping(comm, solver, query, reference, result);
  result.seconds_mapping = seconds_since(start);
  log::info("map: mapping " + std::to_string(result.seconds_mapping) + " s");
  start = std::chrono::steady_clock::now();
  aggregate_distance(solver, query, reference, options, result);
  result.seconds_distance = seconds_since(start);
  log::info("map: distance " + std::to_string(result.seconds_distance) + " s");
  start = std::chrono::steady_clock::now();
  transfer_labels(comm, solver, reference, result);
  result.seconds_transfer = seconds_since(start);
  log::info("map: label transfer " + std::to_string(result.seconds_transfer) + " s");

  const auto k_q = query.n_clusters(), k_r = reference.n_clusters();
  result.similar_mean = select_similar_clusters(result.mapping.mean, result.distance, k_q, k_r, options.similar);
  result.similar_jensen_shannon =
      select_similar_clusters(result.mapping.jensen_shannon, result.distance, k_q, k_r, options.similar);
  return result;
}

}  // namespace

void MapOptions::validate() const {
  if (!(lambda_feature >= 0) || !std::isfinite(lambda_feature))
    throw Error::option("lambda-feature", "must be finite and zero or positive");
  if (!(lambda_label >= 0) || !std::isfinite(lambda_label))
    throw Error::option("lambda-label", "must be finite and zero or positive");
  if (distance_samples < 1) throw Error::option("distance-samples", "must be at least 1");
  if (de.n_samples_auroc < 1) throw Error::option("n-samples-auroc", "must be at least 1");
  if (hvg.n_top_genes < 1) throw Error::option("n-top-genes", "must be at least 1");
  if (official_genes.empty() != filtered_genes.empty())
    throw Error::option(official_genes.empty() ? "official-genes" : "filtered-genes",
                        "gene filtering needs both --official-genes and --filtered-genes");
  if (!(similar.threshold_mapping >= 0) || !std::isfinite(similar.threshold_mapping))
    throw Error::option("threshold-mapping", "must be finite and zero or positive");
  if (!std::isfinite(similar.threshold_distance)) throw Error::option("threshold-distance", "must be finite");
  sinkhorn.validate();
}

MapInput read_map_input(const dist::Comm& comm, const MapSideOptions& side, const std::string& role,
                        bool allow_non_integer, const CellSplit& split) {
  MapInput in;
  in.role = role;
  in.path = side.path;
  in.element = side.layer.empty() ? "X" : "layers/" + side.layer;
  data::ValueCheck check;
  comm.phase([&] {
    const io::AnnDataReader reader(side.path);
    if (!side.layer.empty() && !reader.has(in.element))
      throw Error(side.path, in.element, "no such layer (--layer)");
    if (side.layer.empty() && !reader.has_x()) throw Error(side.path, "X", "the file has no X (use --layer)");
    const auto labels = label_column(reader, side.label_column, role == "query" ? "query-label-col" : "ref-label-col");
    const auto samples =
        label_column(reader, side.sample_column, role == "query" ? "query-sample-col" : "ref-sample-col");
    in.var_names = reader.var_names();
    in.cells = reader.matrix_info(in.element).rows;
    if (in.cells < 1) throw Error(side.path, in.element, "the file has no cells");
    const dist::Block block = split(in.cells);
    in.row_begin = block.begin;
    in.counts = reader.read_csr_row_range<float>(in.element, block.begin, block.end);
    check = data::check_values(in.counts);
    in.clusters = cluster_labels(labels);
    const auto sample_labels = cluster_labels(samples);
    in.samples.names = sample_labels.names;
    in.samples.codes = sample_labels.codes;
  });
  std::int64_t counted[3] = {check.non_finite, check.negative, check.non_integer};
  comm.sum_in_place(counted, 3);
  comm.phase([&] {
    if (counted[0] > 0) throw Error(side.path, in.element, std::to_string(counted[0]) + " NaN or infinite value(s)");
    if (counted[1] > 0)
      throw Error(side.path, in.element,
                  std::to_string(counted[1]) + " negative value(s); kotml map needs raw counts");
    if (counted[2] > 0) {
      const std::string what = std::to_string(counted[2]) + " non-integer value(s); kotml map needs raw counts";
      if (!allow_non_integer) throw Error(side.path, in.element, what + " (--allow-non-integer to go on)");
      in.warnings.push_back(side.path + " " + in.element + ": " + what);
    }
  });
  return in;
}

DeResults marker_input(const DeTables& tables) {
  const auto k = static_cast<std::int64_t>(tables.cluster_names.size());
  DeResults out(k);
  for (std::int64_t x = 0; x < k; ++x) {
    out.ova[static_cast<std::size_t>(x)] = gene_table(tables.ova[static_cast<std::size_t>(x)]);
    for (std::int64_t y = 0; y < k; ++y)
      if (x != y) out.pair(x, y) = gene_table(tables.ava[static_cast<std::size_t>(x * k + y)]);
  }
  return out;
}

MapPreprocessing preprocess(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                            const MapOptions& options) {
  MapPreprocessing pre;
  auto start = std::chrono::steady_clock::now();
  std::optional<timers::Scope> timed_genes(std::in_place, "align genes");
  const auto query_totals = gene_totals(comm, query.counts);
  const auto reference_totals = gene_totals(comm, reference.counts);
  comm.phase([&] {
    pre.genes = align_genes(query.var_names, query_totals, reference.var_names, reference_totals,
                            options.min_gene_counts, query.path, reference.path);
    const auto shared = static_cast<std::int64_t>(pre.genes.names.size());
    if (shared < options.min_shared_genes)
      throw Error(query.path, "var",
                  "only " + std::to_string(shared) + " genes have more than " +
                      std::to_string(static_cast<std::int64_t>(options.min_gene_counts)) + " counts in both " +
                      query.path + " and " + reference.path + "; kotml map needs at least " +
                      std::to_string(options.min_shared_genes));
    check_testable(query, pre.warnings);
    check_testable(reference, pre.warnings);
  });
  const auto query_counts = data::select_columns(query.counts, pre.genes.query_index);
  const auto reference_counts = data::select_columns(reference.counts, pre.genes.reference_index);
  timed_genes.reset();
  pre.seconds_genes = seconds_since(start);
  log::info("map: " + std::to_string(pre.genes.names.size()) + " shared expressed genes (" +
            std::to_string(pre.seconds_genes) + " s)");

  start = std::chrono::steady_clock::now();
  const auto labels_of = [](const ClusterLabels& c) { return Labels{c.codes, c.names}; };
  {
    const timers::Scope timed("de");
    pre.query_de =
        de_tables(comm, query_counts, query.row_begin, query.samples, labels_of(query.clusters), options.de);
    log::info("map: DE of the query (" + std::to_string(query.n_clusters()) + " clusters), " +
              std::to_string(seconds_since(start)) + " s");
    pre.reference_de = de_tables(comm, reference_counts, reference.row_begin, reference.samples,
                                 labels_of(reference.clusters), options.de);
  }
  pre.seconds_de = seconds_since(start);
  log::info("map: DE of both files " + std::to_string(pre.seconds_de) + " s");

  start = std::chrono::steady_clock::now();
  if (options.use_rep.empty()) {
    const timers::Scope timed("hvg");
    // This rank's share of the sample, fetched from the ranks holding its cells.
    const auto share = hvg_sample_share(query.n_cells(), reference.n_cells(),
                                        static_cast<std::int64_t>(pre.genes.names.size()), options.hvg, comm.size(),
                                        comm.rank());
    data::HostCsr rows;
    rows.cols = static_cast<std::int64_t>(pre.genes.names.size());
    rows.indptr.assign(1, 0);
    timers::timed("fetch sample", [&] {
      data::fetch_rows(comm, query_counts, query.row_begin, share.query_rows, rows);
      data::fetch_rows(comm, reference_counts, reference.row_begin, share.reference_rows, rows);
    });
    comm.phase([&] {
      pre.hvg = shared_highly_variable_genes(comm, share, std::move(rows), pre.genes.names, options.hvg).selected();
    });
  }
  pre.seconds_hvg = seconds_since(start);
  if (options.use_rep.empty())
    log::info("map: " + std::to_string(pre.hvg.size()) + " highly variable genes, " +
              std::to_string(pre.seconds_hvg) + " s");

  start = std::chrono::steady_clock::now();
  comm.phase([&] {
    const timers::Scope timed("label distance");
    std::vector<std::uint8_t> allowed;
    if (!options.official_genes.empty()) {
      pre.gene_filtering = true;
      allowed = informative_genes(pre.genes.names, read_gene_list(options.official_genes),
                                  read_gene_list(options.filtered_genes));
    }
    pre.label = label_distance_from_de(marker_input(pre.query_de), marker_input(pre.reference_de), allowed,
                                       options.label);
  });
  pre.seconds_label = seconds_since(start);
  return pre;
}

MapFeatures map_features(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                         const MapPreprocessing& pre, const MapOptions& options, const ot::RowBlock& rows) {
  const timers::Scope timed("features");
  MapFeatures f;
  const dist::Block own_reference = dist::block_of(reference.n_cells(), comm.size(), comm.rank());
  std::vector<float> reference_block;
  comm.phase([&] {
    std::int64_t query_dim = 0, reference_dim = 0;
    f.query = side_features(query, hvg_columns(pre.genes.query_index, pre.hvg), options.use_rep, rows.begin,
                            rows.begin + rows.count, query_dim);
    reference_block = side_features(reference, hvg_columns(pre.genes.reference_index, pre.hvg), options.use_rep,
                                    own_reference.begin, own_reference.end, reference_dim);
    if (query_dim != reference_dim || query_dim < 1)
      throw Error(reference.path, "obsm/" + options.use_rep,
                  "has " + std::to_string(reference_dim) + " columns, the query's has " + std::to_string(query_dim));
    f.dim = query_dim;
  });
  // Outside the phase: a rank whose block failed has already thrown with all.
  f.reference = sim::folded<float, HostSpace>("kotml::map::reference_features",
                                              static_cast<std::size_t>(reference.n_cells() * f.dim),
                                              comm.spans_world());
  sim::write_own_block(f.reference, reference_block.data(), reference_block.size(),
                       static_cast<std::size_t>(own_reference.begin * f.dim));
  comm.allgatherv(reference_block.data(), static_cast<std::int64_t>(reference_block.size()), f.reference.view.data(),
                  static_cast<std::int64_t>(f.reference.view.extent(0)));
  return f;
}

MapResult solve_and_aggregate(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                              const MapPreprocessing& pre, const MapOptions& options) {
  return options.double_precision ? solve_in<double>(comm, query, reference, pre, options)
                                  : solve_in<float>(comm, query, reference, pre, options);
}

}  // namespace kotml::map
