// The HDF5 wrapper: typed reads with conversion, hyperslab selections, strings of
// both storages, attributes as h5py writes them, writers, and errors that name
// the file and the element.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "io_test_support.hpp"
#include "kotml/core/error.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/io/raw_file.hpp"

using kotml::Error;
using kotml::io::h5::File;
using kotml::test::TempDir;

namespace {

std::vector<double> iota_values(std::size_t n, double start = 0.5) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i);
  return v;
}

}  // namespace

TEST(Hdf5, NumericRoundTripConvertsBetweenTypes) {
  TempDir dir;
  const std::string path = dir.file("numbers.h5");
  {
    File f = File::create(path);
    f.write<std::int16_t>("ints", {-3, 0, 7, 32000}, {4});
    f.write<double>("grid", iota_values(6), {2, 3});
    f.write<std::uint8_t>("bytes", {0, 255}, {2});
    f.write<float>("scalar", {2.5f}, {});
    f.close();
  }
  const File f = File::open_read(path);
  EXPECT_EQ(f.read<double>("ints"), (std::vector<double>{-3, 0, 7, 32000}));
  EXPECT_EQ(f.read<std::int64_t>("ints"), (std::vector<std::int64_t>{-3, 0, 7, 32000}));
  EXPECT_EQ(f.read<float>("grid"), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(f.read<double>("bytes"), (std::vector<double>{0, 255}));
  EXPECT_EQ(f.shape("grid"), (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(f.shape("scalar").empty());
  EXPECT_EQ(f.size("scalar"), 1);
  EXPECT_EQ(f.read<double>("scalar"), (std::vector<double>{2.5}));
  EXPECT_EQ(f.type("ints").dtype, "int16");
  EXPECT_EQ(f.type("bytes").dtype, "uint8");
  EXPECT_EQ(f.type("grid").dtype, "float64");
  EXPECT_EQ(f.type("scalar").dtype, "float32");
}

TEST(Hdf5, RangesRowsAndSelections) {
  TempDir dir;
  const std::string path = dir.file("rows.h5");
  {
    File f = File::create(path);
    f.write<double>("line", iota_values(10, 0.0), {10});
    f.write<double>("m", iota_values(5 * 3, 0.0), {5, 3});
    f.write<double>("cube", iota_values(4 * 2 * 2, 0.0), {4, 2, 2}, 5);  // chunked + gzip
    f.close();
  }
  const File f = File::open_read(path);
  EXPECT_EQ(f.read_range<double>("line", 3, 6), (std::vector<double>{3, 4, 5}));
  EXPECT_TRUE(f.read_range<double>("line", 4, 4).empty());
  EXPECT_EQ(f.read_ranges<std::int64_t>("line", {{8, 10}, {0, 2}, {5, 5}, {4, 5}}),
            (std::vector<std::int64_t>{8, 9, 0, 1, 4}));
  // Unsorted rows with a repeat come back in the order asked for.
  EXPECT_EQ(f.read_rows<double>("m", {4, 0, 4, 2}),
            (std::vector<double>{12, 13, 14, 0, 1, 2, 12, 13, 14, 6, 7, 8}));
  EXPECT_TRUE(f.read_rows<double>("m", {}).empty());
  EXPECT_EQ(f.read_row_range<double>("m", 1, 3), (std::vector<double>{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(f.read_rows<double>("cube", {3, 1}),
            (std::vector<double>{12, 13, 14, 15, 4, 5, 6, 7}));
  EXPECT_EQ(f.read<double>("cube"), iota_values(16, 0.0));

  for (auto bad : {std::vector<std::int64_t>{5}, std::vector<std::int64_t>{-1}}) {
    try {
      f.read_rows<double>("m", bad);
      ADD_FAILURE() << "row out of range accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.element(), "m");
      EXPECT_NE(e.reason().find("outside its 5 rows"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(f.read_range<double>("line", 8, 11), Error);
  EXPECT_THROW(f.read_range<double>("m", 0, 1), Error);  // not 1-D
}

TEST(Hdf5, PiecewiseWritesFillACreatedDataset) {
  TempDir dir;
  const std::string path = dir.file("pieces.h5");
  {
    File f = File::create(path);
    f.create_dataset<float>("out/d", {4, 2}, 3);
    f.write_row_range<float>("out/d", 2, {5, 6, 7, 8});
    f.write_row_range<float>("out/d", 0, {1, 2, 3, 4});
    EXPECT_THROW(f.write_row_range<float>("out/d", 3, {1, 2, 3, 4}), Error);
    EXPECT_THROW(f.write_row_range<float>("out/d", 0, {1, 2, 3}), Error);
    f.close();
  }
  EXPECT_EQ(File::open_read(path).read<float>("out/d"),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

// Another process's writes of a dataset's bytes in place, as every apsp rank
// makes them: the file stays whole HDF5 and holds exactly those values.
TEST(Hdf5, PreallocatedDatasetIsWrittenInPlace) {
  TempDir dir;
  const std::string path = dir.file("raw.h5");
  {
    File f = File::create(path);
    const auto extent = f.create_preallocated_dataset<double>("out/d", {3, 4});
    ASSERT_TRUE(extent.has_value());
    EXPECT_EQ(std::filesystem::path(extent->file), std::filesystem::absolute(path));
    const auto empty = f.create_preallocated_dataset<float>("out/empty", {0, 4});
    EXPECT_FALSE(empty.has_value());  // no extent to write into
    auto writer = kotml::io::RawFileWriter::open_existing(extent->file, "shown.h5");
    ASSERT_TRUE(writer.has_value());
    // Rows out of order, one of them in two pieces.
    const std::vector<double> rows = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5};
    writer->write_at(extent->offset + 8 * 8, rows.data() + 8, 4 * 8, "rows 2");
    writer->write_at(extent->offset, rows.data(), 4 * 8, "row 0");
    writer->write_at(extent->offset + 4 * 8, rows.data() + 4, 3 * 8, "row 1");
    writer->write_at(extent->offset + 7 * 8, rows.data() + 7, 8, "row 1");
    writer->close("out/d");
    f.write<std::int64_t>("after", {1, 2, 3});  // metadata written after the raw bytes
    f.close();
    EXPECT_EQ(File::open_read(path).read<double>("out/d"), rows);
  }
  EXPECT_EQ(File::open_read(path).read<std::int64_t>("after"), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(File::open_read(path).type("out/d").dtype, "float64");
  EXPECT_FALSE(File::open_read(path).is_compressed("out/d"));
}

TEST(Hdf5, RawWritesReportWhatFailed) {
  TempDir dir;
  EXPECT_FALSE(kotml::io::RawFileWriter::open_existing(dir.file("missing.h5"), "x").has_value());
  auto full = kotml::io::RawFileWriter::open_existing("/dev/full", "paths.h5");
  ASSERT_TRUE(full.has_value());
  const std::vector<char> bytes(4096, 1);
  try {
    full->write_at(0, bytes.data(), bytes.size(), "/distances rows 0..9");
    FAIL() << "a write to /dev/full succeeded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("paths.h5"), std::string::npos) << what;
    EXPECT_NE(what.find("/distances rows 0..9"), std::string::npos) << what;
    EXPECT_NE(what.find("No space left"), std::string::npos) << what;
  }
}

TEST(Hdf5, StringsVariableAndFixedLength) {
  TempDir dir;
  const std::string path = dir.file("strings.h5");
  const std::vector<std::string> words{"alpha", "", "ünïcödé", "x y"};
  {
    File f = File::create(path);
    f.write_strings("vlen", words);
    f.write_string("one", "hello");
    f.write_strings("empty", {});
    f.close();
  }
  // Fixed-length strings, null- and space-padded, as numpy 'S' arrays and
  // older writers store them.
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    for (auto [name, pad] : {std::pair<const char*, H5T_str_t>{"nullpad", H5T_STR_NULLPAD},
                             {"spacepad", H5T_STR_SPACEPAD}}) {
      const hid_t type = H5Tcopy(H5T_C_S1);
      H5Tset_size(type, 4);
      H5Tset_strpad(type, pad);
      const hsize_t n = 3;
      const hid_t space = H5Screate_simple(1, &n, nullptr);
      const hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      const char* bytes = pad == H5T_STR_NULLPAD ? "ab\0\0abcdc\0\0\0" : "ab  abcdc   ";
      H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes);
      H5Dclose(d);
      H5Sclose(space);
      H5Tclose(type);
    }
    H5Fclose(file);
  }
  const File f = File::open_read(path);
  EXPECT_EQ(f.read_strings("vlen"), words);
  EXPECT_EQ(f.read_strings_range("vlen", 1, 3), (std::vector<std::string>{"", "ünïcödé"}));
  EXPECT_EQ(f.read_string("one"), "hello");
  EXPECT_TRUE(f.read_strings("empty").empty());
  EXPECT_EQ(f.read_strings("nullpad"), (std::vector<std::string>{"ab", "abcd", "c"}));
  EXPECT_EQ(f.read_strings("spacepad"), (std::vector<std::string>{"ab", "abcd", "c"}));
  EXPECT_TRUE(f.type("vlen").is_variable_string);
  EXPECT_FALSE(f.type("nullpad").is_variable_string);
  // Strings are not numbers, and numbers are not strings.
  EXPECT_THROW(f.read<double>("vlen"), Error);
  EXPECT_THROW(f.read_string("vlen"), Error);
}

TEST(Hdf5, AttributesAsH5pyWritesThem) {
  TempDir dir;
  const std::string path = dir.file("attrs.h5");
  {
    File f = File::create(path);
    f.create_group("g");
    f.write_string_attribute("/", "encoding-type", "anndata");
    f.write_string_array_attribute("g", "column-order", {"a", "b"});
    f.write_string_array_attribute("g", "empty-order", {});
    f.write_numeric_attribute<std::int64_t>("g", "shape", {3, 4});
    f.write_numeric_attribute<double>("g", "scale", {0.25}, true);
    f.write_bool_attribute("g", "ordered", true);
    f.write_bool_attribute("g", "other", false);
    f.write_string_attribute("g", "replaced", "first");
    f.write_string_attribute("g", "replaced", "second");
    f.close();
  }
  const File f = File::open_read(path);
  EXPECT_EQ(f.read_string_attribute("/", "encoding-type"), "anndata");
  EXPECT_EQ(f.read_string_attribute("", "encoding-type"), "anndata");
  EXPECT_EQ(f.read_string_array_attribute("g", "column-order"), (std::vector<std::string>{"a", "b"}));
  // An empty list is stored as an empty float64 array and read back as empty.
  EXPECT_EQ(f.attribute_type("g", "empty-order").dtype, "float64");
  EXPECT_TRUE(f.read_string_array_attribute("g", "empty-order").empty());
  EXPECT_EQ(f.read_numeric_attribute<std::int64_t>("g", "shape"), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(f.read_numeric_attribute<double>("g", "scale"), (std::vector<double>{0.25}));
  EXPECT_EQ(f.attribute_type("g", "ordered").dtype, "bool");
  EXPECT_EQ(f.read_numeric_attribute<int>("g", "ordered"), (std::vector<int>{1}));
  EXPECT_EQ(f.read_numeric_attribute<int>("g", "other"), (std::vector<int>{0}));
  EXPECT_EQ(f.read_string_attribute("g", "replaced"), "second");
  EXPECT_TRUE(f.has_attribute("g", "shape"));
  EXPECT_FALSE(f.has_attribute("g", "nope"));
  EXPECT_FALSE(f.has_attribute("missing/group", "shape"));
  EXPECT_EQ(f.attribute_names("g").size(), 7u);
  try {
    f.read_string_attribute("g", "nope");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.element(), "g@nope");
  }
  EXPECT_THROW(f.read_string_attribute("g", "shape"), Error);
  EXPECT_THROW(f.read_numeric_attribute<double>("g", "column-order"), Error);
}

TEST(Hdf5, StructureQueriesAreSafeForNestedPaths) {
  TempDir dir;
  const std::string path = dir.file("tree.h5");
  {
    File f = File::create(path);
    f.write<double>("a/b/c", {1.0}, {1});
    f.create_group("z");
    f.create_group("m");
    f.write<double>("top", {1.0}, {1});
    f.remove("top");
    f.write<double>("top", {2.0}, {1});  // replaced, still one member
    f.close();
  }
  const File f = File::open_read(path);
  EXPECT_TRUE(f.exists("a/b/c"));
  EXPECT_TRUE(f.exists("/a/b"));
  EXPECT_TRUE(f.exists("/"));
  EXPECT_FALSE(f.exists("a/x/c"));
  EXPECT_FALSE(f.exists("a/b/c/d"));  // through a dataset
  EXPECT_TRUE(f.is_group("a/b"));
  EXPECT_FALSE(f.is_group("a/b/c"));
  EXPECT_TRUE(f.is_dataset("a/b/c"));
  EXPECT_FALSE(f.is_dataset("nothing"));
  // kotml's files keep creation order.
  EXPECT_EQ(f.children("/"), (std::vector<std::string>{"a", "z", "m", "top"}));
  EXPECT_EQ(f.read<double>("top"), (std::vector<double>{2.0}));
  EXPECT_THROW(f.children("a/b/c"), Error);
}

TEST(Hdf5, H5pyFilesListChildrenInNameOrder) {
  // h5py does not track creation order: the legacy fixture's obs lists by name.
  const File f = File::open_read(kotml::io::test::fixture("legacy_07.h5ad"));
  EXPECT_EQ(f.children("obs"),
            (std::vector<std::string>{"__categories", "_index", "age", "donor", "sample", "status"}));
  EXPECT_EQ(f.read_reference_attribute("obs/donor", "categories"), "/obs/__categories/donor");
  EXPECT_THROW(f.read_reference_attribute("obs", "_index"), Error);
}

TEST(Hdf5, ErrorsNameFileAndElement) {
  TempDir dir;
  const std::string path = dir.file("e.h5");
  {
    File f = File::create(path);
    f.write<double>("d", {1, 2}, {2});
    f.write<double>("g/inner", {1}, {1});
    f.write<double>("wide", {1.0, 1e40, -1e150, 2.0}, {4});
    f.write<double>("infinite", {1.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN(), 3.4028234663852886e38},
                    {5});
    // FLT_MAX, and the float64 just past it that rounds to inf.
    f.write<double>("edge", {3.4028234663852886e38, 3.4028235677973366e38}, {2});
    EXPECT_THROW(f.write<double>("bad", {1, 2, 3}, {2}), Error);
    f.close();
  }
  const File f = File::open_read(path);
  try {
    f.read<double>("missing/thing");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.element(), "missing/thing");
    EXPECT_EQ(std::string(e.what()), path + ": missing/thing: no such dataset");
  }
  EXPECT_FALSE(f.exists("bad"));
  // A group where a dataset should be is called that, not "missing".
  try {
    f.read<double>("g");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": g: is a group where a dataset was expected");
  }
  // Finite float64 values beyond float32: an overflow on conversion, not "NaN
  // or infinite" later; as float64 they read as they are.
  try {
    f.read<float>("wide");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": wide: 2 value(s) of type float64 overflow on conversion to float32 (they are finite in the file)");
  }
  EXPECT_EQ(f.read<double>("wide")[1], 1e40);
  // Infinities are not finite values beyond float32: they arrive as they are,
  // for the caller's own check.
  const auto infinite = f.read<float>("infinite");
  ASSERT_EQ(infinite.size(), 5u);
  EXPECT_EQ(infinite[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(infinite[2], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(infinite[3]));
  EXPECT_EQ(infinite[4], std::numeric_limits<float>::max());
  try {
    f.read<float>("edge");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": edge: 1 value(s) of type float64 overflow on conversion to float32 (they are finite in the file)");
  }
}

TEST(Hdf5, MovedFileKeepsOneOwner) {
  TempDir dir;
  const std::string path = dir.file("move.h5");
  File a = File::create(path);
  a.write<double>("x", {1.0}, {1});
  File b = std::move(a);
  EXPECT_EQ(b.path(), path);
  b.close();
  b.close();  // closing twice is harmless
  EXPECT_EQ(File::open_read(path).read<double>("x"), (std::vector<double>{1.0}));
}
