// Deadlines on device waits (backend/common/device_wait.hpp).
#include "backend/common/device_wait.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "runtime/liveness.hpp"

namespace xb {

namespace {
std::mutex g_hung_mu;
std::string g_hung;  // the first miss
}  // namespace

double device_timeout_from_env() {
  const char* v = std::getenv("XFERBENCH_DEVICE_TIMEOUT");
  if (!v || !*v) return 120;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || errno != 0 || !std::isfinite(s) || s < 1 || s > 86400)
    throw UsageError(fmt::format(
        "XFERBENCH_DEVICE_TIMEOUT='{}': want the seconds one device wait may take, 1 to 86400", v));
  return s;
}

std::string device_hung() {
  const std::lock_guard lock(g_hung_mu);
  return g_hung;
}

void note_device_hung(const std::string& why) {
  bool first = false;
  {
    const std::lock_guard lock(g_hung_mu);
    first = g_hung.empty();
    if (first) g_hung = why;
  }
  if (first) write_now(fmt::format("xferbench: error: {}\n", why));
}

void check_device_answers(const std::string& what) {
  if (const std::string earlier = device_hung(); !earlier.empty())
    throw DeviceHung(
        fmt::format("{} not started: a device stopped answering earlier ({})", what, earlier));
}

void missed_deadline(const std::string& what, double timeout_s,
                     const std::function<void()>& clean_up) {
  const std::string why = fmt::format(
      "{} did not finish within {:g} s (XFERBENCH_DEVICE_TIMEOUT): the device, its link or a peer "
      "stopped answering",
      what, timeout_s);
  // Marked and said first: the clean-up may block on the wedged device
  // (an NCCL abort frees memory, and a free waits for every kernel).
  note_device_hung(why);
  if (clean_up) clean_up();
  throw DeviceHung(why);
}

void wait_with_deadline(const std::function<bool()>& done, double timeout_s,
                        const std::string& what, const std::function<void()>& on_timeout) {
  using Clock = std::chrono::steady_clock;
  check_device_answers(what);
  if (done()) return;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  auto nap = std::chrono::microseconds(20);
  while (!done()) {
    const auto now = Clock::now();
    if (now >= deadline) missed_deadline(what, timeout_s, on_timeout);
    if (now - start < std::chrono::seconds(1)) {
      std::this_thread::yield();  // as a spinning synchronize: no wake-up delay on host timing
    } else {
      std::this_thread::sleep_for(nap);  // at most 0.1 % of a wait this long
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
  }
}

}  // namespace xb
