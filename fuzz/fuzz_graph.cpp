// Fuzzes the graph file reader as `kotml apsp` and `kotml gw` use it: a graph
// group (scipy's CSR arrays under AnnData's sparse encoding), mutated
// structurally (h5_image_mutator.hpp), is read and validated, and what the
// reader accepts must be what Dijkstra relies on: canonical and undirected,
// with every shortest path from node 0 finite or +inf and never negative.

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "h5_image_mutator.hpp"
#include "kotml/graph/components.hpp"
#include "kotml/graph/dijkstra.hpp"
#include "kotml/graph/graph_file.hpp"
#include "kotml/io/hdf5.hpp"

namespace {

using namespace kotml;

void read_and_walk(const std::uint8_t* data, std::size_t size) {
  const auto file = io::h5::File::open_image("fuzz-graph.h5", data, size);
  const std::string group = "graph";
  if (!graph::has_graph(file, group)) return;
  const auto g = graph::read_graph(file, group);
  if (!graph::is_canonical_undirected(g)) fuzz::report_bug("read_graph accepted a graph that is not canonical");
  (void)graph::connected_components(g);
  if (g.n == 0 || g.n > 4096) return;
  Kokkos::View<graph::NodeId*, MemSpace> sources("sources", 1);
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> lengths("lengths", 1, g.n);
  graph::shortest_paths<double>(g, sources, lengths);
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), lengths);
  if (host(0, 0) != 0) fuzz::report_bug("the path from node 0 to itself is not 0");
  for (std::int64_t v = 0; v < g.n; ++v)
    if (std::isnan(host(0, v)) || host(0, v) < 0) fuzz::report_bug("a shortest path is NaN or negative");
}

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  fuzz::expect_only_user_errors([&] { read_and_walk(data, size); });
}

}  // namespace

KOTML_HDF5_IMAGE_FUZZER(fuzz_one)
