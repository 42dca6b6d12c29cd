#pragma once
// The input of `kotml ot`: two point sets (HDF5 /x, /y with optional weights
// /a, /b, or representations of two .h5ad files), each rank holding a block
// of x's rows and all of y, checked point by point; and the weights' scale,
// settled as the solver needs it. Kept apart from the subcommand so that the
// fuzzer (fuzz/) reads inputs exactly as `kotml ot` does.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/dist/comm.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::cli {

/// One side of the problem as this rank holds it: rows [begin, begin + count)
/// of `total`, row-major, with their weights (empty: uniform).
struct Side {
  std::string file, element;  // for messages
  std::int64_t total = 0, dim = 0, begin = 0, count = 0;
  std::vector<double> points, weights;
};

/// Rows [begin, begin + count) of one side of an HDF5 input, and the matching
/// weights; `weights_name` may be absent (uniform).
Side read_hdf5_side(const io::h5::File& file, const std::string& points_name, const std::string& weights_name,
                    bool all_rows, const dist::Comm& comm);

/// Rows of an .h5ad's representation (obsm key, layer or X); uniform weights.
Side read_h5ad_side(const std::string& path, const std::string& element, bool all_rows, const dist::Comm& comm);

struct Problem {
  Side x, y;
  std::vector<std::string> inputs;
};

/// Error unless x and y have the same number of coordinates.
void check_same_dimension(const Problem& p);

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
void settle_weights(Problem& p, WeightMass use, const dist::Comm& comm);

}  // namespace kotml::cli
