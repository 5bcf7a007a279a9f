#pragma once
// Synchronisation of the fused operator: a single-producer/single-consumer
// ready queue with cache-line-padded indices, and waiting on a 32-bit
// counter that may live in shared memory between processes: spin briefly,
// then sleep on a shared futex, with a watchdog deadline.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace xb {

class SpscQueue {
 public:
  explicit SpscQueue(std::size_t capacity) : slots_(capacity) {}
  // Producer only. Returns false when full (never, sized for an iteration).
  bool push(std::int64_t v);
  // Consumer only.
  bool pop(std::int64_t* v);
  void reset();  // neither side active

 private:
  alignas(64) std::atomic<std::uint64_t> head_{0};  // written by the producer
  alignas(64) std::atomic<std::uint64_t> tail_{0};  // written by the consumer
  alignas(64) std::vector<std::int64_t> slots_;
};

// A 32-bit counter on its own cache line (placement-new'd into windows).
struct alignas(64) PaddedCounter {
  std::atomic<std::uint32_t> value{0};
  char pad[64 - sizeof(std::atomic<std::uint32_t>)];
};
static_assert(sizeof(PaddedCounter) == 64);

// Wakes every waiter of `c`, in any process.
void wake_all(std::atomic<std::uint32_t>& c);
// Sleeps while c == seen, at most timeout_ms (spurious returns allowed).
void sleep_while(std::atomic<std::uint32_t>& c, std::uint32_t seen, int timeout_ms);

}  // namespace xb
