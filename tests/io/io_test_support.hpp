#pragma once
// Shared helpers of the io tests: fixture paths, the expected facts written by
// fixtures/make_fixtures.py, and damaged copies of files.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace kotml::io::test {

inline std::string fixture(const std::string& name) {
  return kotml::test::test_source_path("io/fixtures/" + name);
}

inline const nlohmann::json& expected() {
  static const nlohmann::json facts = [] {
    std::ifstream in(fixture("expected.json"));
    return nlohmann::json::parse(in);
  }();
  return facts;
}

inline std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& item : expected().at("fixtures").items()) names.push_back(item.key());
  return names;
}

inline std::string kidney_path() {
  return kotml::test::shared_data_path("kidney_igan_glomeruli.h5ad");
}

inline void copy_file(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

/// Overwrites `length` bytes at `offset` with 0xFF.
inline void overwrite_bytes(const std::string& path, std::int64_t offset, std::int64_t length) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  const std::string junk(static_cast<std::size_t>(length), '\xff');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

inline void truncate_file(const std::string& path, std::int64_t size) {
  std::filesystem::resize_file(path, static_cast<std::uintmax_t>(size));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace kotml::io::test
