#pragma once
// Every host wait on a device has a deadline (the CUDA review's N1): a copy,
// an engine lane or a collective that a sick GPU, a broken peer path or a
// fabric fault never finishes would otherwise hang the run with no word (the
// liveness watch cannot help: a process stuck in a wait still sends its
// heartbeats). The device backends poll their queries through
// wait_with_deadline().
//
// A device that missed its deadline cannot be trusted again in this
// process: its work may still be queued, and freeing memory it uses waits
// for that work (cudaFree synchronizes). So the first miss marks the
// process: every later wait fails at once, the buffers are not freed (the
// process ends soon), and main() ends without the vendor runtimes' teardown
// once the run's output is written.
#include <functional>
#include <string>

#include "core/error.hpp"

namespace xb {

// A wait that missed its deadline: a RuntimeError (the measurement in
// flight gets a `failed` record with the text).
class DeviceHung : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// XFERBENCH_DEVICE_TIMEOUT: seconds one device wait may take (default 120;
// at least 1, at most 86400). Throws UsageError on a malformed value.
double device_timeout_from_env();

// Polls `done` until it returns true (it throws on a device error), for at
// most `timeout_s`. Past it: the process is marked (device_hung), a line
// goes to stderr at once, then `on_timeout` runs (e.g. abort a
// communicator; what may block on the wedged device belongs on a thread of
// its own, which main's _exit ends), and DeviceHung is thrown: "<what> did
// not finish within N s (...)". Once the
// process is marked, throws DeviceHung at once, naming the first miss.
// Polls with yields for the first second (as a spinning synchronize: a
// host-timed wait gains no wake-up delay), then sleeps up to 1 ms between
// polls (at most 0.1 % of a wait that long).
void wait_with_deadline(const std::function<bool()>& done, double timeout_s,
                        const std::string& what, const std::function<void()>& on_timeout = {});

// What wait_with_deadline does past the deadline, also for a runtime's own
// bounded wait that timed out (aclrtSynchronizeStreamWithTimeout): marks
// the process, says so on stderr, runs `clean_up` (if any), throws
// DeviceHung.
[[noreturn]] void missed_deadline(const std::string& what, double timeout_s,
                                  const std::function<void()>& clean_up = {});

// Throws DeviceHung once the process is marked: for the blocking calls
// that have no query to poll (a synchronous copy, a free), which must not
// start on a device that stopped answering.
void check_device_answers(const std::string& what);

// The first missed deadline of this process ("" while none was missed).
std::string device_hung();
// Marks the process as device_hung() does (a test's seam, and the census's
// deadline in fleet); the first reason stays.
void note_device_hung(const std::string& why);

}  // namespace xb
