#pragma once
// Point clouds read from files, for the graph and GW subcommands: an AnnData
// file (.h5ad) with a representation chosen as scanpy's use_rep does ("X" or an
// obsm key such as "X_pca"), or a plain HDF5 file with a 2-D dataset.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::graph {

struct PointCloud {
  std::string source;          ///< file (and element) it came from, for messages
  std::int64_t n = 0;          ///< points (rows)
  std::int64_t dims = 0;       ///< coordinates per point
  std::vector<double> values;  ///< n × dims, row-major

  /// A device copy (the form every kernel takes).
  Matrix<double> to_device() const;
};

/// True when path is an AnnData file (root encoding "anndata", or obs and var
/// frames for anndata 0.7 files).
bool is_anndata_file(const std::string& path);

/// Reads a cloud; collective. AnnData: `use_rep` is "X" (the default when
/// empty), an obsm key ("X_pca"), or a full element path ("obsm/X_pca",
/// "layers/counts"); sparse storage is densified. Plain HDF5: the 2-D dataset
/// `dataset` (use_rep, when given, names the dataset instead). Each rank reads
/// its block of rows (dist::block_of) and the blocks are allgathered, so the
/// file's points are read once over the ranks, not once per rank; every rank
/// returns the whole cloud. Errors, on every rank, name the file and element:
/// missing file or element, not 2-D, no points or no coordinates, the first
/// non-finite value (by its row in the whole cloud).
PointCloud read_point_cloud(const dist::Comm& comm, const std::string& path, const std::string& dataset,
                            const std::string& use_rep);

}  // namespace kotml::graph
