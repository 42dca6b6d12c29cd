// kotml map from the command line, end to end, against pairOT a66c7cf's own
// outputs on the fixtures of fixtures/labels_make_fixtures.py (pbmc68k_reduced
// as pairOT's conftest, and a kotml-simulate pair): mappings, distance, label
// distance, similar clusters and potentials; the same bytes for 1, 2 and 3 ranks;
// the label transfer; and one error line with exit code 2, nothing written, for
// each kind of bad input.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kotml/data/sparse.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/map/features.hpp"
#include "labels_fixture.hpp"
#include "support/cli_runner.hpp"

namespace kotml::map {
namespace {

using kotml::test::CliResult;
using kotml::test::run_kotml;
using kotml::test::TempDir;
using fx::PairotFixture;

std::string sample_column(const std::string& name) { return name == "pbmc" ? "sample_id" : "sample"; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Gene lists as CSV files (feature_name column) from the fixture's per-gene
/// flags, so that kotml filters markers exactly as pairOT did with its lists.
void write_gene_lists(const PairotFixture& f, const TempDir& dir) {
  const auto official = f.ints("genes/official"), filtered = f.ints("genes/filtered");
  std::ofstream o(dir.file("official.csv")), x(dir.file("filtered.csv"));
  o << "feature_name\n";
  x << "feature_name\n";
  for (std::size_t g = 0; g < f.aligned.size(); ++g) {
    if (official[g]) o << f.aligned[g] << "\n";
    if (filtered[g]) x << f.aligned[g] << "\n";
  }
}

/// kotml map's arguments for a fixture pair; `extra` adds options or, for an
/// option already set here, replaces its value ("--flag" entries are switches).
std::vector<std::string> map_args(const std::string& query, const std::string& reference, const std::string& out,
                                  const std::string& name, std::int64_t n_top_genes,
                                  const std::vector<std::string>& extra = {}, bool allow_non_integer = true) {
  std::vector<std::pair<std::string, std::string>> options{
      {"--out", out},
      {"--query-label-col", fx::label_column(name)},
      {"--ref-label-col", fx::label_column(name)},
      {"--query-sample-col", sample_column(name)},
      {"--ref-sample-col", sample_column(name)},
      {"--n-top-genes", std::to_string(n_top_genes)}};
  std::vector<std::string> switches{"--quiet"};
  if (allow_non_integer) switches.push_back("--allow-non-integer");
  for (std::size_t k = 0; k < extra.size(); ++k) {
    const bool is_switch = k + 1 == extra.size() || extra[k + 1].rfind("--", 0) == 0;
    if (is_switch) {
      switches.push_back(extra[k]);
      continue;
    }
    const auto it = std::find_if(options.begin(), options.end(), [&](const auto& o) { return o.first == extra[k]; });
    if (it != options.end()) it->second = extra[k + 1];
    else options.emplace_back(extra[k], extra[k + 1]);
    ++k;
  }
  std::vector<std::string> args{"map", query, reference};
  for (const auto& [option, value] : options) {
    args.push_back(option);
    args.push_back(value);
  }
  args.insert(args.end(), switches.begin(), switches.end());
  return args;
}

/// kotml map on a fixture's inputs, as pairOT ran (its gene lists; every cell in
/// the distance blocks, as the fixture's n_samples = max(n_obs)).
CliResult run_on_fixture(const PairotFixture& f, const TempDir& dir, const std::string& out, int ranks = 0,
                         std::vector<std::string> extra = {}) {
  write_gene_lists(f, dir);
  std::vector<std::string> options{"--official-genes", dir.file("official.csv"), "--filtered-genes",
                                   dir.file("filtered.csv"), "--distance-samples", "100000"};
  options.insert(options.end(), extra.begin(), extra.end());
  return run_kotml(
      map_args(f.input("query"), f.input("reference"), out, f.name, static_cast<std::int64_t>(f.hvg.size()), options),
      ranks);
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) d = std::max(d, std::fabs(a[k] - b[k]));
  return d;
}

/// The similar clusters of a fixture group (offsets + reference indices) by name.
std::map<std::string, std::vector<std::string>> pairot_similar(const PairotFixture& f, const std::string& method) {
  const auto offsets = f.ints("similar/" + method + "/default/offsets");
  const auto ref = f.ints("similar/" + method + "/default/ref");
  std::map<std::string, std::vector<std::string>> out;
  for (std::size_t x = 0; x < f.clusters_query.size(); ++x) {
    auto& list = out[f.clusters_query[x]];
    for (auto k = offsets[x]; k < offsets[x + 1]; ++k)
      list.push_back(f.clusters_reference[static_cast<std::size_t>(ref[static_cast<std::size_t>(k)])]);
  }
  return out;
}

std::map<std::string, std::vector<std::string>> kotml_similar(const nlohmann::json& json, const std::string& method) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [query, list] : json[method].items()) {
    auto& names = out[query];
    for (const auto& entry : list) names.push_back(entry["reference"].get<std::string>());
  }
  return out;
}

