// Main of every benchmark driver: MPI, Kokkos, then Google Benchmark. The
// machine is named in the context block so that a table always says where it
// was measured.

#include "kotml/core/blas_threads.hpp"
#include "kotml/dist/comm.hpp"
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>

#include <fstream>
#include <string>

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace

int main(int argc, char* argv[]) {
  kotml::dist::initialize_mpi(&argc, &argv);
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    kotml::use_one_blas_thread();
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    benchmark::AddCustomContext("host", host);
    benchmark::AddCustomContext("cpu_model", cpu_model());
    benchmark::AddCustomContext("kokkos_execution_space", Kokkos::DefaultExecutionSpace::name());
    benchmark::AddCustomContext("kokkos_concurrency",
                                std::to_string(Kokkos::DefaultExecutionSpace().concurrency()));
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  MPI_Finalize();
  return 0;
}
