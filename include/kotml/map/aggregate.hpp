#pragma once
// Cluster-level outputs of pairOT 0.1 (tl/_dataset_ot.py) from sums over the
// transport plan T_ij = exp((f_i + g_j − c_ij)/ε), which is never stored: the
// caller accumulates the sums below in tiled passes and these functions finish
// them. Query clusters x (k_q of them), reference clusters y (k_r), m reference
// cells; matrices row-major.
//
// Mapping (compute_mapping). t_x = ot_solution.apply(1[ℓ = x]) — OTT's axis 0,
// left multiplication, so t_xj = Σ_{i in x} T_ij, a length-m vector ("column
// mass"). With b the reference marginal, u_xj = t_xj / b_j and n_y the cells of y:
//   mean:             S[x, y] = (1/n_y) Σ_{j in y} u_xj
//                     (columns sum to 1 when the reference side is balanced, τ_b = 1);
//   transported_mass: S[x, y] = Σ_{j in y} t_xj / Σ_{i in x} a_i;
//   jensen_shannon:   S[x, y] = 1 − JS(u_x, 1[ℓ = y]) with scipy's jensenshannon
//                     as pairOT calls it, base = 2: p = u_x/Σ u_x, q = 1[ℓ=y]/n_y,
//                     JS = sqrt((KL(p‖M) + KL(q‖M)) / (2 ln 2)), M = (p + q)/2, so
//                     S ∈ [0, 1]. For j outside y, p_j ln(p_j/M_j) = p_j ln 2, so only
//                     the cells of y need a per-cell term.
// Distance (compute_distance). For each (x, y), over the sampled cells of x and y:
//   W = Σ T_ij, S = Σ T_ij c_ij, C = Σ c_ij, N = number of (i, j);
//   D[x, y] = S / W when W > 1e-16, else C / N (the unweighted mean cost).
//   c_ij is the full cost, label term included.
// Sampling (distance_sample). pairOT draws, for every pair (x, y) anew, up to
//   n_samples cells of x and of y with unseeded numpy.random.choice. kotml draws
//   once per cluster, deterministically: every cell of a cluster with at most
//   n_samples cells (then the sums equal pairOT's exactly, whatever its draw), else
//   n_samples cells without replacement by a partial Fisher–Yates over the
//   cluster's cells in index order on the stream
//   (seed, Purpose::map_distance_sample, side·2^32 + cluster).
// Similar clusters (select_similar_clusters). For each query cluster, reference
//   clusters by mapping descending (stable: equal scores keep cluster order; NaN
//   last), the first n_top of them (all when n_top < 0), then those with
//   mapping >= threshold_mapping and distance <= threshold_distance, in that
//   order. pairOT's None thresholds are 0 and 2.

#include <cstdint>
#include <vector>

namespace kotml::map {

// ------------------------------------------------------------------ mapping

struct ClusterMapping {
  std::int64_t n_query = 0, n_reference = 0;
  std::vector<double> mean, transported_mass, jensen_shannon;  // k_q × k_r each
};

/// Per-(x, y) sums over a block of reference cells (any subset of columns; add()
/// combines blocks — in a fixed order for a deterministic total).
struct MappingSums {
  std::int64_t n_query = 0, n_reference = 0;
  std::vector<double> ratio;  // Σ_{j in y} t_xj / b_j
  std::vector<double> mass;   // Σ_{j in y} t_xj
  void add(const MappingSums& other);
};

/// Sums over the m_block cells of a block: column_mass is k_q × m_block row-major
/// (t_xj for the block's cells), b and reference_codes the block's m_block values.
MappingSums mapping_sums(const double* column_mass, std::int64_t n_query, std::int64_t m_block, const double* b,
                         const std::int32_t* reference_codes, std::int64_t n_reference);

/// The per-cell part of the Jensen–Shannon sum over a block, for cells in y:
/// Σ_{j in y} [p_j ln(p_j/M_j) + q ln(q/M_j)] (k_q × k_r), with p_j = u_xj / ratio_totals[x]
/// (ratio_totals[x] = Σ over all cells of u_xj, i.e. the row sums of the complete
/// MappingSums::ratio) and q = 1 / reference_sizes[y]. A second pass over the blocks.
std::vector<double> jensen_shannon_sums(const double* column_mass, std::int64_t n_query, std::int64_t m_block,
                                        const double* b, const std::int32_t* reference_codes,
                                        std::int64_t n_reference, const std::vector<double>& ratio_totals,
                                        const std::vector<std::int64_t>& reference_sizes);

/// The three mappings from complete sums. query_cluster_mass[x] = Σ_{i in x} a_i.
ClusterMapping finish_mapping(const MappingSums& sums, const std::vector<double>& js_sums,
                              const std::vector<std::int64_t>& reference_sizes,
                              const std::vector<double>& query_cluster_mass);

/// All of it from the complete column mass (k_q × m), b (m) and reference codes (m).
ClusterMapping cluster_mapping(const std::vector<double>& column_mass, std::int64_t n_query,
                               const std::vector<double>& b, const std::vector<std::int32_t>& reference_codes,
                               std::int64_t n_reference, const std::vector<double>& query_cluster_mass);
/// The same from column_mass[0, n_query·m), m = b.size().
ClusterMapping cluster_mapping(const double* column_mass, std::int64_t n_query, const std::vector<double>& b,
                               const std::vector<std::int32_t>& reference_codes, std::int64_t n_reference,
                               const std::vector<double>& query_cluster_mass);

// ----------------------------------------------------------------- distance

struct DistanceSums {
  std::int64_t n_query = 0, n_reference = 0;
  std::vector<double> mass;           // W: Σ T_ij
  std::vector<double> weighted_cost;  // S: Σ T_ij c_ij
  std::vector<double> cost;           // C: Σ c_ij
  std::vector<std::int64_t> count;    // N: number of (i, j) in the block
  DistanceSums() = default;
  DistanceSums(std::int64_t k_q, std::int64_t k_r);
  void add(const DistanceSums& other);
};

/// D (k_q × k_r). Error when a block has no entries.
std::vector<double> cluster_distance(const DistanceSums& sums, double min_mass = 1e-16);

enum class Side : std::uint64_t { query = 0, reference = 1 };

/// 1 for the cells that take part in the distance (see above). Error when
/// n_samples < 1 or a code is outside [0, n_clusters).
std::vector<std::uint8_t> distance_sample(const std::vector<std::int32_t>& codes, std::int64_t n_clusters,
                                          std::int64_t n_samples, std::uint64_t seed, Side side);

// --------------------------------------------------------- similar clusters

struct SimilarOptions {
  double threshold_mapping = 0.25;   // pairOT None: 0
  double threshold_distance = 1.0;   // pairOT None: 2
  std::int64_t n_top = -1;           // < 0: all (pairOT None)
};

/// For each query cluster, the selected reference clusters in order.
std::vector<std::vector<std::int64_t>> select_similar_clusters(const std::vector<double>& mapping,
                                                               const std::vector<double>& distance,
                                                               std::int64_t n_query, std::int64_t n_reference,
                                                               const SimilarOptions& options = {});

}  // namespace kotml::map
