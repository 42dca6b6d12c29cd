// Compressed chunks inflated on the host threads (src/io/deflated_chunks.hpp),
// through h5::File's whole, range, ranges and row-range reads: every byte as
// written, whichever chunks a range starts and ends in; the pipelines and
// chunks the path leaves to HDF5 (checksums, unstored chunks, a conversion)
// read right too; and a damaged chunk is named.
//
// The datasets are made with the HDF5 C API, so that the test chooses the
// chunking, the filters, and the bytes of single chunks (H5Dwrite_chunk).

#include <gtest/gtest.h>
#include <hdf5.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "io_test_support.hpp"
#include "kotml/core/error.hpp"
#include "kotml/io/hdf5.hpp"

using kotml::Error;
using kotml::io::h5::File;
using kotml::test::TempDir;

namespace {

/// Values whose every byte differs from its neighbours' (a misplaced byte,
/// element or chunk shows), with no NaN: compared byte for byte.
template <class T>
std::vector<T> varied(std::size_t n, std::uint32_t seed) {
  std::vector<T> v(n);
  std::uint32_t state = seed;
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    if constexpr (std::is_floating_point_v<T>)
      v[i] = static_cast<T>(static_cast<std::int32_t>(state) / 4096) * T(0.37);
    else
      v[i] = static_cast<T>(state ^ (state >> 13));
  }
  return v;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
std::vector<T> slice(const std::vector<T>& v, std::size_t begin, std::size_t end) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end));
}

struct Filters {
  bool shuffle = false;
  bool fletcher32 = false;
};

/// A chunked, deflated dataset `name` of `shape`, chunks of `chunk_rows` rows
/// spanning the other dimensions. Values are written unless `values` is empty.
template <class T>
void write_deflated(const std::string& path, const std::string& name, const std::vector<hsize_t>& shape,
                    hsize_t chunk_rows, hid_t type, const std::vector<T>& values, Filters filters = {}) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  std::vector<hsize_t> chunk(shape);
  chunk[0] = chunk_rows;
  H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  if (filters.shuffle) H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 4);
  if (filters.fletcher32) H5Pset_fletcher32(dcpl);
  const hid_t dataset = H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(dataset, 0);
  if (!values.empty()) {
    ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  }
  H5Dclose(dataset);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
}

/// Writes the stored bytes of the 1-D chunk starting at `first` as they are,
/// with HDF5's filter mask (bit 0 set: deflate was not applied).
void write_stored_chunk(const std::string& path, const std::string& name, hsize_t first,
                        const std::vector<unsigned char>& bytes, std::uint32_t skipped) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  ASSERT_GE(H5Dwrite_chunk(dataset, H5P_DEFAULT, skipped, &first, bytes.size(), bytes.data()), 0);
  H5Dclose(dataset);
  H5Fclose(file);
}

std::vector<unsigned char> deflated(const void* data, std::size_t bytes) {
  uLongf length = compressBound(static_cast<uLong>(bytes));
  std::vector<unsigned char> out(length);
  EXPECT_EQ(compress2(out.data(), &length, static_cast<const Bytef*>(data), static_cast<uLong>(bytes), 4), Z_OK);
  out.resize(length);
  return out;
}

std::string new_file(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(file);
  return path;
}

}  // namespace

