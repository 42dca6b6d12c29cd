// The AnnData writer: write -> read round trips for dense and CSR X with every
// column kind, obsm/varm/uns/layers; atomic replacement; inconsistent content
// refused before anything is written. (That anndata.read_h5ad opens these files
// is checked by fixtures/check_written_by_kotml.py, which drives the
// WritesFileForPythonCheck test below.)

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io_test_support.hpp"
#include "kotml/core/error.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

using kotml::Error;
using kotml::io::AnnDataContent;
using kotml::io::AnnDataReader;
using kotml::io::Column;
using kotml::io::ColumnKind;
using kotml::io::MatrixStorage;
using kotml::test::TempDir;
namespace t = kotml::io::test;

namespace {

Column categorical(const std::string& name, std::vector<std::string> categories,
                   std::vector<std::int32_t> codes, bool ordered = false) {
  Column c;
  c.name = name;
  c.kind = ColumnKind::categorical;
  c.categories = std::move(categories);
  c.codes = std::move(codes);
  c.ordered = ordered;
  return c;
}

Column numeric(const std::string& name, ColumnKind kind, std::vector<double> numbers,
               std::string dtype = "", std::vector<std::uint8_t> missing = {}) {
  Column c;
  c.name = name;
  c.kind = kind;
  c.numbers = std::move(numbers);
  c.dtype = std::move(dtype);
  c.missing = std::move(missing);
  return c;
}

Column strings(const std::string& name, ColumnKind kind, std::vector<std::string> values,
               std::vector<std::uint8_t> missing = {}) {
  Column c;
  c.name = name;
  c.kind = kind;
  c.strings = std::move(values);
  c.missing = std::move(missing);
  return c;
}

/// The content the round trips and the Python check use: 5 cells x 4 genes.
AnnDataContent sample_content(bool sparse) {
  AnnDataContent c;
  c.n_obs = 5;
  c.n_vars = 4;
  const std::vector<float> dense{0, 1.5f, 0, 2, 0, 0, 0, 0, 3, 0, 4.25f, 0, 0, 0, 0, 5, 6, 7, 8, 9};
  if (sparse) {
    c.x_is_sparse = true;
    c.x_csr.rows = 5;
    c.x_csr.cols = 4;
    c.x_csr.indptr = {0};
    for (std::int64_t i = 0; i < 5; ++i) {
      for (std::int64_t j = 0; j < 4; ++j)
        if (dense[static_cast<std::size_t>(i * 4 + j)] != 0) {
          c.x_csr.indices.push_back(j);
          c.x_csr.values.push_back(dense[static_cast<std::size_t>(i * 4 + j)]);
        }
      c.x_csr.indptr.push_back(static_cast<std::int64_t>(c.x_csr.values.size()));
    }
  } else {
    c.x_dense = dense;
  }
  c.obs_names = {"cell-a", "cell-b", "cell-c", "cell-d", "cell-e"};
  c.var_names = {"GENE1", "GENE2", "GENE3", "GENE4"};
  c.obs_columns = {
      categorical("donor", {"d1", "d2", "d3"}, {0, 1, -1, 2, 0}),
      categorical("stage", {"early", "late"}, {1, 0, 0, 1, 1}, true),
      strings("barcode", ColumnKind::string, {"AAA", "CCC", "GGG", "TTT", "ACG"}),
      numeric("score", ColumnKind::numeric, {0.5, -1.25, 3, 1e-5, 2.5e20}),
      numeric("n_genes", ColumnKind::numeric, {1, 2, 3, 4, 5}, "int32"),
      numeric("is_doublet", ColumnKind::boolean, {0, 1, 0, 0, 1}),
      numeric("batch", ColumnKind::nullable_integer, {7, 0, 9, 10, 11}, "int64", {0, 1, 0, 0, 0}),
      numeric("passed", ColumnKind::nullable_boolean, {1, 0, 0, 1, 1}, "bool", {0, 0, 1, 0, 0}),
      strings("note", ColumnKind::nullable_string, {"x", "", "y", "z", "w"}, {0, 1, 0, 0, 0}),
  };
  c.var_columns = {strings("symbol", ColumnKind::string, {"S1", "S2", "S3", "S4"}),
                   numeric("length", ColumnKind::numeric, {100, 200, 300, 400}, "int64")};
  c.obsm = {{"X_pca", {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2}}}};
  c.varm = {{"loadings", {{0.1, 0.2, 0.3, 0.4}, {4, 1}}}};
  c.uns_scalars = {{"resolution", 0.5}, {"params/k", 3}};
  c.uns_strings = {{"method", "leiden"}, {"params/metric", "euclidean"}};
  c.uns_arrays = {{"weights", {{0.25, 0.5, 0.25}, {3}}}, {"grid", {{1, 2, 3, 4, 5, 6}, {2, 3}}}};
  kotml::io::CsrMatrix<float> counts;
  counts.rows = 5;
  counts.cols = 4;
  counts.indptr = {0, 1, 1, 3, 3, 4};
  counts.indices = {3, 0, 2, 1};
  counts.values = {10, 20, 30, 40};
  c.layers = {{"counts", counts}};
  return c;
}

