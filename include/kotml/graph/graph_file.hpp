#pragma once
// Graphs in HDF5 files: a group holding scipy's CSR arrays with AnnData's
// sparse encoding (encoding-type "csr_matrix", attribute shape), so that
// anndata.experimental.read_elem(f["graph"]) or
// scipy.sparse.csr_matrix((data, indices, indptr), shape) read it back directly.
//   <group>/indptr   int64, n + 1
//   <group>/indices  int32, sorted within each row
//   <group>/data     float64, edge lengths (both directions stored)

#include <string>

#include "kotml/graph/csr_graph.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::graph {

/// Writes g into an open file under `group` (created; replaced if present).
void write_graph(io::h5::File& file, const std::string& group, const CsrGraph<MemSpace>& g);

/// True when the file holds a CSR group at `group`.
bool has_graph(const io::h5::File& file, const std::string& group);

/// Reads a graph written by write_graph or by anything producing the same CSR
/// arrays (any integer widths, float32 or float64 data); validates it as
/// graph_from_csr does. Errors name the file and element.
CsrGraph<MemSpace> read_graph(const io::h5::File& file, const std::string& group);

}  // namespace kotml::graph
