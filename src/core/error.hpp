#pragma once
// Typed errors. Code throws one of these and main() maps it to an exit code
// (UsageError -> 2, everything else -> 1; core/journal.hpp's Interrupted ->
// 128 + signal). Three paths end the process without unwinding, on purpose:
// the liveness watch when a peer rank is lost (runtime/liveness.cpp), the
// watchdog of an MPI_Finalize that hangs (runtime/mpi_runtime.cpp), and a
// second SIGINT/SIGTERM (core/journal.cpp).
#include <stdexcept>
#include <string>

namespace xb {

// Bad input from the user: malformed option, value out of range, impossible
// request. Exit code 2, one line on stderr.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A backend or system call failed while running (allocation, binding,
// thread creation). Inside a benchmark it becomes a `failed` record.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An operation the backend does not offer (e.g. peer access between two
// devices). Benchmarks turn it into a `waived` record with the message.
class NotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace xb
