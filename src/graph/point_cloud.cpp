#include "kotml/graph/point_cloud.hpp"

#include <cmath>
#include <numeric>
#include <optional>

#include "kotml/core/error.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::graph {
namespace {

/// The block's values are finite; a message names the first bad one by its row
/// in the whole cloud (the lowest failing rank's message is the one shown, so it
/// is the same on any rank count).
void check_values(const std::vector<double>& values, std::int64_t first_row, std::int64_t dims,
                  const std::string& path, const std::string& element) {
  for (std::size_t f = 0; f < values.size(); ++f)
    require(std::isfinite(values[f]), path, element, [&] {
      const auto d = static_cast<std::size_t>(dims);
      return "row " + std::to_string(first_row + static_cast<std::int64_t>(f / d)) + ", column " +
             std::to_string(f % d) + " is not a finite number (" + std::to_string(values[f]) + ")";
    });
}

std::string anndata_element(const io::AnnDataReader& reader, const std::string& use_rep) {
  if (use_rep.empty() || use_rep == "X") return "X";
  if (use_rep.find('/') != std::string::npos) return use_rep;
  const std::string in_obsm = "obsm/" + use_rep;
  require(reader.has(in_obsm), reader.path(), in_obsm,
          "no such representation; use_rep takes X or an obsm key");
  return in_obsm;
}

}  // namespace

Matrix<double> PointCloud::to_device() const {
  Matrix<double> x(no_init("kotml::graph::points"), n, dims);
  auto h = Kokkos::create_mirror_view(x);
  for (std::size_t f = 0; f < values.size(); ++f) h.data()[f] = values[f];
  Kokkos::deep_copy(x, h);
  return x;
}

bool is_anndata_file(const std::string& path) {
  const auto file = io::h5::File::open_read(path);
  if (file.has_attribute("/", "encoding-type"))
    return file.read_string_attribute("/", "encoding-type") == "anndata";
  return file.is_group("obs") && file.is_group("var");
}

PointCloud read_point_cloud(const dist::Comm& comm, const std::string& path, const std::string& dataset,
                            const std::string& use_rep) {
  PointCloud cloud;
  std::vector<double> own;
  comm.phase([&] {
    // The element and its shape, on every rank (metadata only).
    std::optional<io::AnnDataReader> anndata;
    std::optional<io::h5::File> plain;
    std::string element;
    if (is_anndata_file(path)) {
      anndata.emplace(path);
      element = anndata_element(*anndata, use_rep);
      const auto info = anndata->matrix_info(element);
      cloud.n = info.rows;
      cloud.dims = info.cols;
    } else {
      plain.emplace(io::h5::File::open_read(path));
      element = use_rep.empty() ? dataset : use_rep;
      require(plain->is_dataset(element), path, element,
              "no such dataset (expected a 2-D array of points, one row per point)");
      const auto shape = plain->shape(element);
      require(shape.size() == 2, path, element,
              "must be 2-D (points × coordinates), has " + std::to_string(shape.size()) + " dimensions");
      cloud.n = shape[0];
      cloud.dims = shape[1];
    }
    require(cloud.n > 0 && cloud.dims > 0, path, element,
            "the point cloud is empty (" + std::to_string(cloud.n) + " × " + std::to_string(cloud.dims) + ")");
    cloud.source = path + ":" + element;
    // This rank's rows.
    const dist::Block block = dist::block_of(cloud.n, comm.size(), comm.rank());
    if (block.end > block.begin) {
      if (anndata) {
        std::vector<std::int64_t> rows(static_cast<std::size_t>(block.end - block.begin));
        std::iota(rows.begin(), rows.end(), block.begin);
        own = anndata->read_rows<double>(element, rows);
      } else {
        own = plain->read_row_range<double>(element, block.begin, block.end);
      }
    }
    check_values(own, block.begin, cloud.dims, path, element);
  });
  cloud.values.resize(static_cast<std::size_t>(cloud.n * cloud.dims));
  comm.allgatherv(own.data(), static_cast<std::int64_t>(own.size()), cloud.values.data(),
                  static_cast<std::int64_t>(cloud.values.size()));
  return cloud;
}

}  // namespace kotml::graph
