#include "kotml/graph/graph_file.hpp"

#include "kotml/core/error.hpp"

namespace kotml::graph {

void write_graph(io::h5::File& file, const std::string& group, const CsrGraph<MemSpace>& g) {
  const auto h = copy_graph<HostSpace>(g);
  const std::size_t nnz = h.neighbors.extent(0);
  file.remove(group);
  file.create_group(group);
  file.write_string_attribute(group, "encoding-type", "csr_matrix");
  file.write_string_attribute(group, "encoding-version", "0.1.0");
  file.write_numeric_attribute<std::int64_t>(group, "shape", {g.n, g.n});
  file.write(group + "/indptr",
             std::vector<std::int64_t>(h.offsets.data(), h.offsets.data() + g.n + 1));
  file.write(group + "/indices", std::vector<std::int32_t>(h.neighbors.data(), h.neighbors.data() + nnz));
  file.write(group + "/data", std::vector<double>(h.weights.data(), h.weights.data() + nnz));
}

bool has_graph(const io::h5::File& file, const std::string& group) {
  return file.is_group(group) && file.is_dataset(group + "/indptr") &&
         file.is_dataset(group + "/indices") && file.is_dataset(group + "/data");
}

CsrGraph<MemSpace> read_graph(const io::h5::File& file, const std::string& group) {
  require(has_graph(file, group), file.path(), group,
          "no graph here (expected a group with indptr, indices and data)");
  const auto indptr = file.read<std::int64_t>(group + "/indptr");
  std::int64_t n = static_cast<std::int64_t>(indptr.size()) - 1;
  if (file.has_attribute(group, "shape")) {
    const auto shape = file.read_numeric_attribute<std::int64_t>(group, "shape");
    require(shape.size() == 2 && shape[0] == shape[1], file.path(), group + "/shape",
            "a graph's adjacency matrix must be square");
    require(shape[0] == n, file.path(), group + "/indptr",
            "has " + std::to_string(indptr.size()) + " entries for a " +
                std::to_string(shape[0]) + "-node graph");
  }
  return graph_from_csr(n, indptr, file.read<std::int64_t>(group + "/indices"),
                        file.read<double>(group + "/data"), file.path() + ":" + group);
}

}  // namespace kotml::graph
