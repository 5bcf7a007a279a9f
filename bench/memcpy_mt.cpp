// Peer baseline for `xferbench copy -t d2d`: a plain multi-threaded memcpy
// loop. T threads each copy one contiguous 1/T of the buffer; an iteration is
// timed from the instant the last thread reaches a common start to the
// instant the last thread finishes. The threads spin at the start (no thread
// is asleep when the clock starts), so at small sizes the figure is the
// copy's, not a wake-up's. Prints the median and best GB/s (decimal, bytes
// counted once) as JSON.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: memcpy_mt BYTES THREADS ITERS\n");
    return 2;
  }
  const std::size_t n = std::strtoull(argv[1], nullptr, 10);
  const int t = std::atoi(argv[2]);
  const int iters = std::atoi(argv[3]);
  if (n == 0 || t < 1 || iters < 1) return 2;
  // Its threads only pause while they wait (with a yield in the wait, a
  // 1 MiB copy fell to a fifth of its speed in some runs), so each needs a
  // core of its own.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && t > CPU_COUNT(&allowed)) {
    std::fprintf(stderr, "memcpy_mt: %d threads, but only %d CPUs to run them on\n", t,
                 CPU_COUNT(&allowed));
    return 2;
  }
  auto* src = static_cast<char*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096));
  auto* dst = static_cast<char*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096));
  // Distinct data in every page, as xferbench's verification pattern has:
  // constant pages could be shared or compressed by a hypervisor.
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t v = (i / 8 + 1) * 0x9E3779B97F4A7C15ULL;
    std::memcpy(src + i, &v, 8);
  }
  std::memset(dst, 0x5A, n);
  using Clock = std::chrono::steady_clock;
  std::vector<double> us;
  Clock::time_point t0;
  // Iteration i starts when `arrived` reaches t*(i+1): the last to arrive
  // stamps t0 and bumps `go`. It ends when `finished` reaches t*(i+1): the
  // last to finish records the time. Threads spin (pause) in between.
  std::atomic<long> arrived{0}, finished{0}, go{0};
  const std::size_t chunk = (n + t - 1) / t;
  auto worker = [&](int id) {
    const std::size_t b = std::min(n, chunk * id), e = std::min(n, b + chunk);
    for (long i = 0; i < iters + 2; ++i) {  // 2 warm-up iterations
      const long all = t * (i + 1);
      // Every thread waits for the previous iteration's end before arriving.
      while (finished.load(std::memory_order_acquire) < t * i) __builtin_ia32_pause();
      if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == all) {
        t0 = Clock::now();
        go.store(i + 1, std::memory_order_release);
      } else {
        while (go.load(std::memory_order_acquire) < i + 1) __builtin_ia32_pause();
      }
      std::memcpy(dst + b, src + b, e - b);
      if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == all && i >= 2)
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < t; ++i) threads.emplace_back(worker, i);
  worker(0);
  for (auto& th : threads) th.join();
  std::sort(us.begin(), us.end());
  const double med = us[us.size() / 2], best = us.front();
  std::printf(
      "{\"bytes\": %zu, \"threads\": %d, \"iters\": %d, \"gbps_median\": %.4f, \"gbps_max\": "
      "%.4f}\n",
      n, t, iters, n / med / 1e3, n / best / 1e3);
  const bool ok = std::memcmp(src, dst, n) == 0;
  std::free(src);
  std::free(dst);
  return ok ? 0 : 1;
}
