#include "kotml/graph/point_cloud.hpp"

#include <cmath>

#include "kotml/core/error.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::graph {
namespace {

void check_values(const PointCloud& cloud, const std::string& path, const std::string& element) {
  require(cloud.n > 0 && cloud.dims > 0, path, element,
          "the point cloud is empty (" + std::to_string(cloud.n) + " × " +
              std::to_string(cloud.dims) + ")");
  for (std::size_t f = 0; f < cloud.values.size(); ++f)
    require(std::isfinite(cloud.values[f]), path, element, [&] {
      return "row " + std::to_string(f / cloud.dims) + ", column " + std::to_string(f % cloud.dims) +
             " is not a finite number (" + std::to_string(cloud.values[f]) + ")";
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

PointCloud read_point_cloud(const std::string& path, const std::string& dataset,
                            const std::string& use_rep) {
  PointCloud cloud;
  if (is_anndata_file(path)) {
    const io::AnnDataReader reader(path);
    const std::string element = anndata_element(reader, use_rep);
    const auto info = reader.matrix_info(element);
    cloud.source = path + ":" + element;
    cloud.n = info.rows;
    cloud.dims = info.cols;
    cloud.values = reader.read_dense<double>(element);
    check_values(cloud, path, element);
    return cloud;
  }
  const std::string element = use_rep.empty() ? dataset : use_rep;
  const auto file = io::h5::File::open_read(path);
  require(file.is_dataset(element), path, element,
          "no such dataset (expected a 2-D array of points, one row per point)");
  const auto shape = file.shape(element);
  require(shape.size() == 2, path, element,
          "must be 2-D (points × coordinates), has " + std::to_string(shape.size()) +
              " dimensions");
  cloud.source = path + ":" + element;
  cloud.n = shape[0];
  cloud.dims = shape[1];
  cloud.values = file.read<double>(element);
  check_values(cloud, path, element);
  return cloud;
}

}  // namespace kotml::graph
