#include "family/gemm_ar/sync.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace xb {

bool SpscQueue::push(std::int64_t v) {
  const auto h = head_.load(std::memory_order_relaxed);
  if (h - tail_.load(std::memory_order_acquire) >= slots_.size()) return false;
  slots_[h % slots_.size()] = v;
  head_.store(h + 1, std::memory_order_release);
  return true;
}

bool SpscQueue::pop(std::int64_t* v) {
  const auto t = tail_.load(std::memory_order_relaxed);
  if (t == head_.load(std::memory_order_acquire)) return false;
  *v = slots_[t % slots_.size()];
  tail_.store(t + 1, std::memory_order_release);
  return true;
}

void SpscQueue::reset() {
  head_.store(0, std::memory_order_relaxed);
  tail_.store(0, std::memory_order_relaxed);
}

// Shared (not PRIVATE) futexes: the counters live in MPI shared windows.
void wake_all(std::atomic<std::uint32_t>& c) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&c), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

void sleep_while(std::atomic<std::uint32_t>& c, std::uint32_t seen, int timeout_ms) {
  for (int i = 0; i < 200; ++i) {  // brief spin first: most waits are short
    if (c.load(std::memory_order_acquire) != seen) return;
    __builtin_ia32_pause();
  }
  timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&c), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

}  // namespace xb
