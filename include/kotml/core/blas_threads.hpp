#pragma once
// One BLAS thread per rank.
//
// Kokkos Kernels hands large GEMMs to the system BLAS; Debian's OpenBLAS starts a
// thread pool of its own, sized to every core of the node. Parallel work inside
// a rank goes through Kokkos, and BLAS threads next to the Kokkos threads and
// the other ranks on the same cores only spin and yield (measured: 40% of a
// sampled-GW run in sched_yield). The weak reference finds OpenBLAS when it is
// linked and does nothing with any other BLAS.

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace kotml {

inline void use_one_blas_thread() {
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
}

}  // namespace kotml