TEST(DeflatedChunks, RangesStartingAndEndingInsideChunksReadEveryByte) {
  TempDir dir;
  const std::string path = new_file(dir, "deflated.h5");
  const auto line = varied<float>(10007, 1);  // 11 chunks of 1,000, the last part-filled
  write_deflated(path, "line", {10007}, 1000, H5T_NATIVE_FLOAT, line);
  const auto shuffled = varied<std::int32_t>(5000, 2);
  write_deflated(path, "shuffled", {5000}, 777, H5T_NATIVE_INT32, shuffled, {/*shuffle=*/true});
  const auto grid = varied<double>(300 * 7, 3);
  write_deflated(path, "grid", {300, 7}, 64, H5T_NATIVE_DOUBLE, grid);

  const File f = File::open_read(path);
  EXPECT_TRUE(same_bytes(f.read<float>("line"), line));
  EXPECT_TRUE(same_bytes(f.read_range<float>("line", 1500, 7321), slice(line, 1500, 7321)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("line", 2100, 2150), slice(line, 2100, 2150)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("line", 10000, 10007), slice(line, 10000, 10007)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("line", 3000, 5000), slice(line, 3000, 5000)));
  auto pieces = slice(line, 9990, 10007);
  for (const auto& piece : {slice(line, 0, 3), slice(line, 999, 1001)}) pieces.insert(pieces.end(), piece.begin(), piece.end());
  EXPECT_TRUE(same_bytes(f.read_ranges<float>("line", {{9990, 10007}, {0, 3}, {5, 5}, {999, 1001}}), pieces));

  EXPECT_TRUE(same_bytes(f.read<std::int32_t>("shuffled"), shuffled));
  EXPECT_TRUE(same_bytes(f.read_range<std::int32_t>("shuffled", 700, 2400), slice(shuffled, 700, 2400)));
  auto shuffled_pieces = slice(shuffled, 10, 20);  // two ranges in one chunk, a third across two
  for (const auto& piece : {slice(shuffled, 5, 8), slice(shuffled, 770, 790)})
    shuffled_pieces.insert(shuffled_pieces.end(), piece.begin(), piece.end());
  EXPECT_TRUE(same_bytes(f.read_ranges<std::int32_t>("shuffled", {{10, 20}, {5, 8}, {770, 790}}), shuffled_pieces));

  EXPECT_TRUE(same_bytes(f.read<double>("grid"), grid));
  EXPECT_TRUE(same_bytes(f.read_row_range<double>("grid", 50, 131), slice(grid, 50 * 7, 131 * 7)));
  EXPECT_TRUE(same_bytes(f.read_row_range<double>("grid", 256, 300), slice(grid, 256 * 7, 300 * 7)));
}

TEST(DeflatedChunks, ChunksStoredWithoutDeflateAreTakenAsTheyAre) {
  // HDF5 keeps a chunk uncompressed when deflate would not shrink it, and says
  // so in the chunk's filter mask.
  TempDir dir;
  const std::string path = new_file(dir, "mixed.h5");
  const auto values = varied<float>(3000, 4);
  write_deflated(path, "mixed", {3000}, 1000, H5T_NATIVE_FLOAT, std::vector<float>{});
  for (hsize_t c = 0; c < 3; ++c) {
    const float* chunk = values.data() + c * 1000;
    if (c == 1) {
      std::vector<unsigned char> raw(1000 * sizeof(float));
      std::memcpy(raw.data(), chunk, raw.size());
      write_stored_chunk(path, "mixed", c * 1000, raw, /*deflate skipped=*/1u);
    } else {
      write_stored_chunk(path, "mixed", c * 1000, deflated(chunk, 1000 * sizeof(float)), 0u);
    }
  }
  const File f = File::open_read(path);
  EXPECT_TRUE(same_bytes(f.read<float>("mixed"), values));
  EXPECT_TRUE(same_bytes(f.read_range<float>("mixed", 900, 2100), slice(values, 900, 2100)));
}

TEST(DeflatedChunks, WhatThePathLeavesToHdf5ReadsRight) {
  TempDir dir;
  const std::string path = new_file(dir, "others.h5");
  // Unstored chunk: elements 1,000 .. 1,999 were never written (fill value 0).
  auto holes = varied<float>(3000, 5);
  write_deflated(path, "holes", {3000}, 1000, H5T_NATIVE_FLOAT, std::vector<float>{});
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t dataset = H5Dopen2(file, "holes", H5P_DEFAULT);
    const hid_t space = H5Dget_space(dataset);
    for (const hsize_t start : {hsize_t(0), hsize_t(2000)}) {
      const hsize_t count = 1000;
      H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
      const hid_t memory = H5Screate_simple(1, &count, nullptr);
      ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory, space, H5P_DEFAULT, holes.data() + start), 0);
      H5Sclose(memory);
    }
    H5Sclose(space);
    H5Dclose(dataset);
    H5Fclose(file);
  }
  std::fill(holes.begin() + 1000, holes.begin() + 2000, 0.0f);
  const auto checked = varied<double>(2500, 6);
  write_deflated(path, "checked", {2500}, 600, H5T_NATIVE_DOUBLE, checked, {false, /*fletcher32=*/true});
  const auto narrow = varied<std::int32_t>(2000, 7);
  write_deflated(path, "narrow", {2000}, 300, H5T_NATIVE_INT32, narrow);

  const File f = File::open_read(path);
  EXPECT_TRUE(same_bytes(f.read<float>("holes"), holes));
  EXPECT_TRUE(same_bytes(f.read_range<float>("holes", 2500, 3000), slice(holes, 2500, 3000)));
  EXPECT_TRUE(same_bytes(f.read<double>("checked"), checked));
  const std::vector<std::int64_t> widened(narrow.begin(), narrow.end());
  EXPECT_EQ(f.read<std::int64_t>("narrow"), widened);
  EXPECT_EQ(f.read_range<std::int64_t>("narrow", 250, 1250), slice(widened, 250, 1250));
}

