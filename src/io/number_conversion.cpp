#include "number_conversion.hpp"

#include <Kokkos_Core.hpp>
#include <cmath>
#include <limits>

#include "kotml/core/error.hpp"
#include "kotml/core/types.hpp"

namespace kotml::io::h5::detail {
namespace {

/// Whether From value v is one of To's values.
template <class To, class From>
bool fits(const From v) {
  if constexpr (widens<From, To>()) {
    return true;
  } else if constexpr (std::is_integral_v<From>) {
    using Limits = std::numeric_limits<To>;
    if constexpr (std::is_unsigned_v<From> && std::is_unsigned_v<To>)  // no lower bound to check (nvcc warns)
      return v <= Limits::max();
    else if constexpr (std::is_signed_v<From> == std::is_signed_v<To>)
      return Limits::min() <= v && v <= Limits::max();
    else if constexpr (std::is_signed_v<From>)  // into unsigned
      return v >= 0 && static_cast<std::make_unsigned_t<From>>(v) <= Limits::max();
    else  // unsigned into signed
      return v <= static_cast<std::make_unsigned_t<To>>(Limits::max());
  } else {  // float64 into float32: infinities and NaN are not out of range
    return !(std::isfinite(v) && std::fabs(v) > static_cast<From>(std::numeric_limits<To>::max()));
  }
}

}  // namespace

template <class From, class To>
std::size_t convert_counting(const From* in, To* out, const std::int64_t n) {
  if constexpr (!converts_here<From, To>()) {
    internal_check(false, "convert_counting: a pair of element types that HDF5 converts");
    return 0;
  } else {
    const auto one = [=](const std::int64_t i, std::size_t& outside) {
      const From v = in[i];
      if (!fits<To>(v)) ++outside;
      out[i] = static_cast<To>(v);
    };
    std::size_t outside = 0;
    // Host code reading host memory: the host threads, even in a device build.
    if (!Kokkos::is_initialized()) {
      for (std::int64_t i = 0; i < n; ++i) one(i, outside);
      return outside;
    }
    Kokkos::parallel_reduce("kotml::io::convert_numbers",
                            Kokkos::RangePolicy<HostExecSpace, Kokkos::IndexType<std::int64_t>>(0, n), one, outside);
    return outside;
  }
}

// Every pair of h5::File's ten element types (those converts_here refuses are
// an internal error, and never called).
#define KOTML_CONVERT(From, To) template std::size_t convert_counting<From, To>(const From*, To*, std::int64_t);
#define KOTML_CONVERT_INTO(To)  \
  KOTML_CONVERT(std::int8_t, To)   \
  KOTML_CONVERT(std::int16_t, To)  \
  KOTML_CONVERT(std::int32_t, To)  \
  KOTML_CONVERT(std::int64_t, To)  \
  KOTML_CONVERT(std::uint8_t, To)  \
  KOTML_CONVERT(std::uint16_t, To) \
  KOTML_CONVERT(std::uint32_t, To) \
  KOTML_CONVERT(std::uint64_t, To) \
  KOTML_CONVERT(float, To)         \
  KOTML_CONVERT(double, To)
KOTML_CONVERT_INTO(std::int8_t)
KOTML_CONVERT_INTO(std::int16_t)
KOTML_CONVERT_INTO(std::int32_t)
KOTML_CONVERT_INTO(std::int64_t)
KOTML_CONVERT_INTO(std::uint8_t)
KOTML_CONVERT_INTO(std::uint16_t)
KOTML_CONVERT_INTO(std::uint32_t)
KOTML_CONVERT_INTO(std::uint64_t)
KOTML_CONVERT_INTO(float)
KOTML_CONVERT_INTO(double)
#undef KOTML_CONVERT_INTO
#undef KOTML_CONVERT

}  // namespace kotml::io::h5::detail
