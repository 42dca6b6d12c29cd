// The cohort builder: donors, labels, subsampling, group centroids and
// normalisation from any cell source, the same on any number of ranks.
//
// Metadata (obs columns) is small and read by every rank, so every rank derives
// the same donors, classes and cell draws without communication. Whatever needs
// the cells themselves (normalisation moments, group centroids) is split by
// donor blocks over the ranks: each rank reads its block, computes one partial
// per donor (sequential within a feature column, so thread-count independent),
// and the partials are added with dist::ExactSum, whose integer accumulation is
// exact and order-free: the statistics are the same bits for 1, 2 or 3 ranks.

#include "kotml/data/cohort.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "cohort_kernels.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/random.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/dist/partition.hpp"

namespace kotml::data {
namespace {

std::string quoted_list(const std::vector<std::string>& items, std::size_t limit = 5) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) out += (i ? ", '" : "'") + items[i] + "'";
  if (items.size() > limit) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

/// Order of donor ids and class labels: numpy.unique's, i.e. by value for a
/// numeric column (so "10" follows "9", and NaN comes last) and by bytes for
/// strings. strtod, not stod: a subnormal label such as 5e-324 is parsed
/// exactly but sets ERANGE, which stod turns into an exception (found by
/// fuzz_h5ad).
struct LabelOrder {
  bool numeric = false;
  bool operator()(const std::string& a, const std::string& b) const {
    if (numeric) {
      const double x = std::strtod(a.c_str(), nullptr), y = std::strtod(b.c_str(), nullptr);
      if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
      if (x != y && !std::isnan(x)) return x < y;
    }
    return a < b;
  }
};

/// Draws n of the donor's rows without replacement (partial Fisher–Yates on the
/// donor's own stream), returned ascending so reads walk the file forward.
std::vector<std::int64_t> subsample(const std::vector<std::int64_t>& rows, std::int64_t n, std::uint64_t seed,
                                    GlobalId donor_file_index) {
  std::vector<std::int64_t> pool(rows);
  random::Stream s(seed, random::Purpose::subsample, static_cast<std::uint64_t>(donor_file_index));
  const auto size = static_cast<std::int64_t>(pool.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const auto j = i + static_cast<std::int64_t>(s.below(static_cast<std::uint64_t>(size - i)));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(static_cast<std::size_t>(n));
  std::sort(pool.begin(), pool.end());
  return pool;
}

std::vector<std::string> feature_names_for(const CellSource& source, const CohortOptions& o, std::int64_t dim) {
  if (o.use_rep.empty()) return source.var_names();
  std::vector<std::string> names;
  for (std::int64_t j = 0; j < dim; ++j)
    names.push_back(o.use_rep == "X_pca" ? "PC" + std::to_string(j + 1) : o.use_rep + "_" + std::to_string(j + 1));
  return names;
}

/// Reads a donor's rows and rejects non-finite values, naming the donor.
std::vector<float> read_donor_rows(const CellSource& source, const std::string& element, const Donor& donor,
                                   const std::vector<std::int64_t>& rows, std::int64_t dim) {
  auto block = source.read_rows(element, rows);
  const auto n = static_cast<std::int64_t>(rows.size());
  const std::int64_t bad = detail::count_non_finite(block, n, dim);
  if (bad > 0)
    throw Error(source.name(), element,
                std::to_string(bad) + " NaN or infinite value(s) in the cells of donor '" + donor.id + "'");
  return block;
}

/// All cells of each donor, in file order (group mode reads every cell).
struct DonorCells {
  std::vector<std::vector<std::int64_t>> rows;  // per kept donor
};

void compute_normalization(Cohort& cohort, const CellSource& source, const dist::Comm& comm) {
  const std::int64_t d = cohort.dim;
  dist::ExactSum moments(static_cast<std::size_t>(2 * d));
  std::int64_t n_points = 0;
  for (const auto& donor : cohort.donors) n_points += donor.n_points;
  comm.phase([&] {
    const auto block = dist::block_of(cohort.n_donors(), comm.size(), comm.rank());
    for (auto i = block.begin; i < block.end; ++i) {
      const Donor& donor = cohort.donors[i];
      const auto rows = read_donor_rows(source, cohort.feature_element, donor, donor.cells, d);
      moments.add(detail::feature_moments(rows, donor.n_points, d));
    }
  });
  const auto total = moments.allreduce(comm);
  if (n_points < 2)
    throw dist::CollectiveError(Error(source.name(), cohort.feature_element,
                                      "normalisation needs at least two cells in the cohort"));
  auto& z = cohort.normalization;
  z.applied = true;
  z.scalar = false;
  z.mean.assign(d, 0.0);
  z.scale.assign(d, 0.0);
  const auto n = static_cast<double>(n_points);
  for (std::int64_t j = 0; j < d; ++j) {
    const double mean = total[j] / n;
    const double variance = std::max(0.0, (total[d + j] - total[j] * mean) / (n - 1.0));
    z.mean[j] = mean;
    z.scale[j] = std::sqrt(variance) + Normalization::sd_offset;
  }
}

void compute_centroids(Cohort& cohort, const CellSource& source, const DonorCells& cells,
                       const std::vector<std::int32_t>& cell_group, const std::vector<std::int64_t>& group_count,
                       const dist::Comm& comm) {
  const std::int64_t d = cohort.dim;
  const auto k = static_cast<std::int64_t>(cohort.groups.size());
  dist::ExactSum sums(static_cast<std::size_t>(k * d));
  comm.phase([&] {
    const auto block = dist::block_of(cohort.n_donors(), comm.size(), comm.rank());
    for (auto i = block.begin; i < block.end; ++i) {
      const auto& rows = cells.rows[i];
      const auto values = read_donor_rows(source, cohort.feature_element, cohort.donors[i], rows, d);
      // Only the groups this donor's cells fall in: |its groups| × d sums, not
      // k × d, which made the whole pass donors × groups × d (minutes for a
      // group column with thousands of values; found by fuzz_h5ad). Zeros
      // added to an exact sum change nothing, so the total is the same.
      std::vector<std::int32_t> present(rows.size());
      for (std::size_t r = 0; r < rows.size(); ++r) present[r] = cell_group[rows[r]];
      std::sort(present.begin(), present.end());
      present.erase(std::unique(present.begin(), present.end()), present.end());
      std::vector<std::int32_t> local(rows.size());
      for (std::size_t r = 0; r < rows.size(); ++r)
        local[r] = static_cast<std::int32_t>(
            std::lower_bound(present.begin(), present.end(), cell_group[rows[r]]) - present.begin());
      const auto local_sums = detail::group_sums(values, static_cast<std::int64_t>(rows.size()), d, local,
                                                 static_cast<std::int64_t>(present.size()));
      sums.add_rows(local_sums.data(), present.data(), present.size(), static_cast<std::size_t>(d));
    }
  });
  const auto total = sums.allreduce(comm);
  std::vector<double> centroids(static_cast<std::size_t>(k * d));
  for (std::int64_t g = 0; g < k; ++g)
    for (std::int64_t j = 0; j < d; ++j) centroids[g * d + j] = total[g * d + j] / static_cast<double>(group_count[g]);

  if (cohort.options.normalize) {
    // GGML-OT's normalize() reduces a (K, d) support tensor over dims (0, 1): one
    // mean and one unbiased SD over all K·d entries. Reproduced deliberately: it
    // only shifts and uniformly rescales the centroid cloud, so relative geometry
    // is kept and alpha/reg carry over as in GGML-OT.
    const auto m = static_cast<double>(k * d);
    double mean = 0;
    for (const double v : centroids) mean += v;
    mean /= m;
    double ss = 0;
    for (const double v : centroids) ss += (v - mean) * (v - mean);
    const double sd = m > 1 ? std::sqrt(ss / (m - 1.0)) : 0.0;
    auto& z = cohort.normalization;
    z.applied = true;
    z.scalar = true;
    z.mean = {mean};
    z.scale = {sd + Normalization::sd_offset};
    for (auto& v : centroids) v = (v - mean) / z.scale[0];
  }
  cohort.shared_support.assign(centroids.begin(), centroids.end());
}

/// varm map from embedding features back to genes, where one is stored.
void attach_gene_loadings(Cohort& cohort, const CellSource& source) {
  const auto& rep = cohort.options.use_rep;
  if (rep.empty()) return;
  std::vector<std::string> candidates;
  if (rep == "X_pca") candidates.push_back("PCs");
  candidates.push_back(rep);
  if (rep.rfind("X_", 0) == 0) candidates.push_back(rep.substr(2));
  for (const auto& key : candidates) {
    std::int64_t columns = 0;
    auto loadings = source.varm(key, columns);
    if (!loadings.empty() && columns == cohort.dim) {
      cohort.gene_loadings = std::move(loadings);
      cohort.gene_names = source.var_names();
      return;
    }
  }
}

}  // namespace

// ------------------------------------------------------------------ options
void CohortOptions::validate() const {
  if (patient_col.empty()) throw Error::option("patient-col", "must name an obs column");
  if (label_col.empty()) throw Error::option("label-col", "must name an obs column");
  if (!all_cells && n_cells <= 0)
    throw Error::option("n-cells", "must be positive (or 'all'), got " + std::to_string(n_cells));
  if (!use_rep.empty() && !layer.empty())
    throw Error::option("use-rep", "cannot be combined with --layer: features come from one element");
}

BuiltinCohort parse_builtin_cohort(const std::string& text) {
  if (text == "toy2d") return BuiltinCohort::toy2d;
  if (text == "gmm") return BuiltinCohort::gmm;
  if (text == "scrna") return BuiltinCohort::scrna;
  throw Error::option("builtin", "must be toy2d, gmm or scrna, got '" + text + "'");
}

std::string to_string(BuiltinCohort cohort) {
  switch (cohort) {
    case BuiltinCohort::toy2d:
      return "toy2d";
    case BuiltinCohort::gmm:
      return "gmm";
    case BuiltinCohort::scrna:
      return "scrna";
    case BuiltinCohort::none:
      break;
  }
  return "";
}

std::string CohortOptions::source_name() const {
  return builtin == BuiltinCohort::none ? input : "builtin:" + to_string(builtin);
}

std::string CohortOptions::feature_element() const {
  if (!use_rep.empty()) return "obsm/" + use_rep;
  if (!layer.empty()) return "layers/" + layer;
  return "X";
}

// ------------------------------------------------------------------ Cohort
std::vector<std::int32_t> Cohort::labels() const {
  std::vector<std::int32_t> out;
  for (const auto& d : donors) out.push_back(d.label);
  return out;
}

std::vector<std::string> Cohort::donor_ids() const {
  std::vector<std::string> out;
  for (const auto& d : donors) out.push_back(d.id);
  return out;
}

std::int64_t Cohort::total_points() const {
  std::int64_t n = 0;
  for (const auto& d : donors) n += d.n_points;
  return n;
}

std::vector<GlobalId> Cohort::loaded_donors() const {
  std::vector<GlobalId> out;
  for (const auto& d : donors)
    if (d.loaded()) out.push_back(d.index);
  return out;
}

// ------------------------------------------------------------------ planning
Cohort plan_cohort(const CellSource& source, const CohortOptions& options, const dist::Comm& comm) {
  Cohort cohort;
  cohort.options = options;
  cohort.source = options.source_name();
  cohort.feature_element = options.feature_element();
  DonorCells cells;
  std::vector<std::int32_t> cell_group;
  std::vector<std::int64_t> group_count;
  std::vector<std::string> warnings;

  comm.phase([&] {
    options.validate();
    const std::string file = source.name();
    cohort.dim = source.n_features(cohort.feature_element);
    if (cohort.dim < 1) throw Error(file, cohort.feature_element, "has no features");
    cohort.feature_names = feature_names_for(source, options, cohort.dim);

    const auto donor_of = source.obs_labels(options.patient_col);
    const auto label_of = source.obs_labels(options.label_col);
    const LabelOrder donor_order{source.obs_is_numeric(options.patient_col)};
    const LabelOrder class_order{source.obs_is_numeric(options.label_col)};
    std::vector<std::string> group_of;
    if (!options.group_by.empty()) group_of = source.obs_labels(options.group_by);

    // Donors sorted by id, each with its cells in file order.
    std::map<std::string, std::vector<std::int64_t>, LabelOrder> rows_of(donor_order);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(donor_of.size()); ++i) {
      if (donor_of[i].empty())
        throw Error(file, "obs/" + options.patient_col,
                    "cell " + std::to_string(i) + " has no donor id (missing value)");
      rows_of[donor_of[i]].push_back(i);
    }
    if (rows_of.empty()) throw Error(file, "obs/" + options.patient_col, "no cells");

    // One label per donor.
    std::map<std::string, std::string> label_of_donor;
    for (const auto& [id, rows] : rows_of) {
      std::vector<std::string> seen;
      for (const auto r : rows) {
        if (label_of[r].empty())
          throw Error(file, "obs/" + options.label_col,
                      "donor '" + id + "' has cells without a label (missing value)");
        if (std::find(seen.begin(), seen.end(), label_of[r]) == seen.end()) seen.push_back(label_of[r]);
      }
      if (seen.size() > 1)
        throw Error(file, "obs/" + options.label_col,
                    "donor '" + id + "' has more than one label: " + quoted_list(seen));
      label_of_donor[id] = seen.front();
    }

    // Cells per donor: a seeded draw, all cells, or none (dropped).
    GlobalId file_index = 0;
    std::vector<std::string> dropped_text;
    for (const auto& [id, rows] : rows_of) {
      Donor donor;
      donor.id = id;
      donor.file_index = file_index++;
      donor.n_cells_total = static_cast<std::int64_t>(rows.size());
      if (options.group_by.empty()) {
        if (options.all_cells) {
          donor.cells = rows;
        } else if (donor.n_cells_total >= options.n_cells) {
          donor.cells = subsample(rows, options.n_cells, options.seed, donor.file_index);
        } else if (options.keep_small_donors) {
          donor.cells = rows;
        } else {
          cohort.dropped_donors.push_back(id);
          dropped_text.push_back(id + " (" + std::to_string(rows.size()) + " cells)");
          continue;
        }
        donor.n_points = static_cast<std::int64_t>(donor.cells.size());
        donor.weights.assign(static_cast<std::size_t>(donor.n_points), 1.0 / static_cast<double>(donor.n_points));
      } else {
        cells.rows.push_back(rows);
      }
      cohort.donors.push_back(std::move(donor));
    }
    if (!dropped_text.empty()) {
      std::string text = "dropped " + std::to_string(dropped_text.size()) + " donor(s) with fewer than " +
                         std::to_string(options.n_cells) + " cells (use --keep-small-donors to keep them): ";
      const std::size_t shown = std::min<std::size_t>(dropped_text.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + dropped_text[i];
      if (shown < dropped_text.size()) text += ", ... (" + std::to_string(dropped_text.size() - shown) + " more)";
      warnings.push_back(text);
    }
    if (cohort.donors.empty())
      throw Error(file, "obs/" + options.patient_col,
                  "no donor has " + std::to_string(options.n_cells) + " cells; lower --n-cells or use --keep-small-donors");

    // Classes of the kept donors, sorted by label string.
    for (const auto& donor : cohort.donors) cohort.classes.push_back(label_of_donor[donor.id]);
    std::sort(cohort.classes.begin(), cohort.classes.end(), class_order);
    cohort.classes.erase(std::unique(cohort.classes.begin(), cohort.classes.end()), cohort.classes.end());
    if (cohort.classes.size() < 2)
      throw Error(file, "obs/" + options.label_col,
                  "all " + std::to_string(cohort.donors.size()) + " donors" +
                      (cohort.dropped_donors.empty() ? "" : " kept") + " have the same label '" +
                      cohort.classes.front() + "'; at least two classes are needed");
    for (std::size_t i = 0; i < cohort.donors.size(); ++i) {
      auto& donor = cohort.donors[i];
      donor.index = static_cast<GlobalId>(i);
      donor.label = static_cast<std::int32_t>(
          std::lower_bound(cohort.classes.begin(), cohort.classes.end(), label_of_donor[donor.id], class_order) -
          cohort.classes.begin());
    }

    // Group mode: the support is the groups' centroids; weights are fractions.
    if (!options.group_by.empty()) {
      cohort.identical_supports = true;
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(group_of.size()); ++i)
        if (group_of[i].empty())
          throw Error(file, "obs/" + options.group_by,
                      "cell " + std::to_string(i) + " has no group (missing value)");
      cohort.groups = group_of;
      std::sort(cohort.groups.begin(), cohort.groups.end());
      cohort.groups.erase(std::unique(cohort.groups.begin(), cohort.groups.end()), cohort.groups.end());
      const auto k = static_cast<std::int64_t>(cohort.groups.size());
      cell_group.resize(group_of.size());
      group_count.assign(static_cast<std::size_t>(k), 0);
      for (std::size_t i = 0; i < group_of.size(); ++i) {
        cell_group[i] = static_cast<std::int32_t>(
            std::lower_bound(cohort.groups.begin(), cohort.groups.end(), group_of[i]) - cohort.groups.begin());
        ++group_count[cell_group[i]];
      }
      for (std::size_t i = 0; i < cohort.donors.size(); ++i) {
        auto& donor = cohort.donors[i];
        donor.shares_support = true;
        donor.n_points = k;
        donor.weights.assign(static_cast<std::size_t>(k), 0.0);
        for (const auto r : cells.rows[i]) donor.weights[cell_group[r]] += 1.0;
        for (auto& w : donor.weights) w /= static_cast<double>(donor.n_cells_total);
      }
    }
    attach_gene_loadings(cohort, source);
  });
  comm.gather_warnings(warnings);

