#pragma once
// The input of `kotml ot`: two point sets (HDF5 /x, /y with optional weights
// /a, /b, or representations of two .h5ad files), each rank holding a block
// of x's rows and all of y, checked point by point; and the weights' scale,
// settled as the solver needs it. Kept apart from the subcommand so that the
// fuzzer (fuzz/) reads inputs exactly as `kotml ot` does.
//
// Points are held in the precision of the solve (T). The file's values pass
// through float64 in blocks of about 8 MB, where each block is checked (finite
// coordinates; for float, what would not survive the narrowing is counted), so
// a rank never holds a float64 copy of a whole side: y, which every rank holds
// whole, would otherwise cost twice its float32 size again while it is read.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/narrowing.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::cli {

/// One side of the problem as this rank holds it: rows [begin, begin + count)
/// of `total`, row-major, in precision T, with their weights (empty: uniform).
template <class T>
struct Side {
  std::string file, element;  // for messages
  std::int64_t total = 0, dim = 0, begin = 0, count = 0;
  std::vector<T> points;
  std::vector<double> weights;
  /// The file's values that float32 cannot hold (always zero for T = double),
  /// for require_float32_range once the weights are settled.
  NarrowingCount narrowed;
};

/// Rows [begin, begin + count) of one side of an HDF5 input, and the matching
/// weights; `weights_name` may be absent (uniform).
template <class T>
Side<T> read_hdf5_side(const io::h5::File& file, const std::string& points_name, const std::string& weights_name,
                    bool all_rows, const dist::Comm& comm);

/// Rows of an .h5ad's representation (obsm key, layer or X); uniform weights.
template <class T>
Side<T> read_h5ad_side(const std::string& path, const std::string& element, bool all_rows, const dist::Comm& comm);

template <class T>
struct Problem {
  Side<T> x, y;
  std::vector<std::string> inputs;
};

/// Error unless x and y have the same number of coordinates.
template <class T>
void check_same_dimension(const Problem<T>& p);

/// What the solver does with the weights' total mass.
enum class WeightMass {
  normalised,  // balanced Sinkhorn: each side is scaled to unit mass here
  scale_free,  // EMD: the solver normalises each side itself
  kept,        // unbalanced Sinkhorn: the masses are part of the problem
};

/// Fills missing weights with 1 and settles their scale. Where the scale does
/// not matter, each side is first multiplied by a power of two that brings its
/// largest weight to [1, 2) (exact, so 1e308-sized weights work as well as 1);
/// the source's total is summed exactly over ranks. Error if a side sums to
/// zero, or (masses kept) past what a sum can hold.
template <class T>
void settle_weights(Problem<T>& p, WeightMass use, const dist::Comm& comm);

}  // namespace kotml::cli
