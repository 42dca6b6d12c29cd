// Writes the seed images of the graph and ot-input fuzzers from real data: for
// each .h5ad given, up to 60 cells' X rows become an OT problem (x = the first
// half, y = the second; once with weights from the rows' totals, once without,
// once stored as float32) and the connected 5-NN graph of the cells, written as
// `kotml knn-graph` writes it. The h5ad and INI fuzzers take the real files
// themselves as seeds.
//
//   make_seeds OUT_DIR FILE.h5ad...    (writes OUT_DIR/ot/*.h5, OUT_DIR/graph/*.h5)

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/types.hpp"
#include "kotml/graph/graph_file.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

namespace {

using namespace kotml;

struct Cells {
  std::int64_t n = 0, dims = 0;
  std::vector<double> values;  // n × dims
};

Cells first_cells(const std::string& path, std::int64_t most) {
  const io::AnnDataReader reader(path);
  Cells cells;
  cells.n = std::min(reader.n_obs(), most);
  cells.dims = reader.n_vars();
  std::vector<std::int64_t> rows(static_cast<std::size_t>(cells.n));
  for (std::int64_t i = 0; i < cells.n; ++i) rows[static_cast<std::size_t>(i)] = i;
  cells.values = reader.read_rows<double>("X", rows);
  return cells;
}

std::vector<double> slice(const Cells& c, std::int64_t begin, std::int64_t end) {
  return {c.values.begin() + begin * c.dims, c.values.begin() + end * c.dims};
}

template <class T>
std::vector<T> as(const std::vector<double>& values) {
  return std::vector<T>(values.begin(), values.end());
}

void write_ot_seed(const std::string& path, const Cells& c, bool weights, bool single) {
  const std::int64_t half = c.n / 2;
  AtomicFile out(path);
  auto file = io::h5::File::create(out);
  const auto x = slice(c, 0, half), y = slice(c, half, c.n);
  if (single) {
    file.write("/x", as<float>(x), {half, c.dims});
    file.write("/y", as<float>(y), {c.n - half, c.dims});
  } else {
    file.write("/x", x, {half, c.dims});
    file.write("/y", y, {c.n - half, c.dims});
  }
  if (weights) {
    std::vector<double> a, b;
    for (std::int64_t i = 0; i < c.n; ++i) {
      double total = 1;
      for (std::int64_t k = 0; k < c.dims; ++k) total += std::abs(c.values[static_cast<std::size_t>(i * c.dims + k)]);
      (i < half ? a : b).push_back(total);
    }
    file.write("/a", a);
    file.write("/b", b);
  }
  file.close();
  out.commit();
}

void write_graph_seed(const std::string& path, const Cells& c) {
  Matrix<double> points("points", c.n, c.dims);
  auto host = Kokkos::create_mirror_view(points);
  for (std::int64_t i = 0; i < c.n; ++i)
    for (std::int64_t k = 0; k < c.dims; ++k) host(i, k) = c.values[static_cast<std::size_t>(i * c.dims + k)];
  Kokkos::deep_copy(points, host);
  const auto g = graph::build_knn_graph(points, std::min<int>(5, static_cast<int>(c.n) - 1), path);
  AtomicFile out(path);
  auto file = io::h5::File::create(out);
  graph::write_graph(file, "graph", g);
  file.close();
  out.commit();
}

}  // namespace

int main(int argc, char* argv[]) {
  fuzz::initialise(&argc, &argv);
  int status = 0;
  {
    try {
      if (argc < 3) throw Error("", "", "usage: make_seeds OUT_DIR FILE.h5ad...");
      const std::filesystem::path out = argv[1];
      std::filesystem::create_directories(out / "ot");
      std::filesystem::create_directories(out / "graph");
      for (int a = 2; a < argc; ++a) {
        const Cells cells = first_cells(argv[a], 60);
        if (cells.n < 4 || cells.dims < 1) continue;
        const std::string stem = std::filesystem::path(argv[a]).stem().string();
        write_ot_seed((out / "ot" / (stem + "_weighted.h5")).string(), cells, true, false);
        write_ot_seed((out / "ot" / (stem + "_uniform.h5")).string(), cells, false, false);
        write_ot_seed((out / "ot" / (stem + "_float32.h5")).string(), cells, true, true);
        write_graph_seed((out / "graph" / (stem + "_knn5.h5")).string(), cells);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "make_seeds: %s\n", e.what());
      status = 1;
    }
  }
  return status;
}
