// Fuzzes `kotml ot`'s input reader: an HDF5 image with /x, /y and optional
// weights /a, /b, mutated structurally (h5_image_mutator.hpp), is read side by
// side, in float or double, and its weights settled as the solver asks
// (normalised, scale-free or kept; both choices from the input's hash). What
// is accepted must be a valid problem: finite points of one dimension, finite
// non-negative weights, unit mass when normalised.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "h5_image_mutator.hpp"
#include "kotml/io/hdf5.hpp"
#include "ot_input.hpp"

namespace {

using namespace kotml;

template <class T>
void check_accepted_side(const cli::Side<T>& s, bool normalised) {
  if (s.count <= 0 || s.dim <= 0) fuzz::report_bug("an empty side was accepted");
  if (s.points.size() != static_cast<std::size_t>(s.count * s.dim)) fuzz::report_bug("points of the wrong size");
  for (T v : s.points)
    if (!std::isfinite(v)) fuzz::report_bug("a non-finite coordinate was accepted");
  if (s.weights.size() != static_cast<std::size_t>(s.count)) fuzz::report_bug("weights of the wrong size");
  double mass = 0;
  for (double w : s.weights) {
    if (!std::isfinite(w) || w < 0) fuzz::report_bug("a weight that is not finite and non-negative");
    mass += w;
  }
  if (!(mass > 0)) fuzz::report_bug("a side of zero mass was accepted");
  if (normalised && std::fabs(mass - 1) > 1e-9) fuzz::report_bug("normalised weights do not sum to one");
}

template <class T>
void read_problem(const io::h5::File& file, cli::WeightMass mode) {
  cli::Problem<T> p;
  p.x = cli::read_hdf5_side<T>(file, "/x", "/a", /*all_rows=*/true, fuzz::world());
  p.y = cli::read_hdf5_side<T>(file, "/y", "/b", /*all_rows=*/true, fuzz::world());
  cli::check_same_dimension(p);
  cli::settle_weights(p, mode, fuzz::world());
  for (const cli::Side<T>* s : {&p.x, &p.y})
    require_float32_range(s->narrowed, s->file, s->element, "use --precision double");
  check_accepted_side(p.x, mode == cli::WeightMass::normalised);
  check_accepted_side(p.y, mode == cli::WeightMass::normalised);
}

/// The input read in the precision of a Sinkhorn solve (float or double,
/// from the hash, as `--precision` chooses) with one of the weight modes.
void read_problem(const std::uint8_t* data, std::size_t size, std::uint64_t hash) {
  const auto file = io::h5::File::open_image("fuzz-ot.h5", data, size);
  const cli::WeightMass modes[] = {cli::WeightMass::normalised, cli::WeightMass::scale_free, cli::WeightMass::kept};
  const auto mode = modes[hash % 3];
  if ((hash / 3) % 2 == 0)
    read_problem<double>(file, mode);
  else
    read_problem<float>(file, mode);
}

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  fuzz::expect_only_user_errors([&] { read_problem(data, size, fuzz::choice_hash(data, size)); });
}

}  // namespace

KOTML_HDF5_IMAGE_FUZZER(fuzz_one)
