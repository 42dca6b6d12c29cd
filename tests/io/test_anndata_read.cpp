// The AnnData reader against files written by Python anndata 0.11 and a
// hand-made anndata 0.7 layout (fixtures/make_fixtures.py, facts in
// fixtures/expected.json), and against the real kidney file.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "io_test_support.hpp"
#include "kotml/core/error.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

using kotml::Error;
using kotml::io::AnnDataReader;
using kotml::io::ColumnKind;
using kotml::io::CsrMatrix;
using kotml::io::MatrixStorage;
using nlohmann::json;
namespace t = kotml::io::test;

namespace {

std::string storage_name(MatrixStorage s) { return kotml::io::to_string(s); }

/// Row sums and column-weighted row sums of a dense row-major matrix: they
/// catch values in the wrong row or the wrong column.
void expect_checksums(const std::vector<double>& dense, std::int64_t rows, std::int64_t cols,
                      const json& facts, const std::string& what) {
  ASSERT_EQ(static_cast<std::int64_t>(dense.size()), rows * cols) << what;
  for (std::int64_t i = 0; i < rows; ++i) {
    double sum = 0, weighted = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double v = dense[static_cast<std::size_t>(i * cols + j)];
      sum += v;
      weighted += v * static_cast<double>(j + 1);
    }
    const double expect_sum = facts.at("row_sums")[static_cast<std::size_t>(i)];
    const double expect_weighted = facts.at("row_weighted_sums")[static_cast<std::size_t>(i)];
    EXPECT_NEAR(sum, expect_sum, 1e-9 * (1 + std::abs(expect_sum))) << what << " row " << i;
    EXPECT_NEAR(weighted, expect_weighted, 1e-9 * (1 + std::abs(expect_weighted))) << what << " row " << i;
  }
}

std::vector<double> to_dense(const CsrMatrix<double>& m) {
  std::vector<double> dense(static_cast<std::size_t>(m.rows * m.cols), 0.0);
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (auto k = m.indptr[static_cast<std::size_t>(i)]; k < m.indptr[static_cast<std::size_t>(i) + 1]; ++k)
      dense[static_cast<std::size_t>(i * m.cols + m.indices[static_cast<std::size_t>(k)])] +=
          m.values[static_cast<std::size_t>(k)];
  return dense;
}

