#include "kotml/core/large_vector.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kotml {

void advise_huge_pages(void* data, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < huge_page_advice_bytes) return;
  constexpr std::uintptr_t huge_page = std::uintptr_t(2) << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto first = (begin + huge_page - 1) & ~(huge_page - 1);
  const auto last = (begin + bytes) & ~(huge_page - 1);
  // Refused advice (EINVAL on a kernel without THP) leaves ordinary pages.
  if (first < last) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace kotml
