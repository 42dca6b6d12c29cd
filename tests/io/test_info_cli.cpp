// `kotml info`: the facts it prints for the real files (compared with what h5py
// and anndata say, stored in fixtures/expected.json) and the fixtures, and one
// error line with exit code 2 for every kind of bad input.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "io_test_support.hpp"

using kotml::test::run_kotml;
using kotml::test::TempDir;
using nlohmann::json;
namespace t = kotml::io::test;

namespace {

std::vector<std::vector<std::string>> token_lines(const std::string& text) {
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    lines.push_back(tokens);
  }
  return lines;
}

/// True when some output line consists of exactly these whitespace-separated tokens.
::testing::AssertionResult has_line(const std::string& out, const std::vector<std::string>& tokens) {
  for (const auto& line : token_lines(out))
    if (line == tokens) return ::testing::AssertionSuccess();
  std::string wanted;
  for (const auto& tok : tokens) wanted += tok + " ";
  return ::testing::AssertionFailure() << "no line '" << wanted << "' in:\n" << out;
}

std::string x_line_tail(const json& x, std::int64_t rows, std::int64_t cols) {
  const std::string storage = x.at("storage");
  std::string text = (storage == "dense" ? std::string("dense ") : storage == "csr" ? "CSR " : "CSC ") +
                     x.at("dtype").get<std::string>() + ", " + std::to_string(rows) + " x " +
                     std::to_string(cols);
  if (storage != "dense")
    text += ", " + std::to_string(x.at("nnz").get<std::int64_t>()) + " non-zeros (" +
            x.at("index_dtype").get<std::string>() + " indices)";
  return text;
}

std::vector<std::string> split(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> tokens;
  for (std::string w; in >> w;) tokens.push_back(w);
  return tokens;
}

