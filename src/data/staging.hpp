#pragma once
// Host <-> device copies of std::vector data used by the data area's drivers.
// Internal to src/data.

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include "kotml/core/device_copy.hpp"
#include "kotml/core/types.hpp"

namespace kotml::data::detail {

template <class T>
using HostUnmanagedVector = Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using HostUnmanagedMatrix =
    Kokkos::View<T**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class T>
Vector<T> to_device(const std::string& label, const std::vector<T>& host) {
  return device_copy_of<Vector<T>>(host, label.c_str());
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

/// A read-only device view of host data: the host memory itself when the device
/// is the host (no copy), else a device copy. The host vector must outlive it.
template <class T>
Vector<const T> stage(const std::vector<T>& host) {
  return Kokkos::create_mirror_view_and_copy(MemSpace(), HostUnmanagedVector<const T>(host.data(), host.size()));
}

/// A device view of host data to change in place; copy_back() returns the
/// result (nothing to do when the device is the host).
template <class T>
Vector<T> stage_mutable(std::vector<T>& host) {
  return Kokkos::create_mirror_view_and_copy(MemSpace(), HostUnmanagedVector<T>(host.data(), host.size()));
}

template <class T>
void copy_back(std::vector<T>& host, const Vector<T>& device) {
  Kokkos::deep_copy(HostUnmanagedVector<T>(host.data(), host.size()), device);
}

}  // namespace kotml::data::detail
