#pragma once
// Host vectors copied to the device: the one helper that every area calls
// (graph orders, gw's node lists, ot's tables, data's staged arrays).

#include <vector>

#include "kotml/core/types.hpp"

namespace kotml {

/// A device copy of a host vector; V is a rank-1 View in MemSpace.
template <class V>
V device_copy_of(const std::vector<typename V::non_const_value_type>& host, const char* label) {
  using T = typename V::non_const_value_type;
  V v(no_init(label), host.size());
  Kokkos::deep_copy(v, Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(),
                                                                                                  host.size()));
  return v;
}

}  // namespace kotml
