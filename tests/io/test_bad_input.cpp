// Bad input through the API: every failure is a kotml::Error naming the file and
// the element, never a crash or a hang. (The same files through `kotml info`
// are in test_info_cli.cpp.)

#include <gtest/gtest.h>
#include <hdf5.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>
#include <filesystem>
#include <string>

#include "support/cli_runner.hpp"
#include "io_test_support.hpp"
#include "kotml/core/error.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

using kotml::Error;
using kotml::io::AnnDataReader;
using kotml::test::TempDir;
namespace t = kotml::io::test;

namespace {

/// Opens the file and reads everything a kotml run could read from it.
void read_everything(const std::string& path) {
  const AnnDataReader r(path);
  r.obs_names();
  r.var_names();
  for (const auto& c : r.obs_columns()) r.obs(c).as_strings();
  for (const auto& c : r.var_columns()) r.var(c).as_strings();
  if (r.has_x()) {
    r.read_dense<double>("X");
    r.read_csr<float>("X");
  }
  for (const auto& k : r.layers()) r.read_dense<float>("layers/" + k);
  for (const auto& k : r.obsm_keys())
    if (r.matrix_info("obsm/" + k).storage != kotml::io::MatrixStorage::dataframe)
      r.read_dense<double>("obsm/" + k);
  for (const auto& k : r.uns_keys()) r.describe("uns/" + k);
  if (r.has_raw()) r.read_dense<float>("raw/X");
}

Error error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error was raised";
  return Error("", "", "");
}

}  // namespace

TEST(BadInput, MissingFile) {
  const auto e = error_of([] { AnnDataReader r("/nonexistent/dir/cells.h5ad"); });
  EXPECT_EQ(e.file(), "/nonexistent/dir/cells.h5ad");
  EXPECT_EQ(e.reason(), "no such file");
}

