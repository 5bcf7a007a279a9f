// The host backend's pointer chase: the chain lives in memory bound to one
// NUMA node (allocate(MemKind::device, ...)), a worker of another (or the
// same) node's engine, on that node's CPUs, follows it with dependent loads.
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <future>
#include <memory>

#include "backend/host/host_internal.hpp"
#include "core/chase.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

namespace xb::host {
namespace {

constexpr Bytes kMinDefault = 256ULL << 20;  // the default chain: at least this, 4x the LLC

// `n` dependent loads from `p`: each address is the value the last load read.
[[gnu::noinline]] const void* walk(const void* p, std::uint64_t n) {
  for (; n >= 8; n -= 8) {
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
    p = *static_cast<const void* const*>(p);
  }
  for (; n > 0; --n) p = *static_cast<const void* const*>(p);
  return p;
}

class HostChain final : public Chain {
 public:
  HostChain(HostBackend& backend, int device, Bytes bytes, std::uint64_t seed)
      : backend_(backend), buf_(backend.allocate(MemKind::device, device, bytes)) {
    auto* base = static_cast<std::byte*>(buf_->data());
    // Transparent huge pages where the kernel gives them (before the first
    // touch), so the figure is the memory's more than the page walker's.
    (void)madvise(base, bytes, MADV_HUGEPAGE);
    const std::vector<std::uint32_t> next = chase_cycle(bytes / kChaseLine, seed);
    for (std::size_t i = 0; i < next.size(); ++i)  // in address order: a sequential write
      *reinterpret_cast<const void**>(base + i * kChaseLine) = base + next[i] * kChaseLine;
    cursor_ = base;
  }

  Bytes bytes() const override { return buf_->size(); }

  std::vector<double> chase(int chaser, int loads, int samples, int warmup) override {
    std::vector<double> ns;
    ns.reserve(static_cast<std::size_t>(samples));
    on(chaser, [&] {
      const void* p = cursor_;
      for (int i = 0; i < warmup; ++i) p = walk(p, static_cast<std::uint64_t>(loads));
      for (int i = 0; i < samples; ++i) {
        const auto t0 = Clock::now();
        p = walk(p, static_cast<std::uint64_t>(loads));
        const auto t1 = Clock::now();
        ns.push_back(elapsed_us(t0, t1) * 1000.0 / loads);
      }
      cursor_ = p;  // the next chase goes on from here
    });
    return ns;
  }

  bool verify(int chaser) override {
    bool ok = false;
    on(chaser, [&] {
      const auto* base = static_cast<const std::byte*>(buf_->data());
      const std::size_t lines = buf_->size() / kChaseLine;
      const std::byte* at = base;
      for (std::size_t step = 1; step <= lines; ++step) {
        at = *reinterpret_cast<const std::byte* const*>(at);
        if (at < base || at >= base + buf_->size() ||
            static_cast<std::size_t>(at - base) % kChaseLine != 0)
          return;  // off the chain
        if (at == base) {
          ok = step == lines;
          return;
        }
      }
    });
    return ok;
  }

 private:
  // Runs `f` on a worker of `chaser`'s engine (pinned to its node's CPUs), waits.
  template <class F>
  void on(int chaser, F&& f) {
    auto done = std::make_shared<std::promise<std::string>>();  // the worker may outlive this call
    auto result = done->get_future();
    backend_.engine(chaser, 1).submit([&](int, int) { f(); },
                                      [done](const std::string& error) { done->set_value(error); });
    if (const std::string error = result.get(); !error.empty()) throw RuntimeError(error);
  }

  HostBackend& backend_;
  std::unique_ptr<Buffer> buf_;
  const void* cursor_ = nullptr;
};

}  // namespace

std::unique_ptr<Chain> HostBackend::make_chain(MemKind kind, int device, Bytes bytes,
                                               std::uint64_t seed) {
  if (kind != MemKind::device)
    throw NotSupported(
        "on the host backend host memory is a NUMA node's: the device chase covers every node");
  check_device(device);
  if (bytes == 0) bytes = std::max(kMinDefault, 4 * last_level_cache());
  bytes -= bytes % kChaseLine;
  if (bytes < 2 * kChaseLine || bytes / kChaseLine > kChaseMaxLines)
    throw UsageError(fmt::format("a chain of {} B: it takes 128 B to 256 GiB", bytes));
  return std::make_unique<HostChain>(*this, device, bytes, seed);
}

}  // namespace xb::host