TEST(MapCli, EqualsPairotEndToEnd) {
  for (const auto& name : fx::fixture_names()) {
    SCOPED_TRACE(name);
    const PairotFixture f(name);
    TempDir dir;
    const auto r = run_on_fixture(f, dir, dir.file("out"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto h5 = io::h5::File::open_read(dir.file("out/map.h5"));
    EXPECT_EQ(h5.read_strings("clusters/query"), f.clusters_query);
    EXPECT_EQ(h5.read_strings("clusters/reference"), f.clusters_reference);
    auto hvg = h5.read_strings("genes/hvg"), expected_hvg = f.hvg;
    std::sort(hvg.begin(), hvg.end());
    std::sort(expected_hvg.begin(), expected_hvg.end());
    EXPECT_EQ(hvg, expected_hvg);
    EXPECT_EQ(h5.read_strings("genes/aligned").size(), f.aligned.size());
    // The label distance is exact; the OT outputs are within fp32 features'
    // rounding (the issue asks for 0.02; measured: 3.3e-7).
    EXPECT_LE(max_abs_difference(h5.read<double>("label_distance"), f.doubles("label_distance")), 1e-12);
    for (const char* m : {"mean", "transported_mass", "jensen_shannon"})
      EXPECT_LE(max_abs_difference(h5.read<double>(std::string("mapping/") + m), f.doubles(std::string("mapping/") + m)),
                1e-5)
          << m;
    EXPECT_LE(max_abs_difference(h5.read<double>("distance"), f.doubles("distance")), 1e-5);
    EXPECT_LE(max_abs_difference(h5.read<double>("potentials/f"), f.doubles("ot/f")), 1e-5);
    EXPECT_LE(max_abs_difference(h5.read<double>("potentials/g"), f.doubles("ot/g")), 1e-5);
    EXPECT_LE(max_abs_difference(h5.read<double>("marginals/a"), f.doubles("marginals/a")), 1e-15);
    const auto config = nlohmann::json::parse(h5.read_string_attribute("/", "configuration"));
    EXPECT_EQ(config["iterations"].get<std::int64_t>(),
              f.h5.read_numeric_attribute<std::int64_t>("ot", "iterations").at(0));
    EXPECT_TRUE(config["converged"].get<bool>());
    const auto similar = nlohmann::json::parse(read_text(dir.file("out/similar_clusters.json")));
    for (const char* m : {"mean", "jensen_shannon"}) EXPECT_EQ(kotml_similar(similar, m), pairot_similar(f, m)) << m;

    // mapping.csv and distance.csv: reference clusters as rows, the same numbers.
    const auto mean = h5.read<double>("mapping/mean");
    std::istringstream csv(read_text(dir.file("out/mapping.csv")));
    std::string line;
    std::getline(csv, line);
    EXPECT_EQ(line.rfind("reference_cluster,", 0), 0u);
    const auto k_q = f.clusters_query.size(), k_r = f.clusters_reference.size();
    for (std::size_t y = 0; y < k_r; ++y) {
      ASSERT_TRUE(std::getline(csv, line));
      std::istringstream fields(line);
      std::string field;
      std::getline(fields, field, ',');
      EXPECT_EQ(field, f.clusters_reference[y]);
      for (std::size_t x = 0; x < k_q; ++x) {
        ASSERT_TRUE(std::getline(fields, field, ','));
        EXPECT_EQ(std::stod(field), mean[x * k_r + y]);
      }
    }
    // The markdown summary names every query cluster with its best match.
    for (const auto& q : f.clusters_query) EXPECT_NE(r.out.find("| " + q + " |"), std::string::npos) << q;
  }
}

TEST(MapCli, DoublePrecisionAndUnfilteredLabelDistance) {
  const PairotFixture f("pbmc");
  TempDir dir;
  const auto r = run_on_fixture(f, dir, dir.file("out"), 0, {"--precision", "double"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto h5 = io::h5::File::open_read(dir.file("out/map.h5"));
  EXPECT_LE(max_abs_difference(h5.read<double>("mapping/mean"), f.doubles("mapping/mean")), 1e-7);
  EXPECT_LE(max_abs_difference(h5.read<double>("distance"), f.doubles("distance")), 1e-7);
  // Without gene lists: pairOT's gene_filtering=False.
  const auto u = run_kotml(map_args(f.input("query"), f.input("reference"), dir.file("plain"), "pbmc", 50));
  ASSERT_EQ(u.exit_code, 0) << u.err;
  const auto plain = io::h5::File::open_read(dir.file("plain/map.h5"));
  EXPECT_LE(max_abs_difference(plain.read<double>("label_distance"), f.doubles("label_distance_unfiltered")), 1e-12);
  EXPECT_GT(max_abs_difference(plain.read<double>("label_distance"), f.doubles("label_distance")), 1e-3);
}

TEST(MapCli, SameBytesOnOneTwoAndThreeRanks) {
  const PairotFixture f("pbmc");
  TempDir dir;
  // Few distance samples, so that the seeded draw matters.
  const std::vector<std::string> extra{"--distance-samples", "7", "--write-h5ad"};
  std::vector<std::string> outs;
  for (int ranks = 1; ranks <= 3; ++ranks) {
    const std::string out = dir.file("out" + std::to_string(ranks));
    auto args = extra;
    args.push_back(out + ".h5ad");
    const auto r = run_on_fixture(f, dir, out, ranks, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    outs.push_back(out);
  }
  for (int k = 1; k < 3; ++k) {
    for (const char* file : {"/mapping.csv", "/distance.csv", "/similar_clusters.json"})
      EXPECT_EQ(read_text(outs[0] + file), read_text(outs[static_cast<std::size_t>(k)] + file)) << file << " " << k;
    const auto a = io::h5::File::open_read(outs[0] + "/map.h5");
    const auto b = io::h5::File::open_read(outs[static_cast<std::size_t>(k)] + "/map.h5");
    for (const char* d : {"mapping/mean", "mapping/transported_mass", "mapping/jensen_shannon", "distance",
                          "potentials/f", "potentials/g", "potentials/errors", "transfer/score",
                          "de/query/ova/logfc", "de/reference/ava/adj_p_value", "de/query/ava/auroc"}) {
      const auto x = a.read<double>(d), y = b.read<double>(d);
      ASSERT_EQ(x.size(), y.size()) << d;
      for (std::size_t i = 0; i < x.size(); ++i)
        EXPECT_TRUE(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) << d << " " << i << " ranks " << k + 1;
    }
    EXPECT_EQ(a.read<std::int64_t>("transfer/label"), b.read<std::int64_t>("transfer/label"));
  }
  // The distance with 7 cells per cluster differs from the one over every cell.
  TempDir all;
  ASSERT_EQ(run_on_fixture(f, all, all.file("out")).exit_code, 0);
  EXPECT_GT(max_abs_difference(io::h5::File::open_read(outs[0] + "/map.h5").read<double>("distance"),
                               io::h5::File::open_read(all.file("out/map.h5")).read<double>("distance")),
            1e-6);
}

TEST(MapCli, LabelTransferWritesObsColumnsConsistentWithTheMapping) {
  const PairotFixture f("pbmc");
  TempDir dir;
  const auto r = run_on_fixture(f, dir, dir.file("out"), 0, {"--write-h5ad", dir.file("annotated.h5ad")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const io::AnnDataReader in(f.input("query")), out(dir.file("annotated.h5ad"));
  ASSERT_EQ(out.n_obs(), in.n_obs());
  EXPECT_EQ(out.obs_names(), in.obs_names());
  const auto label = out.obs("kotml_map_label");
  const auto score = out.obs("kotml_map_score");
  EXPECT_EQ(label.kind, io::ColumnKind::categorical);
  EXPECT_EQ(label.categories, f.clusters_reference);
  const auto h5 = io::h5::File::open_read(dir.file("out/map.h5"));
  const auto codes = h5.read<std::int64_t>("transfer/label");
  const auto k_r = static_cast<double>(f.clusters_reference.size());
  // The original columns are kept; every score is a largest share of k_r.
  EXPECT_EQ(out.obs(fx::label_column("pbmc")).as_strings(), in.obs(fx::label_column("pbmc")).as_strings());
  std::map<std::string, std::map<std::string, int>> votes;
  const auto truth = in.obs(fx::label_column("pbmc")).as_strings();
  for (std::int64_t i = 0; i < out.n_obs(); ++i) {
    EXPECT_EQ(label.codes[static_cast<std::size_t>(i)], codes[static_cast<std::size_t>(i)]);
    const double s = score.numbers[static_cast<std::size_t>(i)];
    EXPECT_GE(s, 1.0 / k_r - 1e-12);
    EXPECT_LE(s, 1.0 + 1e-12);
    ++votes[truth[static_cast<std::size_t>(i)]][label.categories[static_cast<std::size_t>(label.codes[static_cast<std::size_t>(i)])]];
  }
  // On this fixture pairOT maps every query cluster best to its namesake: most
  // of each cluster's cells are transferred to it as well.
  for (const auto& [cluster, counts] : votes) {
    int total = 0;
    for (const auto& [_, c] : counts) total += c;
    EXPECT_GT(counts.count(cluster) ? counts.at(cluster) : 0, total / 2) << cluster;
  }
  // The input is untouched.
  EXPECT_FALSE(io::AnnDataReader(f.input("query")).obs_columns().empty());
  for (const auto& c : in.obs_columns()) EXPECT_NE(c, "kotml_map_label");
}

// ------------------------------------------------------------------ bad input

/// The simulated fixture's query or reference, loaded for editing.
io::AnnDataContent load(const std::string& path) {
  const io::AnnDataReader r(path);
  io::AnnDataContent c;
  c.n_obs = r.n_obs();
  c.n_vars = r.n_vars();
  c.x_is_sparse = true;
  c.x_csr = r.read_csr<float>("X");
  c.obs_names = r.obs_names();
  c.var_names = r.var_names();
  for (const auto& name : r.obs_columns()) {
    auto column = r.obs(name);
    column.name = name;
    c.obs_columns.push_back(column);
  }
  return c;
}

io::Column& obs_column(io::AnnDataContent& c, const std::string& name) {
  for (auto& column : c.obs_columns)
    if (column.name == name) return column;
  throw std::runtime_error("no obs column " + name);
}

/// Runs kotml map on (query, reference) and expects one error line naming
/// `expected`, exit 2, and no output folder content.
void expect_refused(const std::string& query, const std::string& reference, const std::string& expected,
                    std::vector<std::string> extra = {}, int ranks = 0) {
  TempDir dir;
  const auto args = map_args(query, reference, dir.file("out"), "sim", 200, extra, false);
  const auto r = run_kotml(args, ranks);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto lines = r.error_lines();
  std::vector<std::string> errors;
  for (const auto& l : lines)
    if (l.find("error") != std::string::npos) errors.push_back(l);
  ASSERT_EQ(errors.size(), 1u) << r.err;
  EXPECT_NE(errors[0].find(expected), std::string::npos) << errors[0];
  for (const char* file : {"map.h5", "mapping.csv", "distance.csv", "similar_clusters.json"})
    EXPECT_FALSE(kotml::test::file_exists(dir.file(std::string("out/") + file))) << file;
}

TEST(MapCli, UseRepTakesTheCosineOnAnEmbedding) {
  // The rank features of pairOT's HVGs handed over as obsm: the same problem
  // through the embedding path, so pairOT's outputs again.
  const PairotFixture f("pbmc");
  TempDir dir;
  write_gene_lists(f, dir);
  for (const std::string side : {"query", "reference"}) {
    auto c = load(f.input(side));
    std::vector<std::int64_t> columns;
    for (const auto& gene : f.hvg)
      columns.push_back(std::find(c.var_names.begin(), c.var_names.end(), gene) - c.var_names.begin());
    const auto ranks = rank_features(data::select_columns(c.x_csr, columns));
    c.obsm.push_back({"X_rank", {std::vector<double>(ranks.begin(), ranks.end()),
                                 {c.n_obs, static_cast<std::int64_t>(columns.size())}}});
    io::write_anndata(dir.file(side + ".h5ad"), c);
  }
  const auto r = run_kotml(map_args(dir.file("query.h5ad"), dir.file("reference.h5ad"), dir.file("out"), "pbmc", 50,
                                    {"--use-rep", "X_rank", "--official-genes", dir.file("official.csv"),
                                     "--filtered-genes", dir.file("filtered.csv"), "--distance-samples", "100000"}),
                           2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto h5 = io::h5::File::open_read(dir.file("out/map.h5"));
  EXPECT_TRUE(h5.read_strings("genes/hvg").empty());
  EXPECT_LE(max_abs_difference(h5.read<double>("mapping/mean"), f.doubles("mapping/mean")), 1e-5);
  EXPECT_LE(max_abs_difference(h5.read<double>("distance"), f.doubles("distance")), 1e-5);
  // A missing embedding is one error line.
  expect_refused(dir.file("query.h5ad"), dir.file("reference.h5ad"), "no such embedding",
                 {"--use-rep", "X_umap", "--query-label-col", "bulk_labels", "--ref-label-col", "bulk_labels",
                  "--query-sample-col", "sample_id", "--ref-sample-col", "sample_id", "--allow-non-integer"});
}

TEST(MapCli, BadInputIsOneLineAndExitTwo) {
  const PairotFixture f("sim");
  const std::string query = f.input("query"), reference = f.input("reference");
  TempDir dir;

  // A label column missing on either side.
  expect_refused(query, reference, "no such obs column", {"--query-label-col", "celltype"});
  expect_refused(query, reference, "no such obs column", {"--ref-sample-col", "donor"}, 2);

  // Fewer than 50 shared expressed genes.
  {
    auto c = load(query);
    std::vector<std::int64_t> keep;
    for (std::int64_t g = 0; g < 40; ++g) keep.push_back(g);
    c.x_csr = data::select_columns(c.x_csr, keep);
    c.n_vars = 40;
    c.var_names.resize(40);
    io::write_anndata(dir.file("few_genes.h5ad"), c);
    expect_refused(dir.file("few_genes.h5ad"), reference, "kotml map needs at least 50");
  }
  // NaN and negative counts; non-integer counts without --allow-non-integer.
  for (const auto& [file, value, expected] :
       std::vector<std::tuple<std::string, float, std::string>>{
           {"nan.h5ad", std::numeric_limits<float>::quiet_NaN(), "NaN"},
           {"negative.h5ad", -1.0f, "negative"},
           {"fraction.h5ad", 2.5f, "non-integer"}}) {
    auto c = load(query);
    c.x_csr.values[3] = value;
    io::write_anndata(dir.file(file), c);
    expect_refused(dir.file(file), reference, expected, {}, file == "nan.h5ad" ? 3 : 0);
  }
  {
    // Non-integer counts are accepted, with a warning, under --allow-non-integer.
    auto c = load(query);
    c.x_csr.values[3] += 0.5f;
    io::write_anndata(dir.file("allowed.h5ad"), c);
    const auto r = run_kotml(map_args(dir.file("allowed.h5ad"), reference, dir.file("allowed_out"), "sim", 200));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("non-integer"), std::string::npos);
  }
  // A missing label.
  {
    auto c = load(query);
    auto& labels = obs_column(c, "cell_type");
    labels.codes[5] = -1;
    io::write_anndata(dir.file("missing_label.h5ad"), c);
    expect_refused(dir.file("missing_label.h5ad"), reference, "has no label");
  }
  // Clusters without a sample of >= 2 cells: skipped with a warning while two
  // remain, refused when fewer do.
  {
    auto c = load(query);
    auto& labels = obs_column(c, "cell_type");
    auto& samples = obs_column(c, "sample");
    // Every cell of cluster 0 in its own new sample.
    std::int32_t next = static_cast<std::int32_t>(samples.categories.size());
    for (std::size_t i = 0; i < labels.codes.size(); ++i)
      if (labels.codes[i] == 0) {
        samples.categories.push_back("solo_" + std::to_string(next));
        samples.codes[i] = next++;
      }
    io::write_anndata(dir.file("one_skipped.h5ad"), c);
    const auto r = run_kotml(map_args(dir.file("one_skipped.h5ad"), reference, dir.file("skipped_out"), "sim", 200));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("cluster '" + labels.categories[0] + "' has no sample with 2 or more cells"),
              std::string::npos)
        << r.err;
    const auto h5 = io::h5::File::open_read(dir.file("skipped_out/map.h5"));
    const auto dlab = h5.read<double>("label_distance");
    const auto k_r = f.clusters_reference.size();
    for (std::size_t y = 0; y < k_r; ++y) EXPECT_EQ(dlab[y], 1.0);  // no markers: as far as it gets

    for (std::size_t i = 0; i < labels.codes.size(); ++i)
      if (labels.codes[i] != 0 && labels.codes[i] != 1) {
        samples.categories.push_back("solo_" + std::to_string(next));
        samples.codes[i] = next++;
      }
    io::write_anndata(dir.file("one_left.h5ad"), c);
    expect_refused(dir.file("one_left.h5ad"), reference, "differential expression needs at least 2");
  }
  // Outputs onto an input are refused before any work; the input is untouched.
  {
    const auto before = read_text(query);
    expect_refused(query, reference, "write-h5ad", {"--write-h5ad", query});
    EXPECT_EQ(read_text(query), before);
  }
  // Options out of range.
  expect_refused(query, reference, "epsilon", {"--epsilon", "-1"});
  expect_refused(query, reference, "marginals", {"--marginals", "even"});
  expect_refused(query, reference, "filtered-genes", {"--official-genes", query});
}

}  // namespace
}  // namespace kotml::map
