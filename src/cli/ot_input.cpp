#include "ot_input.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kotml/core/error.hpp"
#include "kotml/core/large_vector.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"

namespace kotml::cli {
namespace {

/// Values read through float64 at a time: 8 MB.
constexpr std::int64_t staging_values = std::int64_t(1) << 20;

/// s.points from s.count rows starting at s.begin, read_rows(first, last)
/// giving rows [first, last) of the file as float64, one staging block at a
/// time: each block's coordinates must be finite, and what float32 would not
/// hold is counted in s.narrowed.
template <class T, class ReadRows>
void read_points(Side<T>& s, ReadRows read_rows) {
  s.points = large_vector<T>(static_cast<std::size_t>(s.count * s.dim));
  const std::int64_t block_rows = std::max<std::int64_t>(1, staging_values / s.dim);
  for (std::int64_t first = 0; first < s.count; first += block_rows) {
    const std::int64_t last = std::min(s.count, first + block_rows);
    const std::vector<double> block = read_rows(s.begin + first, s.begin + last);
    for (std::size_t k = 0; k < block.size(); ++k)
      if (!std::isfinite(block[k]))
        throw Error(s.file, s.element,
                    "point " + std::to_string(s.begin + first + static_cast<std::int64_t>(k) / s.dim) +
                        " has a non-finite coordinate (NaN or Inf)");
    if (std::is_same<T, float>::value) {
      const auto c = count_float32_narrowing(block);
      s.narrowed.overflow += c.overflow;
      s.narrowed.underflow += c.underflow;
    }
    std::transform(block.begin(), block.end(), s.points.begin() + first * s.dim,
                   [](double v) { return static_cast<T>(v); });
  }
}

std::vector<std::int64_t> shape_2d(const io::h5::File& file, const std::string& name) {
  if (!file.is_dataset(name))
    throw Error(file.path(), name, "missing: kotml ot needs the datasets /x (n×d) and /y (m×d)");
  const auto shape = file.shape(name);
  if (shape.size() != 2)
    throw Error(file.path(), name, "must be a 2-D dataset (points × dimensions), has " +
                                       std::to_string(shape.size()) + " dimensions");
  if (shape[0] == 0) throw Error(file.path(), name, "the point set is empty");
  if (shape[1] == 0) throw Error(file.path(), name, "the points have no coordinates");
  return shape;
}

}  // namespace

/// Rows [begin, begin + count) of one side of an HDF5 input, and the matching
/// weights; `weights_name` may be absent (uniform).
template <class T>
Side<T> read_hdf5_side(const io::h5::File& file, const std::string& points_name, const std::string& weights_name,
                       bool all_rows, const dist::Comm& comm) {
  Side<T> s;
  s.file = file.path();
  s.element = points_name;
  const auto shape = shape_2d(file, points_name);
  s.total = shape[0];
  s.dim = shape[1];
  const ot::RowBlock block = all_rows ? ot::RowBlock{s.total, 0, s.total} : ot::RowBlock::of(s.total, comm.size(), comm.rank());
  s.begin = block.begin;
  s.count = block.count;
  read_points(s, [&](std::int64_t first, std::int64_t last) {
    return file.read_row_range<double>(points_name, first, last);
  });
  if (file.exists(weights_name)) {
    const auto wshape = file.shape(weights_name);
    if (wshape.size() != 1 || wshape[0] != s.total)
      throw Error(file.path(), weights_name,
                  "must be a 1-D dataset with one weight per point (" + std::to_string(s.total) + ")");
    if (s.count > 0) s.weights = file.read_range<double>(weights_name, s.begin, s.begin + s.count);
    for (std::size_t i = 0; i < s.weights.size(); ++i) {
      const auto global = std::to_string(s.begin + static_cast<std::int64_t>(i));
      if (!std::isfinite(s.weights[i]))
        throw Error(file.path(), weights_name, "weight " + global + " is not finite (NaN or Inf)");
      if (s.weights[i] < 0) throw Error(file.path(), weights_name, "weight " + global + " is negative");
    }
  }
  return s;
}

/// Rows of an .h5ad's representation (obsm key, layer or X); uniform weights.
template <class T>
Side<T> read_h5ad_side(const std::string& path, const std::string& element, bool all_rows, const dist::Comm& comm) {
  io::AnnDataReader reader(path);
  Side<T> s;
  s.file = path;
  s.element = element;
  const auto info = reader.matrix_info(element);
  s.total = info.rows;
  s.dim = info.cols;
  if (s.total == 0) throw Error(path, element, "the point set is empty (no cells)");
  if (s.dim == 0) throw Error(path, element, "the points have no coordinates");
  const ot::RowBlock block = all_rows ? ot::RowBlock{s.total, 0, s.total} : ot::RowBlock::of(s.total, comm.size(), comm.rank());
  s.begin = block.begin;
  s.count = block.count;
  read_points(s, [&](std::int64_t first, std::int64_t last) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(last - first));
    for (std::int64_t i = first; i < last; ++i) rows[static_cast<std::size_t>(i - first)] = i;
    return reader.read_rows<double>(element, rows);
  });
  return s;
}