void expect_one_error_line(const kotml::test::CliResult& r, const std::string& must_contain) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.error_lines()[0].rfind("kotml: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace

// Every real file present: shape, X storage, layers/obsm/uns keys, each obs and
// var column with kind, dtype, categories and missing count.
TEST(InfoCli, RealFilesMatchH5pyAndAnndata) {
  int checked = 0;
  for (const auto& item : t::expected().at("shared").items()) {
    const std::string path = kotml::test::shared_data_path(item.key());
    if (!kotml::test::file_exists(path)) continue;
    SCOPED_TRACE(item.key());
    const json& f = item.value();
    const auto r = run_kotml({"info", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::int64_t n_obs = f.at("n_obs"), n_vars = f.at("n_vars");
    EXPECT_TRUE(has_line(r.out, {"shape", std::to_string(n_obs), "obs", "x", std::to_string(n_vars), "vars"}));
    auto x_tokens = split("X " + x_line_tail(f.at("x"), n_obs, n_vars));
    EXPECT_TRUE(has_line(r.out, x_tokens));
    for (const char* mapping : {"layers", "obsm", "uns"})
      if (f.at(mapping).empty()) {
        EXPECT_TRUE(has_line(r.out, {mapping, "(none)"}));
      }
    for (const auto& layer : f.at("layers")) {
      EXPECT_NE(r.out.find("  " + layer.get<std::string>() + " "), std::string::npos);
    }
    for (const char* frame : {"obs", "var"}) {
      const json& columns = f.at(std::string(frame) + "_columns");
      EXPECT_TRUE(has_line(r.out, {frame, "index", "of", std::to_string(std::string(frame) == "obs" ? n_obs : n_vars),
                                   "names,", std::to_string(columns.size()),
                                   columns.size() == 1 ? "column" : "columns"}));
      for (const auto& c : columns) {
        const std::int64_t k = c.at("n_categories");
        EXPECT_TRUE(has_line(r.out, {c.at("name").get<std::string>(), c.at("kind").get<std::string>(),
                                     c.at("dtype").get<std::string>(),
                                     c.at("kind") == "categorical" ? std::to_string(k) : "-",
                                     std::to_string(c.at("missing").get<std::int64_t>())}));
      }
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no real data in " << kotml::test::shared_data_path("");
}

TEST(InfoCli, KidneyWithColumnCounts) {
  const std::string path = t::kidney_path();
  if (!kotml::test::file_exists(path)) GTEST_SKIP() << "real data absent: " << path;
  const auto r = run_kotml({"info", path, "--column", "status", "--column", "Age"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, {"shape", "24227", "obs", "x", "14", "vars"}));
  EXPECT_TRUE(has_line(r.out, {"X", "dense", "float32,", "24227", "x", "14"}));
  EXPECT_TRUE(has_line(r.out, {"sampleID", "categorical", "int16", "634", "0"}));
  EXPECT_TRUE(has_line(r.out, {"status", "categorical", "int8", "3", "0"}));
  EXPECT_TRUE(has_line(r.out, {"var", "index", "of", "14", "names,", "0", "columns"}));
  // Category order as stored, with the counts h5py gives.
  EXPECT_TRUE(has_line(r.out, {"30-60", "5824"}));
  EXPECT_TRUE(has_line(r.out, {"<30", "1704"}));
  EXPECT_TRUE(has_line(r.out, {">60", "16699"}));
  EXPECT_LT(r.out.find("30-60 "), r.out.find("<30 "));
  EXPECT_LT(r.out.find("<30 "), r.out.find(">60 "));
  EXPECT_NE(r.out.find("obs column 'Age': numeric float64, 24227 rows, 0 missing"), std::string::npos);
}

TEST(InfoCli, FixtureWithEveryElementKind) {
  const auto r = run_kotml({"info", t::fixture("dense_f32.h5ad"), "--column", "donor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, {"raw", "dense", "float32,", "40", "x", "8;", "var", "index", "of", "8", "names"}));
  EXPECT_TRUE(has_line(r.out, {"counts", "CSR", "float32,", "40", "x", "6,", "96", "non-zeros", "(int32", "indices)"}));
  EXPECT_TRUE(has_line(r.out, {"meta", "dataframe,", "40", "rows", "x", "2", "columns"}));
  EXPECT_TRUE(has_line(r.out, {"X_pca", "dense", "float64,", "40", "x", "3"}));
  EXPECT_TRUE(has_line(r.out, {"params", "dict,", "2", "keys"}));
  EXPECT_TRUE(has_line(r.out, {"method", "string", "string"}));
  EXPECT_TRUE(has_line(r.out, {"donor", "categorical", "int8", "4", "2"}));
  EXPECT_TRUE(has_line(r.out, {"batch_size", "nullable-integer", "int64", "-", "8"}));
  EXPECT_TRUE(has_line(r.out, {"note", "nullable-string", "string", "-", "7"}));
  EXPECT_TRUE(has_line(r.out, {"obs", "column", "'donor':", "categorical", "int8,", "40", "rows,", "2", "missing"}));
  EXPECT_TRUE(has_line(r.out, {"donor0", "10"}));
  EXPECT_TRUE(has_line(r.out, {"donor3", "8"}));

  const auto legacy = run_kotml({"info", t::fixture("legacy_07.h5ad")});
  ASSERT_EQ(legacy.exit_code, 0) << legacy.err;
  EXPECT_TRUE(has_line(legacy.out, {"encoding", "anndata", "0.7", "(no", "root", "encoding)"}));
  EXPECT_TRUE(has_line(legacy.out, {"spliced", "CSC", "float32,", "30", "x", "12,", "96", "non-zeros", "(int32", "indices)"}));
}

TEST(InfoCli, ThreeRanksPrintOnce) {
  const auto one = run_kotml({"info", t::fixture("csr_f32.h5ad")});
  const auto three = run_kotml({"info", t::fixture("csr_f32.h5ad")}, 3);
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(three.out, one.out);
  const auto bad = run_kotml({"info", "/nonexistent.h5ad"}, 3);
  EXPECT_EQ(bad.exit_code, 2);
  // Counted by prefix: Kokkos' OpenMP backend adds its own oversubscription
  // warnings when 3 ranks share 2 cores.
  const auto lines = bad.error_lines();
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.rfind("kotml: ", 0) == 0; }),
            1)
      << bad.err;
}

// ----------------------------------------------------------------- bad input

TEST(InfoCli, MissingFile) {
  expect_one_error_line(run_kotml({"info", "/nonexistent/cells.h5ad"}),
                        "/nonexistent/cells.h5ad: no such file");
}

TEST(InfoCli, NotHdf5) {
  TempDir dir;
  t::write_text(dir.file("table.h5ad"), "a,b\n1,2\n");
  expect_one_error_line(run_kotml({"info", dir.file("table.h5ad")}), "not an HDF5 file");
}

TEST(InfoCli, Hdf5ButNotAnnData) {
  TempDir dir;
  const std::string path = dir.file("plain.h5");
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(file, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Fclose(file);
  expect_one_error_line(run_kotml({"info", path}), path + ": obs: missing: not an AnnData file");
}

TEST(InfoCli, UnknownColumn) {
  expect_one_error_line(run_kotml({"info", t::fixture("csr_f32.h5ad"), "--column", "celltype"}),
                        "obs/celltype: no such column; columns are: donor, label");
}

TEST(InfoCli, TruncatedFile) {
  TempDir dir;
  const std::string path = dir.file("truncated.h5ad");
  t::copy_file(t::fixture("dense_f32.h5ad"), path);
  t::truncate_file(path, 30000);
  expect_one_error_line(run_kotml({"info", path}), "truncated");
}

TEST(InfoCli, CorruptFiles) {
  // Bytes overwritten in the middle: in a group's object header, and at
  // positions where the HDF5 library by itself crashes (SIGSEGV, abort) or
  // never returns. Each gives one line naming the file and an element.
  TempDir dir;
  const std::string fixture = t::fixture("dense_f32.h5ad");
  std::int64_t obs_header = 0;
  {
    const hid_t file = H5Fopen(fixture.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    H5O_info_t info;
    ASSERT_GE(H5Oget_info_by_name(file, "obs", &info, H5P_DEFAULT), 0);
    obs_header = static_cast<std::int64_t>(info.addr);
    H5Fclose(file);
  }
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(fixture));
  std::vector<std::int64_t> offsets{obs_header, size / 2};
  for (std::int64_t offset : offsets) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    const std::string path = dir.file("corrupt_" + std::to_string(offset) + ".h5ad");
    t::copy_file(fixture, path);
    t::overwrite_bytes(path, offset, 64);
    const auto r = run_kotml({"info", path});
    if (r.exit_code == 0) continue;  // damage that only changed values is invisible
    expect_one_error_line(r, path + ": ");
  }
  // Positions found by sweeping 16-byte overwrites with KOTML_H5_VERIFY=0 (the
  // fixtures are byte-reproducible): unguarded, HDF5 crashes on the first and
  // never returns on the second.
  const std::string crash = dir.file("corrupt_crash.h5ad");
  t::copy_file(fixture, crash);
  t::overwrite_bytes(crash, 30720, 16);
  ::setenv("KOTML_H5_VERIFY", "0", 1);
  const auto unguarded = run_kotml({"info", crash});
  ::unsetenv("KOTML_H5_VERIFY");
  // A crash is a signal (128 + n), or AddressSanitizer's report (exit 1) in the
  // sanitize build; either way the guarded run names the damage.
  EXPECT_TRUE(unguarded.exit_code != 0 && unguarded.exit_code != 2)
      << "HDF5 no longer crashes here; find a new position with the sweep";
  expect_one_error_line(run_kotml({"info", crash}), "the file is damaged");

  const std::string hang = dir.file("corrupt_hang.h5ad");
  t::copy_file(fixture, hang);
  t::overwrite_bytes(hang, 7168, 16);
  ::setenv("KOTML_H5_VERIFY_TIMEOUT", "1", 1);
  expect_one_error_line(run_kotml({"info", hang}), "stopped making progress");
  ::unsetenv("KOTML_H5_VERIFY_TIMEOUT");

  const std::string header = dir.file("corrupt_header.h5ad");
  t::copy_file(fixture, header);
  t::overwrite_bytes(header, obs_header, 64);
  expect_one_error_line(run_kotml({"info", header}), header + ": ");
}
