// The execution space a unit test runs on is the one its build names
// (tests/CMakeLists.txt passes it as KOTML_TEST_SPACE): the library areas and
// the test agree on kotml::ExecSpace, and host work stays on that space when it
// can reach host memory, so a Serial instantiation starts no OpenMP thread.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#include "kotml/core/types.hpp"

#define KOTML_TEST_STRINGIFY_(x) #x
#define KOTML_TEST_STRINGIFY(x) KOTML_TEST_STRINGIFY_(x)

TEST(ExecutionSpaces, TheTestRunsOnTheSpaceItsBuildNames) {
  EXPECT_EQ(std::string(kotml::ExecSpace::name()), KOTML_TEST_STRINGIFY(KOTML_TEST_SPACE));
}

TEST(ExecutionSpaces, HostWorkRunsOnTheSameSpaceWhenItReachesHostMemory) {
  constexpr bool host_reachable =
      Kokkos::SpaceAccessibility<kotml::ExecSpace, kotml::HostSpace>::accessible;
  if (host_reachable) {
    EXPECT_TRUE((std::is_same<kotml::HostExecSpace, kotml::ExecSpace>::value))
        << kotml::HostExecSpace::name() << " beside " << kotml::ExecSpace::name();
  } else {
    EXPECT_TRUE((std::is_same<kotml::HostExecSpace, Kokkos::DefaultHostExecutionSpace>::value));
  }
}