void check_matrix(const AnnDataReader& r, const std::string& element, const json& facts) {
  SCOPED_TRACE(r.path() + ":" + element);
  const auto info = r.matrix_info(element);
  EXPECT_EQ(storage_name(info.storage), facts.at("storage").get<std::string>());
  EXPECT_EQ(info.dtype, facts.at("dtype").get<std::string>());
  EXPECT_EQ(info.nnz, facts.at("nnz").get<std::int64_t>());
  EXPECT_EQ(info.index_dtype, facts.at("index_dtype").get<std::string>());
  const std::int64_t rows = facts.at("rows"), cols = facts.at("cols");
  ASSERT_EQ(info.rows, rows);
  ASSERT_EQ(info.cols, cols);

  const auto dense = r.read_dense<double>(element);
  expect_checksums(dense, rows, cols, facts, "read_dense");

  // Selected rows (unsorted, repeated) from every storage.
  const auto selection = facts.at("selected_rows").get<std::vector<std::int64_t>>();
  const auto expect_rows = facts.at("selected_values");
  const auto picked = r.read_rows<double>(element, selection);
  ASSERT_EQ(picked.size(), selection.size() * static_cast<std::size_t>(cols));
  for (std::size_t i = 0; i < selection.size(); ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      EXPECT_NEAR(picked[i * static_cast<std::size_t>(cols) + static_cast<std::size_t>(j)],
                  expect_rows[i][static_cast<std::size_t>(j)].get<double>(), 1e-12)
          << "row " << selection[i] << " col " << j;
  // float reads agree with double reads to float precision.
  const auto picked_f = r.read_rows<float>(element, selection);
  for (std::size_t k = 0; k < picked.size(); ++k)
    EXPECT_EQ(picked_f[k], static_cast<float>(picked[k]));

  // Whole-matrix CSR: same values, well-formed, column indices sorted per row.
  const auto csr = r.read_csr<double>(element);
  ASSERT_EQ(csr.indptr.size(), static_cast<std::size_t>(rows) + 1);
  EXPECT_EQ(csr.indptr.front(), 0);
  EXPECT_EQ(csr.indptr.back(), static_cast<std::int64_t>(csr.values.size()));
  for (std::int64_t i = 0; i < rows; ++i)
    for (auto k = csr.indptr[static_cast<std::size_t>(i)] + 1; k < csr.indptr[static_cast<std::size_t>(i) + 1]; ++k)
      EXPECT_LT(csr.indices[static_cast<std::size_t>(k) - 1], csr.indices[static_cast<std::size_t>(k)]);
  EXPECT_EQ(to_dense(csr), dense);
  if (info.storage != MatrixStorage::dense) {
    EXPECT_EQ(static_cast<std::int64_t>(csr.values.size()), info.nnz);
  }

  const auto csr_rows = r.read_csr_rows<double>(element, selection);
  EXPECT_EQ(csr_rows.rows, static_cast<std::int64_t>(selection.size()));
  const auto csr_rows_dense = to_dense(csr_rows);
  EXPECT_EQ(csr_rows_dense, picked);

  // A block of rows (a rank's cells): the entries read_csr holds for them.
  const std::int64_t begin = rows / 3, end = rows - rows / 4;
  const auto block = r.read_csr_row_range<double>(element, begin, end);
  ASSERT_EQ(block.rows, end - begin);
  ASSERT_EQ(block.cols, cols);
  ASSERT_EQ(block.indptr.size(), static_cast<std::size_t>(end - begin) + 1);
  const auto base = csr.indptr[static_cast<std::size_t>(begin)];
  for (std::int64_t i = 0; i <= end - begin; ++i)
    EXPECT_EQ(block.indptr[static_cast<std::size_t>(i)], csr.indptr[static_cast<std::size_t>(begin + i)] - base);
  ASSERT_EQ(block.values.size(), block.indices.size());
  ASSERT_EQ(static_cast<std::int64_t>(block.values.size()), block.indptr.back());
  for (std::size_t k = 0; k < block.values.size(); ++k) {
    EXPECT_EQ(block.indices[k], csr.indices[static_cast<std::size_t>(base) + k]);
    EXPECT_EQ(block.values[k], csr.values[static_cast<std::size_t>(base) + k]);
  }
  EXPECT_EQ(r.read_csr_row_range<double>(element, rows, rows).rows, 0);
  EXPECT_THROW(r.read_csr_row_range<double>(element, 0, rows + 1), kotml::Error);
  EXPECT_THROW(r.read_csr_row_range<double>(element, 2, 1), kotml::Error);
}

void check_columns(const AnnDataReader& r, const std::string& frame, const json& facts) {
  const auto names = frame == "obs" ? r.obs_columns() : r.var_columns();
  ASSERT_EQ(names.size(), facts.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const json& f = facts[i];
    SCOPED_TRACE(frame + "/" + names[i]);
    EXPECT_EQ(names[i], f.at("name").get<std::string>());
    const auto c = frame == "obs" ? r.obs(names[i]) : r.var(names[i]);
    EXPECT_EQ(c.name, names[i]);
    EXPECT_EQ(kotml::io::to_string(c.kind), f.at("kind").get<std::string>());
    EXPECT_EQ(c.dtype, f.at("dtype").get<std::string>());
    EXPECT_EQ(static_cast<std::int64_t>(c.categories.size()), f.at("n_categories").get<std::int64_t>());
    EXPECT_EQ(c.categories, f.at("categories").get<std::vector<std::string>>());
    EXPECT_EQ(c.ordered, f.at("ordered").get<bool>());
    const auto missing = std::count_if(c.missing.begin(), c.missing.end(), [](auto m) { return m != 0; });
    EXPECT_EQ(missing, f.at("missing").get<std::int64_t>());
    EXPECT_EQ(c.as_strings(), f.at("labels").get<std::vector<std::string>>());
    if (c.kind == ColumnKind::categorical) {
      for (std::size_t k = 0; k < c.codes.size(); ++k) {
        EXPECT_EQ(c.codes[k] < 0, c.is_missing(static_cast<std::int64_t>(k)));
      }
    }
  }
}

}  // namespace

class Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixture, MatchesAnndataFacts) {
  const std::string name = GetParam();
  const json& facts = t::expected().at("fixtures").at(name);
  const AnnDataReader r(t::fixture(name));
  EXPECT_EQ(r.n_obs(), facts.at("n_obs").get<std::int64_t>());
  EXPECT_EQ(r.n_vars(), facts.at("n_vars").get<std::int64_t>());
  EXPECT_EQ(r.encoding_version(), facts.at("encoding_version").get<std::string>());
  EXPECT_EQ(r.obs_names(), facts.at("obs_names").get<std::vector<std::string>>());
  EXPECT_EQ(r.var_names(), facts.at("var_names").get<std::vector<std::string>>());
  check_matrix(r, "X", facts.at("x"));
  check_columns(r, "obs", facts.at("obs_columns"));
  check_columns(r, "var", facts.at("var_columns"));