  if (cohort.identical_supports)
    compute_centroids(cohort, source, cells, cell_group, group_count, comm);
  else if (options.normalize)
    compute_normalization(cohort, source, comm);
  return cohort;
}

void load_donors(Cohort& cohort, const CellSource& source, const std::vector<GlobalId>& which,
                 const dist::Comm& comm) {
  comm.phase([&] {
    for (const GlobalId i : which) {
      if (i < 0 || i >= cohort.n_donors())
        throw Error("", "", "internal: donor index " + std::to_string(i) + " out of range");
      Donor& donor = cohort.donors[i];
      if (donor.loaded()) continue;
      auto block = read_donor_rows(source, cohort.feature_element, donor, donor.cells, cohort.dim);
      if (cohort.normalization.applied)
        detail::standardize(block, donor.n_points, cohort.dim, cohort.normalization.mean, cohort.normalization.scale);
      donor.points = std::move(block);
    }
  });
}

void release_donors(Cohort& cohort, const std::vector<GlobalId>& keep) {
  std::vector<char> kept(static_cast<std::size_t>(cohort.n_donors()), 0);
  for (auto u : keep) kept.at(static_cast<std::size_t>(u)) = 1;
  for (std::size_t u = 0; u < kept.size(); ++u)
    if (!kept[u]) std::vector<PointScalar>().swap(cohort.donors[u].points);
}

