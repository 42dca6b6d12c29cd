// The simulated clock for kotml's own timers, in the `smpi` build only
// (cmake/KotmlSmpi.cmake links it into kotml with --wrap).
//
// Under SMPI every rank runs in one process and SimGrid advances a simulated
// clock: computation blocks are timed on the host and charged at
// smpi/host-speed, communications follow the platform's network model.
// kotml's phase timers read std::chrono::steady_clock and Kokkos::Timer reads
// std::chrono::system_clock; libstdc++ implements both inside libstdc++.so, out
// of reach of the clock_gettime macro of smpi/smpi_helpers.h, so they would read
// the host's clock while the ranks take turns on it. The linker sends kotml's
// calls of these two functions here instead.
//
// clock_gettime below is smpi_helpers.h's macro (smpicxx force-includes the
// header): between MPI_Init and MPI_Finalize it ends the current computation
// block (charging it to the simulated clock) and answers with the simulated
// time; outside them it is the host's clock_gettime.

#include <chrono>
#include <ctime>

#ifndef SMPI_HELPERS_H
#error "smpi_clock.cpp is for the smpi preset: build with smpicxx"
#endif

namespace {

std::chrono::nanoseconds simulated_now() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace

extern "C" {

// std::chrono::_V2::steady_clock::now()
std::chrono::steady_clock::time_point __wrap__ZNSt6chrono3_V212steady_clock3nowEv() noexcept {
  return std::chrono::steady_clock::time_point(simulated_now());
}

// std::chrono::_V2::system_clock::now() (Kokkos::Timer's high_resolution_clock)
std::chrono::system_clock::time_point __wrap__ZNSt6chrono3_V212system_clock3nowEv() noexcept {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(simulated_now()));
}

}  // extern "C"