  std::vector<std::string> layer_names;
  for (const auto& item : facts.at("layers").items()) {
    layer_names.push_back(item.key());
    check_matrix(r, "layers/" + item.key(), item.value());
  }
  EXPECT_EQ(r.layers(), layer_names);

  for (const char* mapping : {"obsm", "varm"}) {
    std::vector<std::string> keys;
    for (const auto& item : facts.at(mapping).items()) {
      keys.push_back(item.key());
      const std::string element = std::string(mapping) + "/" + item.key();
      const auto info = r.matrix_info(element);
      const auto shape = item.value().at("shape").get<std::vector<std::int64_t>>();
      EXPECT_EQ(storage_name(info.storage), item.value().at("storage").get<std::string>()) << element;
      EXPECT_EQ(info.rows, shape[0]) << element;
      EXPECT_EQ(info.cols, shape[1]) << element;
      if (info.storage == MatrixStorage::dense) {
        EXPECT_EQ(r.read_dense<double>(element), item.value().at("values").get<std::vector<double>>());
      } else {
        EXPECT_THROW(r.read_dense<double>(element), Error) << element;
        EXPECT_EQ(static_cast<std::int64_t>(r.frame_columns(element).size()), shape[1]);
      }
    }
    EXPECT_EQ(std::string(mapping) == "obsm" ? r.obsm_keys() : r.varm_keys(), keys);
  }

  std::vector<std::string> uns_keys;
  for (const auto& item : facts.at("uns").items()) {
    uns_keys.push_back(item.key());
    EXPECT_EQ(r.describe("uns/" + item.key()).encoding, item.value().at("encoding").get<std::string>())
        << item.key();
  }
  EXPECT_EQ(r.uns_keys(), uns_keys);

  if (facts.at("raw").is_null()) {
    EXPECT_FALSE(r.has_raw());
  } else {
    ASSERT_TRUE(r.has_raw());
    EXPECT_EQ(r.raw_n_vars(), facts.at("raw").at("n_vars").get<std::int64_t>());
    check_matrix(r, "raw/X", facts.at("raw").at("x"));
  }
}