TEST(DeflatedChunks, DamagedChunkIsNamed) {
  TempDir dir;
  const std::string path = new_file(dir, "damaged.h5");
  const auto values = varied<float>(3000, 8);
  write_deflated(path, "garbage", {3000}, 1000, H5T_NATIVE_FLOAT, values);
  write_stored_chunk(path, "garbage", 1000, std::vector<unsigned char>(100, 0xab), 0u);
  write_deflated(path, "short", {3000}, 1000, H5T_NATIVE_FLOAT, values);
  write_stored_chunk(path, "short", 2000, deflated(values.data(), 500 * sizeof(float)), 0u);
  write_deflated(path, "long", {3000}, 1000, H5T_NATIVE_FLOAT, values);
  write_stored_chunk(path, "long", 0, deflated(values.data(), 1100 * sizeof(float)), 0u);
  // A whole stream whose Adler-32 trailer no longer matches its data.
  auto wrong_sum = deflated(values.data() + 1000, 1000 * sizeof(float));
  wrong_sum.back() ^= 0x01;
  write_deflated(path, "checksum", {3000}, 1000, H5T_NATIVE_FLOAT, values);
  write_stored_chunk(path, "checksum", 1000, wrong_sum, 0u);

  const File f = File::open_read(path);
  const auto reason_of = [&](const std::string& name, std::int64_t begin, std::int64_t end) -> std::string {
    try {
      f.read_range<float>(name, begin, end);
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.element(), name);
      EXPECT_FALSE(e.is_internal());
      return e.reason();
    }
    return "(no error)";
  };
  EXPECT_NE(reason_of("garbage", 0, 3000).find("the compressed chunk at element 1000 does not inflate (not a valid zlib stream)"),
            std::string::npos)
      << reason_of("garbage", 0, 3000);
  EXPECT_NE(reason_of("short", 1500, 2500).find("the compressed chunk at element 2000 does not inflate to its 4000 bytes"),
            std::string::npos)
      << reason_of("short", 1500, 2500);
  EXPECT_NE(reason_of("long", 0, 1000).find("the compressed chunk at element 0 does not inflate to its 4000 bytes"),
            std::string::npos)
      << reason_of("long", 0, 1000);
  EXPECT_NE(reason_of("checksum", 1200, 1300).find("the compressed chunk at element 1000 does not inflate (not a valid"),
            std::string::npos)
      << reason_of("checksum", 1200, 1300);
  // The chunks around the damaged ones still read.
  EXPECT_TRUE(same_bytes(f.read_range<float>("garbage", 2000, 3000), slice(values, 2000, 3000)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("short", 0, 2000), slice(values, 0, 2000)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("long", 1000, 3000), slice(values, 1000, 3000)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("checksum", 0, 1000), slice(values, 0, 1000)));
  EXPECT_TRUE(same_bytes(f.read_range<float>("checksum", 2000, 3000), slice(values, 2000, 3000)));
}

namespace {

/// A contiguous dataset without filters: HDF5 converts it on reading.
template <class T>
void write_plain(const std::string& path, const std::string& name, const std::vector<hsize_t>& shape, hid_t type,
                 const std::vector<T>& values) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
  const hid_t dataset = H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(dataset, 0);
  ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(dataset);
  H5Sclose(space);
  H5Fclose(file);
}

/// What a read gives: its values, or the message of its error.
template <class T, class Read>
std::string outcome(Read&& read) {
  try {
    const std::vector<T> values = read();
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  } catch (const Error& e) {
    return "error: " + e.reason();
  }
}

