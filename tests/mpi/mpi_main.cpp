// GoogleTest under mpiexec: one MPI runtime for the whole process, made
// before the tests and finalised after them.
#include <gtest/gtest.h>

#include "mpi_env.hpp"

namespace {
std::unique_ptr<xb::Runtime> g_runtime;
}

xb::Runtime& test_runtime() { return *g_runtime; }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_runtime = xb::make_mpi_runtime();
  if (g_runtime->rank() != 0) {  // one report; other ranks' failures still fail the exit code
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  // Every rank must agree: a failure anywhere fails the run everywhere.
  rc = g_runtime->max(static_cast<double>(rc)) > 0 ? 1 : 0;
  g_runtime.reset();
  return rc;
}
