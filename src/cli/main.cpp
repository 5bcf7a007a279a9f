// Exit codes: 0 ok, 1 a benchmark failed or a check mismatched, 2 bad usage.
#include <cstdio>
#include <exception>

#include "cli/cli.hpp"
#include "core/error.hpp"
#include "runtime/runtime.hpp"

namespace {

// Under mpiexec only rank 0 reports; the other ranks exit with the same code.
void report_error(const char* what) {
  if (xb::launcher_rank() > 0) return;
  std::fprintf(stderr, "xferbench: error: %s\n", what);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return xb::cli::run(argc, argv);
  } catch (const xb::UsageError& e) {
    report_error(e.what());
    std::fflush(stderr);
    xb::finish_deferred_mpi(2);
    return 2;
  } catch (const std::exception& e) {
    report_error(e.what());
    std::fflush(stderr);
    xb::finish_deferred_mpi(1);
    return 1;
  }
}
