#pragma once
// Host <-> device copies of std::vector data used by the data area's drivers.
// Internal to src/data.

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::data::detail {

template <class T>
using HostUnmanagedVector = Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using HostUnmanagedMatrix =
    Kokkos::View<T**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class T>
Vector<T> to_device(const std::string& label, const std::vector<T>& host) {
  Vector<T> device(no_init(label), host.size());
  Kokkos::deep_copy(device, HostUnmanagedVector<const T>(host.data(), host.size()));
  return device;
}

template <class T>
Matrix<T> to_device(const std::string& label, const std::vector<T>& host, std::int64_t rows,
                    std::int64_t cols) {
  Matrix<T> device(no_init(label), rows, cols);
  Kokkos::deep_copy(device, HostUnmanagedMatrix<const T>(host.data(), rows, cols));
  return device;
}

template <class T>
std::vector<T> to_host(const Vector<T>& device) {
  std::vector<T> host(device.extent(0));
  Kokkos::deep_copy(HostUnmanagedVector<T>(host.data(), host.size()), device);
  return host;
}

template <class T>
std::vector<T> to_host(const Matrix<T>& device) {
  std::vector<T> host(device.extent(0) * device.extent(1));
  Kokkos::deep_copy(HostUnmanagedMatrix<T>(host.data(), device.extent(0), device.extent(1)), device);
  return host;
}

}  // namespace kotml::data::detail