Cohort build_cohort(const CellSource& source, const CohortOptions& options, const dist::Comm& comm) {
  Cohort cohort = plan_cohort(source, options, comm);
  std::vector<GlobalId> all(static_cast<std::size_t>(cohort.n_donors()));
  std::iota(all.begin(), all.end(), GlobalId(0));
  load_donors(cohort, source, all, comm);
  return cohort;
}

// ------------------------------------------------------------------ files
namespace {
/// Opens the file inside a phase, so a file that fails on one rank fails on all.
std::unique_ptr<AnnDataSource> open_source(const CohortOptions& options, const dist::Comm& comm) {
  std::unique_ptr<AnnDataSource> source;
  comm.phase([&] {
    options.validate();
    source = std::make_unique<AnnDataSource>(options.input);
  });
  return source;
}
}  // namespace

Cohort plan_cohort(const CohortOptions& options, const dist::Comm& comm) {
  const auto source = open_source(options, comm);
  return plan_cohort(*source, options, comm);
}

void load_donors(Cohort& cohort, const std::vector<GlobalId>& which, const dist::Comm& comm) {
  const auto source = open_source(cohort.options, comm);
  load_donors(cohort, *source, which, comm);
}

Cohort build_cohort(const CohortOptions& options, const dist::Comm& comm) {
  const auto source = open_source(options, comm);
  return build_cohort(*source, options, comm);
}

