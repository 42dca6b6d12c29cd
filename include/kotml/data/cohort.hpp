#pragma once
// A cohort: the donors of a study, each a weighted point cloud of its cells with
// one class label. This is what metric learning, distances and evaluation consume.
//
// Layout contract (relied on by learn/eval/ot):
//  * donors are sorted by id string (byte order, as numpy's np.unique), and
//    Donor::index is the position in that order;
//  * classes are sorted by label string; Donor::label indexes Cohort::classes;
//  * a donor's points are `n_points × dim` row-major PointScalar values in HOST
//    memory (callers stage the donors of a batch to the device themselves) and
//    its weights sum to one;
//  * every rank holds the same metadata (donors, labels, sizes, weights,
//    normalisation); points are present only for the donors a rank loaded
//    (Donor::loaded()).
//
// Statistics over the cohort (normalisation mean and SD, group centroids) are
// summed exactly (dist::ExactSum) from per-donor partials, so they are the same
// bits on any number of ranks, whichever donors each rank loads.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::data {

class CellSource;

/// Storage type of donor point clouds: single precision, as GGML-OT's float32
/// supports; statistics are computed in double.
using PointScalar = float;

/// A built-in simulated cohort (data/simulate.hpp, seeded by CohortOptions::seed)
/// read instead of a file: what the demo and the quick checks run.
enum class BuiltinCohort { none, toy2d, gmm, scrna };
/// "toy2d", "gmm" or "scrna"; Error naming --builtin otherwise.
BuiltinCohort parse_builtin_cohort(const std::string& text);
std::string to_string(BuiltinCohort cohort);

/// How a cohort is built; the CLI fills it from the shared cohort options
/// (src/cli/cohort_options.hpp).
struct CohortOptions {
  std::string input;                       // .h5ad file (empty with a built-in cohort)
  BuiltinCohort builtin = BuiltinCohort::none;
  std::string patient_col = "sample";      // obs column with the donor id
  std::string label_col = "patient_group"; // obs column with the donor's class
  std::string use_rep;                     // obsm key (e.g. X_pca); empty: X or layer
  std::string layer;                       // layers key; empty: X
  std::int64_t n_cells = 250;              // cells drawn per donor (must be > 0)
  bool all_cells = false;                  // take every cell; n_cells is then ignored
  bool keep_small_donors = false;          // keep donors with fewer than n_cells cells, all their cells
  std::string group_by;                    // obs column: cell-type centroid mode when set
  bool normalize = false;                  // z-score as GGML-OT's normalize()
  std::uint64_t seed = 42;                 // keys the subsampling streams

  /// Throws Error::option for values a user can get wrong (n_cells ≤ 0,
  /// both layer and use_rep, empty column names).
  void validate() const;
  /// Element the features come from: "X", "layers/<k>" or "obsm/<k>".
  std::string feature_element() const;
  /// The source in messages, results and checkpoint fingerprints: the input
  /// file, or "builtin:<name>".
  std::string source_name() const;
};

struct Donor {
  std::string id;                   // value of patient_col
  GlobalId index = 0;               // position in Cohort::donors
  GlobalId file_index = 0;          // position among all donors of the file (before dropping);
                                    // keys the subsampling stream, so it never depends on ranks
  std::int32_t label = 0;           // index into Cohort::classes
  std::int64_t n_cells_total = 0;   // cells of this donor in the file
  std::int64_t n_points = 0;        // rows of the support
  std::vector<double> weights;      // n_points, summing to one
  std::vector<std::int64_t> cells;  // obs row of each point (empirical mode), ascending;
                                    // empty in group mode
  std::vector<PointScalar> points;  // n_points × dim, row-major; empty until loaded,
                                    // and always in group mode (shares_support)
  bool shares_support = false;      // group mode: the support is Cohort::shared_support,
                                    // one copy for all donors (k × d each would be
                                    // donors × k × d floats)

