// The main of every test executable: MPI, then Kokkos, then GoogleTest.
// Rank 0 prints the usual GoogleTest report; other ranks print only their
// failures, tagged with the rank, so a 3-rank run stays readable. The first
// line names the execution space the test was built for (tests/CMakeLists.txt
// builds each unit test once per space).

#include "kotml/core/blas_threads.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <iostream>

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed())
      std::cerr << "[rank " << rank_ << "] " << (result.file_name() ? result.file_name() : "?")
                << ":" << result.line_number() << ": " << result.summary() << std::endl;
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char* argv[]) {
  kotml::dist::initialize_mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int result = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    kotml::use_one_blas_thread();
    ::testing::InitGoogleTest(&argc, argv);
    if (rank == 0)
      std::cout << "kotml unit tests on execution space " << kotml::ExecSpace::name()
                << " (host work on " << kotml::HostExecSpace::name() << ")" << std::endl;
    if (rank != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new RankFailurePrinter(rank));
    }
    result = RUN_ALL_TESTS();
    // Every rank reports the job as failed if any rank failed.
    int any_failed = result != 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    result = any_failed;
  }
  MPI_Finalize();
  return result;
}
