#pragma once
// Reinterprets the bits of one trivially copyable value as another type of the
// same size, in host and device code alike (std::bit_cast is C++20).

#include <Kokkos_Core.hpp>

#include <cstring>

namespace kotml {

#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define KOTML_BUILTIN_BIT_CAST 1
#endif
#endif

template <class To, class From>
KOKKOS_FORCEINLINE_FUNCTION To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
#ifdef KOTML_BUILTIN_BIT_CAST
  return __builtin_bit_cast(To, from);
#else
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

}  // namespace kotml