  bool loaded() const { return shares_support || points.size() > 0 || n_points == 0; }
  const PointScalar* row(std::int64_t i, std::int64_t dim) const { return points.data() + i * dim; }
};

/// z-score parameters as GGML-OT's normalize(): x' = (x - mean) / scale with
/// scale = SD(unbiased) + 1e-6. Per feature (size dim) in empirical mode; one
/// scalar (size 1) in group mode, where GGML-OT's reduction over dims (0,1) of
/// the (K, d) centroid tensor gives one mean and one SD for all entries.
struct Normalization {
  bool applied = false;
  bool scalar = false;
  std::vector<double> mean;
  std::vector<double> scale;
  static constexpr double sd_offset = 1e-6;
};

struct Cohort {
  std::string source;            // file the cohort was read from ("" for in-memory sources)
  std::string feature_element;   // "X", "layers/<k>" or "obsm/<k>"
  std::int64_t dim = 0;
  std::vector<std::string> feature_names;  // dim entries: var names, or "<key>_<j>" for obsm
  std::vector<std::string> classes;        // sorted label strings
  std::vector<Donor> donors;               // sorted by id; only kept donors
  std::vector<std::string> dropped_donors; // donors with fewer than n_cells cells (sorted)

  /// Group mode (--group-by): every donor's support is the same K × dim matrix of
  /// global group centroids, also kept here; weights are group fractions.
  bool identical_supports = false;
  std::vector<std::string> groups;          // K group names, sorted
  std::vector<PointScalar> shared_support;  // K × dim (normalised when normalize is on)

  Normalization normalization;

  /// Map from features back to genes, for gene loadings of a learned metric when
  /// the features are an embedding: gene_loadings is n_genes × dim row-major
  /// (varm PCs for obsm X_pca). Empty when the features are genes themselves or
  /// no map is stored.
  std::vector<std::string> gene_names;
  std::vector<double> gene_loadings;

  CohortOptions options;

  std::int64_t n_donors() const { return static_cast<std::int64_t>(donors.size()); }
  std::int64_t n_classes() const { return static_cast<std::int64_t>(classes.size()); }
  std::vector<std::int32_t> labels() const;
  std::vector<std::string> donor_ids() const;
  std::int64_t total_points() const;
  /// Donors with points present on this rank.
  std::vector<GlobalId> loaded_donors() const;
};

/// Collective. Reads the obs metadata, sorts donors and classes, validates labels,
/// draws each donor's cells, and computes whatever needs the whole cohort
/// (normalisation statistics; group centroids), every rank reading only a block of
/// donors for that. Loads no points. Throws CollectiveError on every rank for bad
/// input.
Cohort plan_cohort(const CohortOptions& options, const dist::Comm& comm);

/// Collective. Loads (and normalises) the points of the listed donors (indices into
/// cohort.donors) on this rank; other ranks may list other donors. Donors loaded
/// before are kept. Non-finite values are an error naming the donor.
void load_donors(Cohort& cohort, const std::vector<GlobalId>& which, const dist::Comm& comm);

/// Gives back the points of every loaded donor not listed in `keep` (cohort
/// indices), on this rank only.
void release_donors(Cohort& cohort, const std::vector<GlobalId>& keep);

/// plan_cohort, then load_donors of every donor on every rank.
Cohort build_cohort(const CohortOptions& options, const dist::Comm& comm);

/// The same two steps from any cell source (an in-memory table in tests, a
/// simulated cohort). options.source_name() is used only in messages.
Cohort plan_cohort(const CellSource& source, const CohortOptions& options, const dist::Comm& comm);
void load_donors(Cohort& cohort, const CellSource& source, const std::vector<GlobalId>& which,
                 const dist::Comm& comm);
Cohort build_cohort(const CellSource& source, const CohortOptions& options, const dist::Comm& comm);

/// Human-readable summary (donors, classes, points, dim, dropped donors).
std::string describe(const Cohort& cohort);

}  // namespace kotml::data