/// `values` stored as `From` twice, deflated in chunks (so converted by kotml
/// after inflating) and contiguous (so converted by HDF5), as 1-D and as rows of
/// 7: every read of them as `To` gives the same bytes, or the same error.
template <class From, class To>
void expect_conversions_match_hdf5(const std::string& path, const std::string& name, hid_t stored_type,
                                   const std::vector<From>& values, bool shuffle) {
  ASSERT_EQ(values.size() % 7, 0u);
  const hsize_t n = values.size(), rows = n / 7;
  write_deflated(path, name + "_z", {n}, 331, stored_type, values, {shuffle, false});
  write_plain(path, name + "_p", {n}, stored_type, values);
  write_deflated(path, name + "_z2", {rows, 7}, 45, stored_type, values, {shuffle, false});
  write_plain(path, name + "_p2", {rows, 7}, stored_type, values);
  const File f = File::open_read(path);
  const auto both = [&](const std::string& what, auto&& read) {
    const std::string deflated_outcome = outcome<To>([&] { return read(name + "_z"); });
    const std::string plain_outcome = outcome<To>([&] { return read(name + "_p"); });
    EXPECT_EQ(deflated_outcome, plain_outcome) << name << ", " << what;
  };
  both("whole", [&](const std::string& d) { return f.read<To>(d); });
  both("range", [&](const std::string& d) { return f.read_range<To>(d, 100, static_cast<std::int64_t>(n) - 50); });
  both("ranges", [&](const std::string& d) {
    return f.read_ranges<To>(d, {{700, 1400}, {5, 340}, {1390, 1400}, {0, 0}});
  });
  const auto row_range = [&](const std::string& suffix) {
    const std::string deflated_outcome =
        outcome<To>([&] { return f.read_row_range<To>(name + "_z" + suffix, 11, static_cast<std::int64_t>(rows) - 3); });
    const std::string plain_outcome =
        outcome<To>([&] { return f.read_row_range<To>(name + "_p" + suffix, 11, static_cast<std::int64_t>(rows) - 3); });
    EXPECT_EQ(deflated_outcome, plain_outcome) << name << ", rows" << suffix;
  };
  row_range("2");
  // Rows in any order, repeated, with gaps (HDF5's path reads the rows between
  // as well: out-of-range values there do not count).
  for (const std::vector<std::int64_t>& wanted :
       {std::vector<std::int64_t>{1, 2, 213, 215, 298, 2}, std::vector<std::int64_t>{0, 5, 299}}) {
    const std::string deflated_outcome = outcome<To>([&] { return f.read_rows<To>(name + "_z2", wanted); });
    const std::string plain_outcome = outcome<To>([&] { return f.read_rows<To>(name + "_p2", wanted); });
    EXPECT_EQ(deflated_outcome, plain_outcome) << name << ", rows from " << wanted[0];
  }
}

}  // namespace