template <class T>
void check_same_dimension(const Problem<T>& p) {
  if (p.y.dim != p.x.dim)
    throw Error(p.y.file, p.y.element, "has " + std::to_string(p.y.dim) + " dimensions but " + p.x.element +
                                           " has " + std::to_string(p.x.dim));
}

/// Fills missing weights with 1 and settles their scale. Where the scale does
/// not matter, each side is first multiplied by a power of two that brings its
/// largest weight to [1, 2) (exact, so 1e308-sized weights work as well as 1);
/// the source's total is summed exactly over ranks. Error if a side sums to
/// zero, or (masses kept) past what a sum can hold.
template <class T>
void settle_weights(Problem<T>& p, WeightMass use, const dist::Comm& comm) {
  for (Side<T>* s : {&p.x, &p.y})
    if (s->weights.empty()) s->weights.assign(static_cast<std::size_t>(s->count), 1.0);
  const std::string source_weights = p.x.element == "/x" ? "/a" : p.x.element;
  const std::string target_weights = p.y.element == "/y" ? "/b" : p.y.element;
  auto largest = [](const std::vector<double>& w) {
    double m = 0;
    for (double v : w) m = std::max(m, v);
    return m;
  };
  const double source_largest = comm.max(largest(p.x.weights)), target_largest = largest(p.y.weights);
  if (!(source_largest > 0)) throw Error(p.x.file, source_weights, "the weights sum to zero");
  if (!(target_largest > 0)) throw Error(p.y.file, target_weights, "the weights sum to zero");
  if (use != WeightMass::kept) {
    const int source_shift = -std::ilogb(source_largest), target_shift = -std::ilogb(target_largest);
    for (double& w : p.x.weights) w = std::ldexp(w, source_shift);
    for (double& w : p.y.weights) w = std::ldexp(w, target_shift);
  } else {
    // The exact sum holds values below 2^116, and the cost of an unbalanced
    // plan multiplies the masses further.
    constexpr double largest_kept = 0x1p100;
    const char* too_large = "weights above 2^100 (1.3e30) in unbalanced transport, whose masses count: scale them down";
    if (source_largest >= largest_kept) throw Error(p.x.file, source_weights, too_large);
    if (target_largest >= largest_kept) throw Error(p.y.file, target_weights, too_large);
  }
  dist::ExactSum mass(1);
  for (double w : p.x.weights) mass.add(0, w);
  const double source = mass.allreduce(comm)[0];
  double target = 0;
  for (double w : p.y.weights) target += w;
  if (use != WeightMass::normalised) return;
  for (double& w : p.x.weights) w /= source;
  for (double& w : p.y.weights) w /= target;
}

#define KOTML_OT_INPUT(T)                                                                                     \
  template Side<T> read_hdf5_side<T>(const io::h5::File&, const std::string&, const std::string&, bool,        \
                                     const dist::Comm&);                                                       \
  template Side<T> read_h5ad_side<T>(const std::string&, const std::string&, bool, const dist::Comm&);        \
  template void check_same_dimension<T>(const Problem<T>&);                                                   \
  template void settle_weights<T>(Problem<T>&, WeightMass, const dist::Comm&);
KOTML_OT_INPUT(float)
KOTML_OT_INPUT(double)
#undef KOTML_OT_INPUT

}  // namespace kotml::cli
