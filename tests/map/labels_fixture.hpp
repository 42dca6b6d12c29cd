#pragma once
// Reading the pairOT fixtures of tests/map/fixtures/labels_make_fixtures.py:
// labels_<name>_{query,reference}.h5ad (the inputs) and labels_<name>_pairot.h5
// (pairOT's intermediates and outputs; layout in the script's docstring).

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/map/markers.hpp"
#include "support/cli_runner.hpp"

namespace kotml::map::fx {

inline std::string fixture_path(const std::string& file) {
  return kotml::test::test_source_path("map/fixtures/" + file);
}

/// The label column of each fixture's inputs.
inline std::string label_column(const std::string& name) { return name == "pbmc" ? "bulk_labels" : "cell_type"; }

struct PairotFixture {
  std::string name;
  io::h5::File h5;
  std::vector<std::string> clusters_query, clusters_reference, aligned, hvg;

  explicit PairotFixture(const std::string& fixture_name)
      : name(fixture_name), h5(io::h5::File::open_read(fixture_path("labels_" + fixture_name + "_pairot.h5"))) {
    clusters_query = h5.read_strings("clusters/query");
    clusters_reference = h5.read_strings("clusters/reference");
    aligned = h5.read_strings("genes/aligned");
    hvg = h5.read_strings("genes/hvg");
  }

  std::string input(const std::string& side) const {
    return fixture_path("labels_" + name + "_" + side + ".h5ad");
  }
  std::int64_t k(const std::string& side) const {
    return static_cast<std::int64_t>(side == "query" ? clusters_query.size() : clusters_reference.size());
  }
  std::vector<double> doubles(const std::string& dataset) const { return h5.read<double>(dataset); }
  std::vector<std::int64_t> ints(const std::string& dataset) const { return h5.read<std::int64_t>(dataset); }

  /// A flattened table group: (x, y, gene) columns and optional values.
  struct Flat {
    std::vector<std::int64_t> x, y, gene;
    std::vector<double> log_fc, adj, auroc;
  };
  Flat flat(const std::string& group, bool values) const {
    Flat f;
    f.x = ints(group + "/x");
    if (h5.exists(group + "/y")) f.y = ints(group + "/y");
    f.gene = ints(group + "/gene");
    if (values) {
      f.log_fc = doubles(group + "/logFC");
      f.adj = doubles(group + "/adj_P_Val");
      f.auroc = doubles(group + "/auroc");
    }
    return f;
  }

  /// pairOT's DE tables of one side (gene indices into `aligned`).
  DeResults de(const std::string& side) const {
    const auto f = flat("de/" + side, true);
    DeResults de(k(side));
    for (std::size_t r = 0; r < f.x.size(); ++r) {
      GeneTable& t = f.y[r] < 0 ? de.ova[static_cast<std::size_t>(f.x[r])] : de.pair(f.x[r], f.y[r]);
      t.gene.push_back(f.gene[r]);
      t.log_fc.push_back(f.log_fc[r]);
      t.adj_p_value.push_back(f.adj[r]);
      t.auroc.push_back(f.auroc[r]);
    }
    return de;
  }

  /// Gene lists of filtered tables: [x * k + y] with y = x for the OVA table.
  std::vector<std::vector<std::int64_t>> filtered(const std::string& group, const std::string& side) const {
    const auto f = flat(group + "/" + side + "/filtered", false);
    const std::int64_t kk = k(side);
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(kk * kk));
    for (std::size_t r = 0; r < f.x.size(); ++r) {
      const std::int64_t y = f.y[r] < 0 ? f.x[r] : f.y[r];
      out[static_cast<std::size_t>(f.x[r] * kk + y)].push_back(f.gene[r]);
    }
    return out;
  }

  std::vector<std::vector<std::int64_t>> selected(const std::string& group, const std::string& side) const {
    const auto f = flat(group + "/" + side + "/selected", false);
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(k(side)));
    for (std::size_t r = 0; r < f.x.size(); ++r) out[static_cast<std::size_t>(f.x[r])].push_back(f.gene[r]);
    return out;
  }

  /// Per aligned gene: official and not filtered (pairOT's gene_filtering).
  std::vector<std::uint8_t> allowed() const {
    const auto official = h5.read<std::uint8_t>("genes/official");
    const auto filtered = h5.read<std::uint8_t>("genes/filtered");
    std::vector<std::uint8_t> keep(official.size());
    for (std::size_t g = 0; g < keep.size(); ++g) keep[g] = official[g] && !filtered[g];
    return keep;
  }
};

inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names{"pbmc", "sim"};
  return names;
}

}  // namespace kotml::map::fx
