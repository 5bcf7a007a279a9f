// Exit codes: 0 ok, 1 a benchmark failed or a check mismatched, 2 bad usage,
// 130/143 stopped by SIGINT/SIGTERM (the records so far kept); under
// --ranks N, the launcher's (130/143 when this process was stopped).
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "backend/common/device_wait.hpp"
#include "backend/select/select.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "runtime/runtime.hpp"

namespace {

// Under mpiexec only rank 0 reports; the other ranks exit with the same code.
void report_error(const char* what) {
  if (xb::launcher_rank() > 0) return;
  std::fprintf(stderr, "xferbench: error: %s\n", what);
}

}  // namespace

// Every path out of main ends the vendor runtimes after the run's objects
// are gone (the family's backend, streams and buffers).
int main(int argc, char** argv) {
  int rc = 0;
  try {
    // A setting naming no valid deadline is bad usage before anything runs,
    // not a failed record at the first GPU wait.
    (void)xb::device_timeout_from_env();
    rc = xb::cli::run(argc, argv);
  } catch (const xb::LauncherDone& e) {  // --ranks N: the run was the launcher's ranks'
    rc = e.code();
  } catch (const xb::Interrupted& e) {  // the output said where it stopped
    std::fflush(stdout);
    rc = 128 + e.signal();
    xb::set_exit_code_hint(rc);
  } catch (const xb::UsageError& e) {
    report_error(e.what());
    std::fflush(stderr);
    rc = 2;
  } catch (const std::exception& e) {
    report_error(e.what());
    std::fflush(stderr);
    rc = 1;
  }
  xb::finish_backends();
  if (rc != 0) xb::finish_deferred_mpi(rc);
  // A device that missed a deadline may hold work the runtimes' teardown
  // at exit would wait for, forever: the output is written, so end here.
  if (!xb::device_hung().empty()) {
    std::fflush(nullptr);
    _exit(rc == 0 ? 1 : rc);
  }
  return rc;
}
