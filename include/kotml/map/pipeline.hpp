#pragma once
// `kotml map`: pairOT 0.1's query→reference cluster mapping, run as phases that
// each do one thing (../shared/specs/torchgw-and-pairot.md, Part B):
//
//   read_map_input   one .h5ad: this rank's cells' raw counts (X or a layer),
//                    every cell's cluster and sample labels (clusters in
//                    sorted-name order, pairOT's category order), checked (NaN,
//                    negative, non-integer counts);
//   preprocess       gene alignment (total > 10 on both sides), DE per side
//                    (pseudobulk + limma + AUROC; genes exchanged into blocks), shared
//                    'seurat' HVGs, marker selection and the label distance Dlab
//                    (k_q × k_r, clipped to [0, 1]);
//   map_features     per-cell centred ranks over the HVGs (Spearman's ρ as a
//                    cosine) or an obsm embedding: this rank's query rows, every
//                    reference row, fp32;
//   solve_and_aggregate
//                    the entropic problem
//                        c_ij = λ_f·½(1 − cos(x_i, y_j)) + λ_l·Dlab[ℓ_i, ℓ_j]
//                    with cluster-balanced (or uniform) marginals, ε = 0.05
//                    absolute, on the tiled Sinkhorn (query rows split over ranks
//                    in whole row tiles, costs stored or recomputed per tile, never
//                    n×m), then from the potentials alone: the three cluster
//                    mappings (column masses Tᵀ·1[ℓ=x], k_q × m), the sampled block
//                    distances, the similar clusters and the per-cell label
//                    transfer (T·1[ℓ=y], n_local × k_r).
//
// Every reduction that crosses ranks is exact (dist::ExactSum / fixed point) and
// every sample is drawn on (seed, purpose, index) streams, so every output is
// bit-identical for any number of ranks.
//
// Memory. Each rank reads its own cells of each file: the query's solver rows
// (ot::RowBlock::of) and an even block of the reference (dist::block_of), plus
// every cell's labels. The DE exchanges the cells' counts into blocks of genes
// (de_tables.hpp), and the HVG step reads each rank's share of the sampled
// cells from the files. What a rank holds whole: the labels, the gene names,
// the pseudobulk sums (groups × genes) and the reference's features (m × d).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kotml/core/simulation.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/map/aggregate.hpp"
#include "kotml/map/de_tables.hpp"
#include "kotml/map/genes.hpp"
#include "kotml/map/label_distance.hpp"
#include "kotml/map/marginals.hpp"
#include "kotml/map/markers.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"

namespace kotml::map {

struct MapSideOptions {
  std::string path;
  std::string layer;          // "": X
  std::string label_column;   // obs column of cluster labels
  std::string sample_column;  // obs column of samples (donors) for the pseudobulk
};

struct MapOptions {
  MapSideOptions query, reference;
  bool allow_non_integer = false;  // non-integer counts: a warning instead of an error
  double min_gene_counts = 10.0;   // aligned genes: total count > this on both sides
  std::int64_t min_shared_genes = 50;
  DeOptions de;                    // n_samples_auroc, seed
  SharedHvgOptions hvg;            // n_top_genes (500), n_samples (100k), seed
  std::string official_genes;      // CSV with feature_name; with filtered_genes: pairOT's gene_filtering
  std::string filtered_genes;
  LabelDistanceConfig label;
  std::string use_rep;             // "": rank features over the HVGs; else obsm[use_rep]
  double lambda_feature = 0.5;
  double lambda_label = 1.5;
  MarginalKind marginals = MarginalKind::balanced;
  ot::TiledSinkhornOptions sinkhorn;
  bool double_precision = false;   // features and costs in fp64 instead of fp32
  std::int64_t distance_samples = 10000;
  std::uint64_t seed = 0;
  SimilarOptions similar;
  /// Throws Error::option for values outside their ranges.
  void validate() const;
};

/// One input as this rank holds it: the counts of its block of cells, every
/// cell's labels, the gene names.
struct MapInput {
  std::string role;  // "query" or "reference"
  std::string path, element;
  std::vector<std::string> var_names;
  std::int64_t cells = 0;      // in the file
  std::int64_t row_begin = 0;  // counts holds cells [row_begin, row_begin + counts.rows)
  data::HostCsr counts;        // this rank's cells × every gene, fp32
  ClusterLabels clusters;      // sorted names; codes per cell (every cell)
  Labels samples;              // every cell
  std::vector<std::string> warnings;
  std::int64_t n_cells() const { return cells; }
  std::int64_t n_clusters() const { return static_cast<std::int64_t>(clusters.names.size()); }
};

/// Which cells a rank reads, given the file's cell count.
using CellSplit = std::function<dist::Block(std::int64_t cells)>;

/// Collective: reads one side, this rank's cells `split` of them, and checks
/// it; the count checks (NaN, negative, non-integer) are summed over the ranks,
/// so that every rank reports the same.
MapInput read_map_input(const dist::Comm& comm, const MapSideOptions& side, const std::string& role,
                        bool allow_non_integer, const CellSplit& split);

struct MapPreprocessing {
  GeneAlignment genes;
  DeTables query_de, reference_de;
  std::vector<std::int64_t> hvg;  // indices into genes.names, ascending
  LabelDistanceResult label;      // markers and Dlab (k_q × k_r)
  bool gene_filtering = false;
  std::vector<std::string> warnings;
  double seconds_genes = 0, seconds_de = 0, seconds_hvg = 0, seconds_label = 0;
};

/// Collective (DE genes are split over the ranks; every rank gets every table).
MapPreprocessing preprocess(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                            const MapOptions& options);

/// DE tables in the marker selection's form: every gene, in gene order.
DeResults marker_input(const DeTables& tables);

struct MapFeatures {
  std::int64_t dim = 0;
  std::vector<float> query;  // this rank's query rows × dim
  // Every reference row × dim, row-major: the same on every rank, so that a
  // simulated run may fold it (core/simulation.hpp).
  sim::Folded<float, HostSpace> reference;
};

/// Collective. The query's features for this rank's rows; the reference's for
/// every row, each rank computing a contiguous block of rows and the blocks
/// gathered (the features are per cell, so the bits do not depend on the split).
MapFeatures map_features(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                         const MapPreprocessing& pre, const MapOptions& options, const ot::RowBlock& rows);

struct MapResult {
  ot::RowBlock rows;                       // this rank's query rows
  std::vector<double> a, b;                // marginals, every cell
  std::vector<double> f, g;                // potentials, every cell (OTT convention)
  ot::TiledSinkhornReport report;
  std::vector<double> label_table;         // Dlab as the cost uses it (fp32-rounded)
  ClusterMapping mapping;                  // k_q × k_r
  std::vector<double> distance;            // k_q × k_r
  std::vector<std::vector<std::int64_t>> similar_mean, similar_jensen_shannon;
  std::vector<std::int32_t> transfer_label;  // per query cell: reference cluster with most of its mass
  std::vector<double> transfer_score;        // that mass / the cell's mass
  double seconds_solve = 0, seconds_mapping = 0, seconds_distance = 0, seconds_transfer = 0;
};

/// Collective: builds the problem, solves it and aggregates the plan.
MapResult solve_and_aggregate(const dist::Comm& comm, const MapInput& query, const MapInput& reference,
                              const MapPreprocessing& pre, const MapOptions& options);

}  // namespace kotml::map
