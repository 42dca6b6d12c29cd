#pragma once
// Vectors of tens of megabytes (whole sparse matrices read from a file) backed
// by transparent huge pages where the kernel offers them on request.
//
// A fresh large allocation is mapped on first touch, one fault per 4 KiB page:
// reading a 100,000-cell CSR matrix (72 MB) spent a third of its time in page
// faults and in clearing and unmapping pages. Most Linux distributions set
// transparent huge pages to "madvise", so only memory that asks gets 2 MiB pages;
// numpy asks for every array of 4 MiB or more, and so does this. The advice is
// only advice: where it is refused (another OS, THP "never") the vector is the
// same, only slower to fill.

#include <cstddef>
#include <vector>

namespace kotml {

/// Sizes from which the advice is given (numpy's threshold).
inline constexpr std::size_t huge_page_advice_bytes = std::size_t(4) << 20;

/// Advises the kernel to back the 2 MiB-aligned part of [data, data + bytes) with
/// huge pages, from huge_page_advice_bytes on. Does nothing below that, or where
/// the advice does not exist.
void advise_huge_pages(void* data, std::size_t bytes) noexcept;

/// std::vector<T>(n), value-initialised, with the advice given before the first
/// touch.
template <class T>
std::vector<T> large_vector(std::size_t n) {
  std::vector<T> values;
  values.reserve(n);
  advise_huge_pages(values.data(), n * sizeof(T));
  values.resize(n);
  return values;
}

}  // namespace kotml