void expect_round_trip(const std::string& path, const AnnDataContent& c) {
  const AnnDataReader r(path);
  EXPECT_EQ(r.encoding_version(), "0.1.0");
  EXPECT_EQ(r.n_obs(), c.n_obs);
  EXPECT_EQ(r.n_vars(), c.n_vars);
  const auto x = r.matrix_info("X");
  EXPECT_EQ(x.storage, c.x_is_sparse ? MatrixStorage::csr : MatrixStorage::dense);
  EXPECT_EQ(x.dtype, "float32");
  const std::vector<float> expect_dense{0, 1.5f, 0, 2, 0, 0, 0, 0, 3, 0, 4.25f, 0, 0, 0, 0, 5, 6, 7, 8, 9};
  EXPECT_EQ(r.read_dense<float>("X"), expect_dense);
  if (c.x_is_sparse) {
    const auto csr = r.read_csr<float>("X");
    EXPECT_EQ(csr.indptr, c.x_csr.indptr);
    EXPECT_EQ(csr.indices, c.x_csr.indices);
    EXPECT_EQ(csr.values, c.x_csr.values);
    EXPECT_EQ(x.nnz, static_cast<std::int64_t>(c.x_csr.values.size()));
  }
  EXPECT_EQ(r.read_rows<float>("X", {4, 1}),
            (std::vector<float>{6, 7, 8, 9, 0, 0, 0, 0}));
  EXPECT_EQ(r.obs_names(), c.obs_names);
  EXPECT_EQ(r.var_names(), c.var_names);

  std::vector<std::string> names;
  for (const auto& col : c.obs_columns) names.push_back(col.name);
  EXPECT_EQ(r.obs_columns(), names);
  const auto donor = r.obs("donor");
  EXPECT_EQ(donor.kind, ColumnKind::categorical);
  EXPECT_EQ(donor.dtype, "int8");
  EXPECT_EQ(donor.categories, (std::vector<std::string>{"d1", "d2", "d3"}));
  EXPECT_EQ(donor.codes, (std::vector<std::int32_t>{0, 1, -1, 2, 0}));
  EXPECT_EQ(donor.as_strings(), (std::vector<std::string>{"d1", "d2", "", "d3", "d1"}));
  EXPECT_FALSE(donor.ordered);
  EXPECT_TRUE(r.obs("stage").ordered);
  EXPECT_EQ(r.obs("barcode").strings, (std::vector<std::string>{"AAA", "CCC", "GGG", "TTT", "ACG"}));
  EXPECT_EQ(r.obs("score").numbers, (std::vector<double>{0.5, -1.25, 3, 1e-5, 2.5e20}));
  EXPECT_EQ(r.obs("score").as_strings(),
            (std::vector<std::string>{"0.5", "-1.25", "3.0", "1e-05", "2.5e+20"}));
  const auto n_genes = r.obs("n_genes");
  EXPECT_EQ(n_genes.dtype, "int32");
  EXPECT_EQ(n_genes.as_strings(), (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  const auto doublet = r.obs("is_doublet");
  EXPECT_EQ(doublet.kind, ColumnKind::boolean);
  EXPECT_EQ(doublet.as_strings(), (std::vector<std::string>{"False", "True", "False", "False", "True"}));
  const auto batch = r.obs("batch");
  EXPECT_EQ(batch.kind, ColumnKind::nullable_integer);
  EXPECT_EQ(batch.as_strings(), (std::vector<std::string>{"7", "", "9", "10", "11"}));
  const auto passed = r.obs("passed");
  EXPECT_EQ(passed.kind, ColumnKind::nullable_boolean);
  EXPECT_EQ(passed.as_strings(), (std::vector<std::string>{"True", "False", "", "True", "True"}));
  const auto note = r.obs("note");
  EXPECT_EQ(note.kind, ColumnKind::nullable_string);
  EXPECT_EQ(note.as_strings(), (std::vector<std::string>{"x", "", "y", "z", "w"}));
  EXPECT_EQ(note.missing, (std::vector<std::uint8_t>{0, 1, 0, 0, 0}));

  EXPECT_EQ(r.var("symbol").strings, (std::vector<std::string>{"S1", "S2", "S3", "S4"}));
  EXPECT_EQ(r.var("length").dtype, "int64");

  EXPECT_EQ(r.obsm_keys(), (std::vector<std::string>{"X_pca"}));
  EXPECT_EQ(r.read_dense<double>("obsm/X_pca"), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r.matrix_info("obsm/X_pca").cols, 2);
  EXPECT_EQ(r.read_dense<double>("varm/loadings"), (std::vector<double>{0.1, 0.2, 0.3, 0.4}));
  EXPECT_EQ(r.uns_number("resolution"), 0.5);
  EXPECT_EQ(r.uns_number("params/k"), 3);
  EXPECT_EQ(r.uns_string("method"), "leiden");
  EXPECT_EQ(r.uns_string("params/metric"), "euclidean");
  EXPECT_EQ(r.describe("uns/params").encoding, "dict");
  std::vector<std::int64_t> shape;
  EXPECT_EQ(r.uns_array("grid", &shape), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(r.layers(), (std::vector<std::string>{"counts"}));
  EXPECT_EQ(r.read_dense<float>("layers/counts"),
            (std::vector<float>{0, 0, 0, 10, 0, 0, 0, 0, 20, 0, 30, 0, 0, 0, 0, 0, 0, 40, 0, 0}));
  EXPECT_FALSE(r.has_raw());
}

}  // namespace

TEST(AnnDataWrite, DenseRoundTrip) {
  TempDir dir;
  const auto content = sample_content(false);
  kotml::io::write_anndata(dir.file("dense.h5ad"), content);
  expect_round_trip(dir.file("dense.h5ad"), content);
}

TEST(AnnDataWrite, CsrRoundTripWithCompression) {
  TempDir dir;
  auto content = sample_content(true);
  content.compression_level = 4;
  kotml::io::write_anndata(dir.file("csr.h5ad"), content);
  expect_round_trip(dir.file("csr.h5ad"), content);
}

TEST(AnnDataWrite, DefaultNamesAndEmptyFrames) {
  TempDir dir;
  AnnDataContent c;
  c.n_obs = 3;
  c.n_vars = 2;
  c.x_dense = {1, 2, 3, 4, 5, 6};
  kotml::io::write_anndata(dir.file("plain.h5ad"), c);
  const AnnDataReader r(dir.file("plain.h5ad"));
  EXPECT_EQ(r.obs_names(), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(r.var_names(), (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(r.obs_columns().empty());
  EXPECT_TRUE(r.uns_keys().empty());
  // anndata writes an empty column-order as an empty float64 array; so do we.
  EXPECT_EQ(r.file().attribute_type("obs", "column-order").dtype, "float64");
}

TEST(AnnDataWrite, ReplacesAtomicallyAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("out.h5ad");
  kotml::io::write_anndata(path, sample_content(false));
  auto bigger = sample_content(true);
  kotml::io::write_anndata(path, bigger);
  EXPECT_EQ(AnnDataReader(path).matrix_info("X").storage, MatrixStorage::csr);

  // Inconsistent content: refused before writing; the old file stays intact.
  auto broken = sample_content(false);
  broken.obs_columns[0].codes[1] = 7;
  try {
    kotml::io::write_anndata(path, broken);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.element(), "obs/donor");
  }
  EXPECT_EQ(AnnDataReader(path).matrix_info("X").storage, MatrixStorage::csr);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

TEST(AnnDataWrite, RefusesInconsistentContent) {
  TempDir dir;
  const std::string path = dir.file("never.h5ad");
  auto expect_refused = [&](AnnDataContent c, const std::string& element) {
    try {
      kotml::io::write_anndata(path, c);
      ADD_FAILURE() << "accepted; expected an error about " << element;
    } catch (const Error& e) {
      EXPECT_EQ(e.element(), element) << e.what();
    }
    EXPECT_FALSE(kotml::test::file_exists(path));
  };
  auto c = sample_content(false);
  c.x_dense.pop_back();
  expect_refused(c, "X");
  c = sample_content(true);
  c.x_csr.indices[0] = 4;
  expect_refused(c, "X");
  c = sample_content(false);
  c.obs_columns[2].strings.pop_back();
  expect_refused(c, "obs/barcode");
  c = sample_content(false);
  c.obs_columns[1].categories = {"early", "early"};
  expect_refused(c, "obs/stage");
  c = sample_content(false);
  c.obs_columns.push_back(c.obs_columns[0]);
  expect_refused(c, "obs/donor");
  c = sample_content(false);
  c.obs_columns[4].numbers[0] = 1.5;  // int32 column
  expect_refused(c, "obs/n_genes");
  c = sample_content(false);
  c.obsm[0].second.second = {4, 2};
  expect_refused(c, "obsm/X_pca");
  c = sample_content(false);
  c.var_names.pop_back();
  expect_refused(c, "var/_index");
  c = sample_content(false);
  c.layers[0].second.cols = 5;
  expect_refused(c, "layers/counts");
  c = sample_content(false);
  c.uns_strings.push_back({"resolution", "again"});
  expect_refused(c, "uns/resolution");
}

TEST(AnnDataWrite, LayerWithXsPatternReadsAsAFullCsrGroupAndSharesTheIndices) {
  TempDir dir;
  auto c = sample_content(true);
  std::vector<float> doubled = c.x_csr.values;
  for (auto& v : doubled) v *= 2.0f;
  c.layers_with_x_pattern.emplace_back("doubled", doubled);
  const std::string path = dir.file("pattern.h5ad");
  kotml::io::write_anndata(path, c);
  const AnnDataReader r(path);
  const auto layer = r.read_csr<float>("layers/doubled");
  EXPECT_EQ(layer.values, doubled);
  EXPECT_EQ(layer.indices, c.x_csr.indices);
  EXPECT_EQ(layer.indptr, c.x_csr.indptr);
  EXPECT_EQ(r.matrix_info("layers/doubled").rows, c.n_obs);
  EXPECT_EQ(r.matrix_info("layers/doubled").cols, c.n_vars);
  // One copy of the pattern on disk: the layer's indices are X's object.
  const auto& file = r.file();
  EXPECT_TRUE(file.same_object("layers/doubled/indices", "X/indices"));
  EXPECT_TRUE(file.same_object("layers/doubled/indptr", "X/indptr"));
  EXPECT_FALSE(file.same_object("layers/doubled/data", "X/data"));

  c.layers_with_x_pattern[0].second.pop_back();
  EXPECT_THROW(kotml::io::write_anndata(dir.file("short.h5ad"), c), Error);
  EXPECT_FALSE(kotml::test::file_exists(dir.file("short.h5ad")));
  auto dense = sample_content(false);
  dense.layers_with_x_pattern.emplace_back("doubled", doubled);
  EXPECT_THROW(kotml::io::write_anndata(dir.file("dense.h5ad"), dense), kotml::InternalError);
}

// Writes the sample content where fixtures/check_written_by_kotml.py asks
// (KOTML_IO_WRITE_DIR), for anndata.read_h5ad to open; without that variable it
// writes to a temporary folder and checks the files like the tests above.
TEST(AnnDataWrite, WritesFileForPythonCheck) {
  TempDir dir;
  const char* target = std::getenv("KOTML_IO_WRITE_DIR");
  const std::string folder = target ? target : dir.path();
  for (bool sparse : {false, true}) {
    const std::string path = folder + (sparse ? "/kotml_csr.h5ad" : "/kotml_dense.h5ad");
    kotml::io::write_anndata(path, sample_content(sparse));
    expect_round_trip(path, sample_content(sparse));
  }
}

// NaN in a float obs column is pandas' missing value: it reads as missing
// (so a cohort reports cells without a label), never as the label "nan".
TEST(AnnDataWrite, NanInAFloatColumnReadsAsMissing) {
  TempDir dir;
  AnnDataContent c = sample_content(false);
  c.obs_columns = {numeric("group", ColumnKind::numeric, {1.5, std::nan(""), 2, 1.5, 2})};
  kotml::io::write_anndata(dir.file("nan.h5ad"), c);
  const auto group = AnnDataReader(dir.file("nan.h5ad")).obs("group");
  EXPECT_FALSE(group.is_missing(0));
  EXPECT_TRUE(group.is_missing(1));
  EXPECT_EQ(group.as_strings(), (std::vector<std::string>{"1.5", "", "2.0", "1.5", "2.0"}));  // as pandas prints floats
}
