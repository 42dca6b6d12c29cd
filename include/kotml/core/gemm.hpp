#pragma once
// C = α·op(A)·op(B) + β·C through Kokkos Kernels, run on kotml::ExecSpace.
//
// Without an execution space KokkosBlas::gemm runs on the default space of the
// Views' memory space, which for host memory is Kokkos' default host space: a
// Serial build of the areas (cmake/KotmlSpaces.cmake) would still multiply on
// OpenMP. Kokkos Kernels takes an execution space instance from 4.1 on; Debian
// 12's 3.4.1 has none, and only Serial there, which is then the right space.

#include <KokkosBlas3_gemm.hpp>
#include <KokkosKernels_config.h>

#include "kotml/core/types.hpp"

namespace kotml {

template <class AView, class BView, class CView>
void gemm(const char* trans_a, const char* trans_b, typename AView::const_value_type alpha,
          const AView& a, const BView& b, typename CView::const_value_type beta, const CView& c) {
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
  KokkosBlas::gemm(ExecSpace(), trans_a, trans_b, alpha, a, b, beta, c);
#else
  KokkosBlas::gemm(trans_a, trans_b, alpha, a, b, beta, c);
#endif
}

}  // namespace kotml