std::string describe(const Cohort& cohort) {
  std::ostringstream out;
  out << "cohort: " << cohort.n_donors() << " donors, " << cohort.n_classes() << " classes, "
      << cohort.total_points() << " support points of dimension " << cohort.dim << " (from "
      << cohort.feature_element << ")\n";
  std::vector<std::int64_t> per_class(cohort.classes.size(), 0);
  for (const auto& d : cohort.donors) ++per_class[d.label];
  out << "classes:";
  for (std::size_t c = 0; c < cohort.classes.size(); ++c)
    out << (c ? ", " : " ") << cohort.classes[c] << " (" << per_class[c] << " donors)";
  out << "\n";
  if (cohort.identical_supports)
    out << "support: " << cohort.groups.size() << " group centroids of obs '" << cohort.options.group_by
        << "'; weights are each donor's group fractions\n";
  else
    out << "support: " << (cohort.options.all_cells ? std::string("all cells")
                                                    : std::to_string(cohort.options.n_cells) + " cells")
        << " per donor" << (cohort.options.keep_small_donors ? " (small donors kept whole)" : "") << "\n";
  if (!cohort.dropped_donors.empty())
    out << "dropped: " << cohort.dropped_donors.size() << " donors with too few cells\n";
  if (cohort.normalization.applied)
    out << "normalised: z-score" << (cohort.normalization.scalar ? " (one scalar mean and SD)" : " per feature")
        << "\n";
  return out.str();
}

}  // namespace kotml::data