INSTANTIATE_TEST_SUITE_P(AnnData, Fixture, ::testing::ValuesIn(t::fixture_names()),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(AnnDataRead, UnsValuesOfDenseFixture) {
  const AnnDataReader r(t::fixture("dense_f32.h5ad"));
  EXPECT_EQ(r.uns_number("n_neighbors"), 15.0);
  EXPECT_EQ(r.uns_number("resolution"), 0.5);
  EXPECT_EQ(r.uns_string("method"), "leiden");
  std::vector<std::int64_t> shape;
  EXPECT_EQ(r.uns_array("weights", &shape), (std::vector<double>{0.25, 0.5, 0.25}));
  EXPECT_EQ(shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(r.uns_array("grid", &shape), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(r.uns_number("params/k"), 3.0);
  EXPECT_EQ(r.uns_string("params/metric"), "euclidean");
  EXPECT_EQ(r.describe("uns/params").encoding, "dict");
  EXPECT_THROW(r.uns_number("method"), Error);
  EXPECT_THROW(r.uns_number("absent"), Error);
  EXPECT_THROW(r.uns_string("absent"), Error);
}

TEST(AnnDataRead, LegacyFixtureDecodesReferencesAndH5sparse) {
  const AnnDataReader r(t::fixture("legacy_07.h5ad"));
  EXPECT_EQ(r.encoding_version(), "");
  const auto donor = r.obs("donor");
  EXPECT_EQ(donor.kind, ColumnKind::categorical);
  EXPECT_EQ(donor.categories, (std::vector<std::string>{"P0", "P1", "P2"}));
  EXPECT_EQ(donor.codes[4], -1);
  EXPECT_EQ(donor.as_strings()[4], "");
  const auto status = r.obs("status");
  EXPECT_TRUE(status.ordered);
  EXPECT_EQ(status.categories, (std::vector<std::string>{"low", "high"}));
  EXPECT_EQ(r.matrix_info("X").storage, MatrixStorage::csr);
  EXPECT_EQ(r.matrix_info("layers/spliced").storage, MatrixStorage::csc);
  EXPECT_EQ(r.describe("X").encoding, "csr_matrix (legacy)");
  EXPECT_EQ(r.uns_number("threshold"), 0.75);
}

TEST(AnnDataRead, UnknownColumnNamesFileAndColumn) {
  const std::string path = t::fixture("csr_f32.h5ad");
  const AnnDataReader r(path);
  try {
    r.obs("no_such_column");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.element(), "obs/no_such_column");
    EXPECT_NE(e.reason().find("columns are: donor, label"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.var("donor"), Error);
  EXPECT_THROW(r.matrix_info("layers/none"), Error);
  EXPECT_EQ(r.matrix_info("obs").storage, MatrixStorage::dataframe);
  EXPECT_THROW(r.read_rows<float>("obs", {0}), Error);  // a dataframe is not a matrix
  EXPECT_THROW(r.matrix_info("obs/donor"), Error);
  EXPECT_THROW(r.read_rows<float>("X", {60}), Error);
  EXPECT_THROW(r.read_rows<float>("X", {-1}), Error);
}

TEST(AnnDataRead, ReaderIsMovable) {
  AnnDataReader a(t::fixture("dense_f64.h5ad"));
  AnnDataReader b(std::move(a));
  EXPECT_EQ(b.n_obs(), 30);
  AnnDataReader c(t::fixture("csr_f32.h5ad"));
  c = std::move(b);
  EXPECT_EQ(c.n_vars(), 5);
}

// ------------------------------------------------------------ kidney (real)

TEST(Kidney, FactsMatchH5py) {
  const std::string path = t::kidney_path();
  if (!kotml::test::file_exists(path)) GTEST_SKIP() << "real data absent: " << path;
  if (!t::expected().contains("kidney")) GTEST_SKIP() << "expected.json was made without the kidney file";
  const json& k = t::expected().at("kidney");
  const AnnDataReader r(path);
  EXPECT_EQ(r.n_obs(), 24227);
  EXPECT_EQ(r.n_vars(), 14);
  EXPECT_EQ(r.n_obs(), k.at("n_obs").get<std::int64_t>());
  const auto x = r.matrix_info("X");
  EXPECT_EQ(x.storage, MatrixStorage::dense);
  EXPECT_EQ(x.dtype, "float32");
  EXPECT_EQ(r.obs_columns(), k.at("column_order").get<std::vector<std::string>>());

  const auto sample = r.obs("sampleID");
  EXPECT_EQ(sample.kind, ColumnKind::categorical);
  EXPECT_EQ(sample.categories.size(), 634u);
  EXPECT_EQ(sample.dtype, "int16");
  const auto status = r.obs("status");
  EXPECT_EQ(status.categories, (std::vector<std::string>{"30-60", "<30", ">60"}));
  EXPECT_EQ(status.dtype, k.at("status_codes_dtype").get<std::string>());
  std::vector<std::int64_t> counts(3, 0);
  for (auto code : status.codes) ++counts[static_cast<std::size_t>(code)];
  EXPECT_EQ(counts, k.at("status_counts").get<std::vector<std::int64_t>>());
  EXPECT_EQ(counts, (std::vector<std::int64_t>{5824, 1704, 16699}));

  const auto rows = k.at("rows").get<std::vector<std::int64_t>>();
  const auto status_labels = status.as_strings(), sample_labels = sample.as_strings();
  const auto age = r.obs("Age"), cell_type = r.obs("Cell_type");
  const auto names = r.obs_names();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto row = static_cast<std::size_t>(rows[i]);
    EXPECT_EQ(status_labels[row], k.at("status_labels")[i].get<std::string>());
    EXPECT_EQ(sample_labels[row], k.at("sample_labels")[i].get<std::string>());
    EXPECT_EQ(age.numbers[row], k.at("age")[i].get<double>());
    EXPECT_EQ(cell_type.numbers[row], k.at("cell_type")[i].get<double>());
    EXPECT_EQ(names[row], k.at("obs_names")[i].get<std::string>());
  }
  EXPECT_EQ(r.var_names(), k.at("var_names").get<std::vector<std::string>>());
  EXPECT_TRUE(r.var_columns().empty());

  const auto values = r.read_rows<float>("X", rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < 14; ++j) sum += values[i * 14 + j];
    const double expect = k.at("row_sums").at(std::to_string(rows[i])).get<double>();
    EXPECT_NEAR(sum, expect, 1e-6 * std::abs(expect)) << "row " << rows[i];
  }
  for (const auto& cell : k.at("cells")) {
    const std::int64_t row = cell[0], col = cell[1];
    const auto one = r.read_rows<float>("X", {row});
    EXPECT_EQ(static_cast<double>(one[static_cast<std::size_t>(col)]), cell[2].get<double>())
        << "X[" << row << ", " << col << "]";
  }
}

// --------------------------------------------------- selective row reading

// A donor's rows are read from the slices of indptr/indices/data that hold
// them, never the whole matrix: with the chunks of every other donor's values
// destroyed, reading one donor still works, and reading a destroyed one fails.
TEST(AnnDataRead, CsrRowsReadOnlyTheirOwnChunks) {
  kotml::test::TempDir dir;
  const std::string path = dir.file("donors.h5ad");
  constexpr std::int64_t donors = 3, rows_per_donor = 2000, per_row = 100, cols = 400;
  kotml::io::AnnDataContent content;
  content.n_obs = donors * rows_per_donor;
  content.n_vars = cols;
  content.x_is_sparse = true;
  content.compression_level = 1;  // chunked, so a chunk can be destroyed alone
  auto& x = content.x_csr;
  x.rows = content.n_obs;
  x.cols = cols;
  x.indptr.push_back(0);
  for (std::int64_t i = 0; i < content.n_obs; ++i) {
    for (std::int64_t k = 0; k < per_row; ++k) {
      x.indices.push_back((i * 7 + k * 4) % cols);
      x.values.push_back(static_cast<float>(i) + 0.001f * static_cast<float>(k));
    }
    std::sort(x.indices.end() - per_row, x.indices.end());
    x.indptr.push_back(static_cast<std::int64_t>(x.indices.size()));
  }
  kotml::io::write_anndata(path, content);

  // Destroy every data chunk that lies entirely outside donor 1's values.
  const std::int64_t donor1_begin = rows_per_donor * per_row, donor1_end = 2 * rows_per_donor * per_row;
  int destroyed = 0;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(file, "X/data", H5P_DEFAULT);
    const hid_t space = H5Dget_space(d);
    hsize_t chunks = 0;
    H5Dget_num_chunks(d, space, &chunks);
    const hid_t dcpl = H5Dget_create_plist(d);
    hsize_t chunk_length = 0;
    H5Pget_chunk(dcpl, 1, &chunk_length);
    std::vector<std::pair<haddr_t, hsize_t>> victims;
    for (hsize_t c = 0; c < chunks; ++c) {
      hsize_t offset = 0, size = 0;
      unsigned mask = 0;
      haddr_t address = 0;
      H5Dget_chunk_info(d, space, c, &offset, &mask, &address, &size);
      const auto first = static_cast<std::int64_t>(offset),
                 last = static_cast<std::int64_t>(offset + chunk_length);
      if (last <= donor1_begin - 8192 || first >= donor1_end + 8192) victims.emplace_back(address, size);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(file);
    for (const auto& [address, size] : victims) {
      t::overwrite_bytes(path, static_cast<std::int64_t>(address), static_cast<std::int64_t>(size));
      ++destroyed;
    }
  }
  ASSERT_GE(destroyed, 4) << "the test needs chunks outside donor 1 to destroy";

  const AnnDataReader r(path);
  std::vector<std::int64_t> donor1(rows_per_donor);
  std::iota(donor1.begin(), donor1.end(), rows_per_donor);
  const auto dense = r.read_rows<float>("X", donor1);
  for (std::int64_t i = 0; i < rows_per_donor; ++i) {
    const std::int64_t row = rows_per_donor + i;
    float sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += dense[static_cast<std::size_t>(i * cols + j)];
    double expect = 0;
    for (std::int64_t k = 0; k < per_row; ++k) expect += static_cast<float>(row) + 0.001f * static_cast<float>(k);
    EXPECT_NEAR(sum, expect, 1e-3 * expect) << "row " << row;
  }
  EXPECT_THROW(r.read_rows<float>("X", {0}), Error);
  EXPECT_THROW(r.read_rows<float>("X", {3 * rows_per_donor - 1}), Error);
}

// Float labels read as Python prints them (pandas' str of a float column), so a
// donor column stored as floats names donors the way scanpy users see them.
TEST(AnnDataRead, FloatLabelsFollowPythonRepr) {
  kotml::io::Column c;
  c.kind = ColumnKind::numeric;
  c.dtype = "float64";
  std::vector<std::string> expect;
  for (const auto& pair : t::expected().at("float_reprs")) {
    c.numbers.push_back(pair[0].get<double>());
    expect.push_back(pair[1].get<std::string>());
  }
  ASSERT_GE(c.numbers.size(), 10u);
  EXPECT_EQ(c.as_strings(), expect);
  c.dtype = "int64";
  c.numbers = {3, -7, 0};
  EXPECT_EQ(c.as_strings(), (std::vector<std::string>{"3", "-7", "0"}));
}
