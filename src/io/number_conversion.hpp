#pragma once
// Converting numbers between the element types h5::File reads, where the type
// stored in the file is not the one asked for, outside HDF5's conversion.
//
// HDF5 converts element by element through a strip buffer, on the calling
// thread; after a read of the stored type (HDF5's or the inflated chunks of
// deflated_chunks.hpp) the same values are converted here on the rank's Kokkos
// host threads. Every value is the one HDF5's conversion would give, and the
// values HDF5 would report outside the asked-for range are counted alike:
//
//   widening  (widens):        a static_cast, exact (integers into double round
//                              as HDF5's hard conversion does: the C cast);
//   integer to narrower integer: the cast where the value fits, counted where
//                              it does not (HDF5's RANGE_HI / RANGE_LOW);
//   float64 to float32:        the cast (round to nearest); a finite value
//                              beyond ±FLT_MAX is counted, ±inf and NaN pass.
//
// Any other pair (floats into integers, int64 into float32) is HDF5's.

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kotml::io::h5::detail {

/// Whether every From converts to To exactly (or, for integers into double,
/// as HDF5's hard conversion rounds), so that a static_cast gives HDF5's value.
template <class From, class To>
constexpr bool widens() {
  if constexpr (std::is_same_v<From, To>) return false;  // no conversion needed at all
  if constexpr (std::is_same_v<To, double>) return true;  // ints round like HDF5's; floats exact
  if constexpr (std::is_floating_point_v<From> || std::is_floating_point_v<To>) return false;
  if constexpr (std::is_signed_v<From> == std::is_signed_v<To>) return sizeof(To) > sizeof(From);
  if constexpr (std::is_signed_v<To>) return sizeof(To) > sizeof(From);
  return false;
}

/// Whether convert_counting converts From into To (see above).
template <class From, class To>
constexpr bool converts_here() {
  if constexpr (std::is_same_v<From, To>) return false;
  if constexpr (widens<From, To>()) return true;
  if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) return true;
  return std::is_same_v<From, double> && std::is_same_v<To, float>;
}

/// out[i] = in[i] as To for i < n, on the host threads (in order without
/// Kokkos). Returns how many values lie outside To's range, as HDF5 counts
/// them; their elements of out are unspecified. Only where converts_here.
template <class From, class To>
std::size_t convert_counting(const From* in, To* out, std::int64_t n);

}  // namespace kotml::io::h5::detail