// Reads that convert the stored type (int32 indices into int64, int64 ones into
// int32, float64 into float32, anything into double) inflate on the host
// threads too, then convert there: the same values as HDF5's conversion, and
// the same count of values out of range.
TEST(DeflatedChunks, ConversionsGiveWhatHdf5sGive) {
  TempDir dir;
  const std::string path = new_file(dir, "converted.h5");
  const std::size_t n = 7 * 300;
  // Widening.
  expect_conversions_match_hdf5<std::int32_t, std::int64_t>(path, "i32_i64", H5T_NATIVE_INT32,
                                                            varied<std::int32_t>(n, 21), false);
  expect_conversions_match_hdf5<float, double>(path, "f32_f64", H5T_NATIVE_FLOAT, varied<float>(n, 22), true);
  expect_conversions_match_hdf5<std::int8_t, std::int32_t>(path, "i8_i32", H5T_NATIVE_INT8, varied<std::int8_t>(n, 23),
                                                           false);
  expect_conversions_match_hdf5<std::uint64_t, double>(path, "u64_f64", H5T_NATIVE_UINT64,
                                                       varied<std::uint64_t>(n, 24), true);
  // Narrowing integers: in range, then with values out of range both ways.
  std::vector<std::int64_t> indices(n);
  for (std::size_t i = 0; i < n; ++i) indices[i] = static_cast<std::int64_t>((i * 7919) % 2000000000) - 1000000000;
  expect_conversions_match_hdf5<std::int64_t, std::int32_t>(path, "i64_i32", H5T_NATIVE_INT64, indices, true);
  auto wide = indices;
  wide[3] = std::int64_t(1) << 40;
  wide[1500] = -(std::int64_t(1) << 35);
  wide[2099] = std::numeric_limits<std::int64_t>::min();
  expect_conversions_match_hdf5<std::int64_t, std::int32_t>(path, "i64_i32_out", H5T_NATIVE_INT64, wide, false);
  std::vector<std::uint32_t> unsigned_values(n);
  for (std::size_t i = 0; i < n; ++i) unsigned_values[i] = static_cast<std::uint32_t>(i * 2654435761u);
  expect_conversions_match_hdf5<std::uint32_t, std::int32_t>(path, "u32_i32", H5T_NATIVE_UINT32, unsigned_values,
                                                             false);
  expect_conversions_match_hdf5<std::int32_t, std::uint16_t>(path, "i32_u16", H5T_NATIVE_INT32,
                                                             varied<std::int32_t>(n, 25), true);
  // float64 into float32: rounding, subnormals, ±inf and NaN pass; finite values
  // beyond ±FLT_MAX (and the one just past it that rounds to inf) counted.
  auto doubles = varied<double>(n, 26);
  for (std::size_t i = 0; i < n; i += 5) doubles[i] = doubles[i] * 1.0000000001 + 1e-300 * static_cast<double>(i);
  expect_conversions_match_hdf5<double, float>(path, "f64_f32", H5T_NATIVE_DOUBLE, doubles, true);
  auto edges = doubles;
  edges[10] = std::numeric_limits<double>::infinity();
  edges[20] = -std::numeric_limits<double>::infinity();
  edges[30] = std::numeric_limits<double>::quiet_NaN();
  edges[40] = 3.4028234663852886e38;   // FLT_MAX
  edges[50] = 3.4028235677973366e38;   // rounds to inf: out of range
  edges[60] = -1e300;
  edges[70] = 1e-40;                   // a float32 subnormal
  edges[2000] = 1e39;
  expect_conversions_match_hdf5<double, float>(path, "f64_f32_edges", H5T_NATIVE_DOUBLE, edges, false);
  auto infinite = doubles;
  infinite[10] = std::numeric_limits<double>::infinity();
  infinite[777] = -std::numeric_limits<double>::infinity();
  expect_conversions_match_hdf5<double, float>(path, "f64_f32_inf", H5T_NATIVE_DOUBLE, infinite, false);

  // The converting reads took kotml's inflation: a damaged chunk is named by
  // kotml's message, not by HDF5's.
  write_deflated(path, "damaged", {3000}, 1000, H5T_NATIVE_INT64, std::vector<std::int64_t>(3000, 5));
  write_stored_chunk(path, "damaged", 1000, std::vector<unsigned char>(100, 0xab), 0u);
  const File f = File::open_read(path);
  EXPECT_EQ(outcome<std::int32_t>([&] { return f.read_range<std::int32_t>("damaged", 900, 1100); }),
            "error: the file is damaged: the compressed chunk at element 1000 does not inflate (not a valid zlib "
            "stream)");
  EXPECT_EQ(outcome<double>([&] { return f.read<double>("damaged"); }),
            "error: the file is damaged: the compressed chunk at element 1000 does not inflate (not a valid zlib "
            "stream)");
}

// A narrowing read converts through a bounded buffer, group of ranges by group:
// ranges and reads longer than one group give every element.
TEST(DeflatedChunks, ConversionsLongerThanTheirBufferReadEveryElement) {
  TempDir dir;
  const std::string path = new_file(dir, "long.h5");
  const std::size_t n = (std::size_t(8) << 20) + 2500;
  std::vector<std::int64_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::int64_t>(i % 50021) - 25000;
  write_deflated(path, "v", {n}, 65536, H5T_NATIVE_INT64, values);
  auto beyond = values;
  beyond[n - 1] = std::int64_t(1) << 33;
  beyond[5] = -(std::int64_t(1) << 33);
  write_deflated(path, "beyond", {n}, 65536, H5T_NATIVE_INT64, beyond);
  const File f = File::open_read(path);
  const auto as_int32 = [&](std::size_t begin, std::size_t end) {
    return std::vector<std::int32_t>(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                     values.begin() + static_cast<std::ptrdiff_t>(end));
  };
  EXPECT_EQ(f.read<std::int32_t>("v"), as_int32(0, n));
  const std::int64_t block = std::int64_t(8) << 20;
  EXPECT_EQ(f.read_range<std::int32_t>("v", block - 1000, block + 1000), as_int32(block - 1000, block + 1000));
  auto expected = as_int32(static_cast<std::size_t>(block) - 10, n);
  const auto head = as_int32(0, 20);
  expected.insert(expected.end(), head.begin(), head.end());
  EXPECT_EQ(f.read_ranges<std::int32_t>("v", {{block - 10, static_cast<std::int64_t>(n)}, {0, 20}}), expected);
  // Out-of-range values in the first and the last group are both counted.
  EXPECT_EQ(outcome<std::int32_t>([&] { return f.read<std::int32_t>("beyond"); }),
            "error: 2 value(s) of type int64 overflow on conversion to int32 (they are finite in the file)");
}
