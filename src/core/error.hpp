#pragma once
// Typed errors. Nothing below main() exits: code throws one of these and
// main() maps it to an exit code (UsageError -> 2, everything else -> 1).
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