TEST(BadInput, TextFileIsNotHdf5) {
  TempDir dir;
  const std::string path = dir.file("notes.h5ad");
  t::write_text(path, "cell,gene,count\nA,B,1\n");
  const auto e = error_of([&] { AnnDataReader r(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_NE(e.reason().find("not an HDF5 file"), std::string::npos) << e.what();
  const auto empty = dir.file("empty.h5ad");
  t::write_text(empty, "");
  EXPECT_NE(error_of([&] { AnnDataReader r(empty); }).reason().find("not an HDF5 file"), std::string::npos);
  EXPECT_NE(error_of([&] { AnnDataReader r(dir.path()); }).reason().find("directory"), std::string::npos);
}

TEST(BadInput, Hdf5ButNotAnnData) {
  TempDir dir;
  const std::string plain = dir.file("plain.h5");
  {
    auto f = kotml::io::h5::File::create(plain);
    f.write<double>("x", {1, 2, 3}, {3});
    f.close();
  }
  auto e = error_of([&] { AnnDataReader r(plain); });
  EXPECT_EQ(e.file(), plain);
  EXPECT_EQ(e.element(), "obs");
  EXPECT_NE(e.reason().find("not an AnnData file"), std::string::npos) << e.what();

  const std::string other = dir.file("other.h5");
  {
    auto f = kotml::io::h5::File::create(other);
    f.write_string_attribute("/", "encoding-type", "mudata");
    f.close();
  }
  e = error_of([&] { AnnDataReader r(other); });
  EXPECT_EQ(e.element(), "/");
  EXPECT_NE(e.reason().find("not 'anndata'"), std::string::npos) << e.what();

  // obs present but X of another length.
  const std::string mismatch = dir.file("mismatch.h5ad");
  t::copy_file(t::fixture("dense_f64.h5ad"), mismatch);
  {
    auto f = kotml::io::h5::File::open_rw(mismatch);
    f.write<double>("X", std::vector<double>(12, 1.0), {4, 3});
    f.close();
  }
  e = error_of([&] { AnnDataReader r(mismatch); });
  EXPECT_EQ(e.element(), "X");
  EXPECT_NE(e.reason().find("does not match"), std::string::npos) << e.what();
}

TEST(BadInput, UnknownColumn) {
  const AnnDataReader r(t::fixture("dense_f32.h5ad"));
  const auto e = error_of([&] { r.obs("cell_type"); });
  EXPECT_EQ(e.file(), t::fixture("dense_f32.h5ad"));
  EXPECT_EQ(e.element(), "obs/cell_type");
  EXPECT_NE(e.reason().find("no such column"), std::string::npos);
}

TEST(BadInput, TruncatedFile) {
  TempDir dir;
  for (const std::string name : {"dense_f32.h5ad", "csr_f32.h5ad", "legacy_07.h5ad"}) {
    const std::string path = dir.file("truncated_" + name);
    t::copy_file(t::fixture(name), path);
    t::truncate_file(path, static_cast<std::int64_t>(std::filesystem::file_size(path) / 2));
    const auto e = error_of([&] { read_everything(path); });
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(e.reason().find("truncated"), std::string::npos) << e.what();
  }
}

TEST(BadInput, CorruptObjectHeader) {
  // Bytes overwritten in the middle of the file, where obs's header lives.
  TempDir dir;
  const std::string path = dir.file("corrupt.h5ad");
  t::copy_file(t::fixture("csr_f32.h5ad"), path);
  std::int64_t address = 0;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    H5O_info_t info;
    ASSERT_GE(H5Oget_info_by_name(file, "obs/donor", &info, H5P_DEFAULT), 0);
    address = static_cast<std::int64_t>(info.addr);
    H5Fclose(file);
  }
  t::overwrite_bytes(path, address, 64);
  const auto e = error_of([&] { read_everything(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_FALSE(e.element().empty()) << e.what();
}

// Damage anywhere must end as an Error or as a file that still reads; never a
// crash or a hang. 16 bytes of 0xFF at every 512th byte of two fixtures. At
// every 256th byte, 26 of 361 positions made the HDF5 library itself crash
// (SIGSEGV, SIGABRT) and 16 made it loop forever. KOTML_IO_SWEEP_LOG=1 prints
// each outcome.
TEST(BadInput, CorruptionSweepNeverCrashes) {
  TempDir dir;
  ::setenv("KOTML_H5_VERIFY_TIMEOUT", "1", 1);
  int errors = 0, readable = 0;
  for (const std::string name : {"dense_f32.h5ad", "legacy_07.h5ad"}) {
    const auto size = static_cast<std::int64_t>(std::filesystem::file_size(t::fixture(name)));
    for (std::int64_t offset = 0; offset < size; offset += 512) {
      const std::string path = dir.file("sweep_" + std::to_string(offset) + "_" + name);
      t::copy_file(t::fixture(name), path);
      t::overwrite_bytes(path, offset, 16);
      const auto started = std::chrono::steady_clock::now();
      try {
        read_everything(path);
        ++readable;
      } catch (const Error& e) {
        ++errors;
        if (std::getenv("KOTML_IO_SWEEP_LOG")) std::fprintf(stderr, "%lld %s\n", static_cast<long long>(offset), e.what());
        EXPECT_EQ(e.file(), path);
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      }
      if (std::getenv("KOTML_IO_SWEEP_LOG"))
        std::fprintf(stderr, "time %lld %.0f ms\n", static_cast<long long>(offset),
                     std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
      std::filesystem::remove(path);
    }
  }
  ::unsetenv("KOTML_H5_VERIFY_TIMEOUT");
  // Both outcomes occur: damage to raw values goes unseen, damage to structure does not.
  EXPECT_GT(errors, 10);
  EXPECT_GT(readable, 10);
}

// Damaged sparse structure is caught where it is used: an out-of-range column
// index in one row fails the reads of that row and no other.
TEST(BadInput, DamagedSparseIndicesFailOnlyTheirRow) {
  TempDir dir;
  const std::string path = dir.file("bad_indices.h5ad");
  t::copy_file(t::fixture("csr_f32.h5ad"), path);
  std::int64_t begin = 0;
  {
    auto f = kotml::io::h5::File::open_rw(path);
    const auto indptr = f.read<std::int64_t>("X/indptr");
    begin = indptr[10];
    ASSERT_GT(indptr[11], begin) << "row 10 of the fixture must hold values";
    f.write_row_range<std::int32_t>("X/indices", begin, {999});
    f.close();
  }
  const AnnDataReader r(path);
  const auto fine = r.read_rows<float>("X", {0, 30, 59});
  const AnnDataReader original(t::fixture("csr_f32.h5ad"));
  EXPECT_EQ(fine, original.read_rows<float>("X", {0, 30, 59}));
  const auto e = error_of([&] { r.read_rows<float>("X", {9, 10}); });
  EXPECT_EQ(e.element(), "X/indices");
  EXPECT_NE(e.reason().find("index 999 in row 10"), std::string::npos) << e.what();
  // The whole-matrix read checks the range of the stored 32-bit indices in the
  // pass that widens them, and names the offending index.
  const auto whole = error_of([&] { r.read_csr<float>("X"); });
  EXPECT_EQ(whole.element(), "X/indices");
  EXPECT_NE(whole.reason().find("index 999 lies outside [0, "), std::string::npos) << whole.what();
  EXPECT_THROW(r.read_dense<float>("X"), Error);
  const std::string negative_path = dir.file("negative_index.h5ad");
  t::copy_file(t::fixture("csr_f32.h5ad"), negative_path);
  {
    auto f = kotml::io::h5::File::open_rw(negative_path);
    f.write_row_range<std::int32_t>("X/indices", begin, {-3});
    f.close();
  }
  const auto negative = error_of([&] { AnnDataReader(negative_path).read_csr<float>("X"); });
  EXPECT_NE(negative.reason().find("index -3 lies outside"), std::string::npos) << negative.what();
}

// Sparse column indices are held in 32 bits (io::SparseIndex): a CSR matrix
// declaring 2^31 + 1 columns is refused by name before its indices are read,
// and 2^31 columns, the most 32-bit indices can number, are read.
TEST(BadInput, SparseMatricesWiderThan32BitIndicesAreRefused) {
  // An obsm entry: its columns are its own, not var's.
  TempDir dir;
  const std::string wide = dir.file("wide_columns.h5ad");
  t::copy_file(t::fixture("csr_f32.h5ad"), wide);
  const std::int64_t most = std::int64_t(1) << 31;
  const auto declare_columns = [&](std::int64_t cols) {
    auto f = kotml::io::h5::File::open_rw(wide);
    if (!f.exists("obsm/wide")) {
      if (!f.exists("obsm")) f.create_group("obsm");
      f.create_group("obsm/wide");
      f.write("obsm/wide/data", f.read<float>("X/data"));
      f.write("obsm/wide/indices", f.read<std::int32_t>("X/indices"));
      f.write("obsm/wide/indptr", f.read<std::int64_t>("X/indptr"));
      f.write_string_attribute("obsm/wide", "encoding-type", "csr_matrix");
      f.write_string_attribute("obsm/wide", "encoding-version", "0.1.0");
    }
    f.write_numeric_attribute<std::int64_t>("obsm/wide", "shape", {AnnDataReader(t::fixture("csr_f32.h5ad")).n_obs(), cols});
    f.close();
  };
  declare_columns(most + 1);
  const auto whole = error_of([&] { AnnDataReader(wide).read_csr<float>("obsm/wide"); });
  EXPECT_EQ(whole.element(), "obsm/wide");
  EXPECT_NE(whole.reason().find("has 2147483649 columns"), std::string::npos) << whole.what();
  const auto rows_read = error_of([&] { AnnDataReader(wide).read_csr_rows<float>("obsm/wide", {0}); });
  EXPECT_NE(rows_read.reason().find("in 32 bits"), std::string::npos) << rows_read.what();
  declare_columns(most);
  const auto csr = AnnDataReader(wide).read_csr<float>("obsm/wide");
  EXPECT_EQ(csr.cols, most);
  EXPECT_EQ(csr.indices, AnnDataReader(t::fixture("csr_f32.h5ad")).read_csr<float>("X").indices);
}

// Found by fuzz_h5ad (fuzz/regressions/h5ad holds the images): a sparse shape
// of 2^63 - 1 overflowed the expected indptr length, and a uint64 obs value
// past 2^63 overflowed its conversion to text; both undefined behaviour that
// the sanitize build stops on.
TEST(BadInput, ExtremeIntegersAreReadWithoutOverflow) {
  TempDir dir;
  const std::string forged = dir.file("forged_shape.h5ad");
  t::copy_file(t::fixture("csr_f32.h5ad"), forged);
  {
    auto f = kotml::io::h5::File::open_rw(forged);
    f.write_numeric_attribute<std::int64_t>("X", "shape", {std::numeric_limits<std::int64_t>::max(), 3});
    f.close();
  }
  const auto e = error_of([&] { AnnDataReader r(forged); });
  EXPECT_EQ(e.element(), "X/indptr");
  EXPECT_NE(e.reason().find("expected 9223372036854775808"), std::string::npos) << e.what();

  const std::string wide = dir.file("uint64_column.h5ad");
  t::copy_file(t::fixture("dense_f64.h5ad"), wide);
  std::int64_t n_obs = 0;
  {
    n_obs = AnnDataReader(wide).n_obs();
    auto f = kotml::io::h5::File::open_rw(wide);
    std::vector<std::uint64_t> values(static_cast<std::size_t>(n_obs), 7);
    values[0] = (std::uint64_t(1) << 63) + 2048;  // exactly a double
    f.write("obs/wide", values);
    f.write_string_attribute("obs/wide", "encoding-type", "array");
    f.write_string_attribute("obs/wide", "encoding-version", "0.2.0");
    f.close();
  }
  const auto labels = AnnDataReader(wide).obs("wide").as_strings();
  ASSERT_EQ(labels.size(), static_cast<std::size_t>(n_obs));
  EXPECT_EQ(labels[0], "9223372036854777856");
  EXPECT_EQ(labels[1], "7");
  // `kotml info` lists an integer column's few values through the same text
  // (it cast them to long long, undefined past 2^63: found by fuzz_h5ad).
  const auto info = kotml::test::run_kotml({"info", wide, "--column", "wide"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  const auto listed = [&](const std::string& value, std::int64_t count) {
    const std::string line = "  " + value + std::string(24 - value.size(), ' ') + " " + std::to_string(count) + "\n";
    return info.out.find(line) != std::string::npos;
  };
  EXPECT_TRUE(listed("9223372036854777856", 1)) << info.out;
  EXPECT_TRUE(listed("7", n_obs - 1)) << info.out;
}
