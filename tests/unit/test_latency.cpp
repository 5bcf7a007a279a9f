// latency: the chase chain (one cycle through every line), the host
// backend's chain in real node memory, the ping-pong's default iterations.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "backend/backend.hpp"
#include "backend/host/host_backend.hpp"
#include "core/chase.hpp"
#include "core/error.hpp"
#include "family/latency/latency_bench.hpp"

namespace xb {

TEST(LatencyChain, OneCycleThroughEveryLine) {
  for (std::size_t lines : {1u, 2u, 3u, 5u, 64u, 1000u, 4097u, 1u << 16}) {
    SCOPED_TRACE(lines);
    const auto next = chase_cycle(lines, 42);
    ASSERT_EQ(next.size(), lines);
    EXPECT_EQ(cycle_length(next), lines);
    // A permutation: every line is some line's successor exactly once.
    std::vector<std::uint32_t> sorted = next;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < lines; ++i) ASSERT_EQ(sorted[i], i);
    // And one cycle: no line is its own successor (lines > 1), and the walk
    // from line 0 meets every line before coming back.
    std::vector<bool> seen(lines);
    std::size_t at = 0;
    for (std::size_t step = 0; step < lines; ++step) {
      ASSERT_FALSE(seen[at]) << "line " << at << " visited twice";
      seen[at] = true;
      if (lines > 1) {
        ASSERT_NE(next[at], at);
      }
      at = next[at];
    }
    EXPECT_EQ(at, 0u);
  }
}

TEST(LatencyChain, RandomOrderDeterministicPerSeed) {
  const auto a = chase_cycle(4096, 1), b = chase_cycle(4096, 1), c = chase_cycle(4096, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Not a stride the prefetchers follow: few successors are the next line.
  int sequential = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sequential += a[i] == (i + 1) % a.size();
  EXPECT_LT(sequential, 10);
}

TEST(LatencyChain, CycleLengthCatchesABrokenChain) {
  // Two cycles (0 1)(2 3): the walk from 0 comes back after 2 of 4 lines.
  const std::vector<std::uint32_t> two = {1, 0, 3, 2};
  EXPECT_EQ(cycle_length(two), 2u);
  // A successor out of range, and a walk that never returns to 0.
  EXPECT_EQ(cycle_length(std::vector<std::uint32_t>{1, 7}), 0u);
  EXPECT_EQ(cycle_length(std::vector<std::uint32_t>{1, 2, 1}), 0u);
  EXPECT_EQ(cycle_length({}), 0u);
}

TEST(LatencyHostChain, ChasesNodeMemoryAndVisitsEveryLine) {
  auto b = make_host_backend();
  auto chain = b->make_chain(MemKind::device, 0, 1 << 20, 7);
  ASSERT_EQ(chain->bytes(), 1u << 20);
  const auto ns = chain->chase(0, 1000, 5, 1);
  ASSERT_EQ(ns.size(), 5u);
  for (double v : ns) {
    EXPECT_GT(v, 0);
    EXPECT_LT(v, 1e6);  // under a millisecond per load
  }
  EXPECT_TRUE(chain->verify(0));
  // A size that is not whole lines is rounded down to them.
  EXPECT_EQ(b->make_chain(MemKind::device, 0, 1000, 7)->bytes(), 960u);
}

TEST(LatencyHostChain, HostMemoryNotSupportedAndTooSmallRefused) {
  auto b = make_host_backend();
  EXPECT_THROW(b->make_chain(MemKind::pinned, -1, 1 << 20, 1), NotSupported);
  EXPECT_THROW(b->make_chain(MemKind::device, 0, 64, 1), UsageError);
}

TEST(Latency, PingPongIterationsLikeOsuLatency) {
  EXPECT_EQ(pingpong_iters(8), 10000);
  EXPECT_EQ(pingpong_iters(8192), 10000);
  EXPECT_EQ(pingpong_iters(16384), 1000);
  EXPECT_EQ(pingpong_iters(65536), 1000);
}

TEST(Latency, DigestDiffersWithEveryOption) {
  LatencyConfig a;
  a.sizes = {8, 16};
  std::set<std::string> seen{latency_digest(a)};
  LatencyConfig b = a;
  b.chain = 1 << 20;
  seen.insert(latency_digest(b));
  b = a;
  b.loads = 7;
  seen.insert(latency_digest(b));
  b = a;
  b.sizes = {8};
  seen.insert(latency_digest(b));
  b = a;
  b.iters = 3;
  seen.insert(latency_digest(b));
  b = a;
  b.pingpong = false;
  seen.insert(latency_digest(b));
  EXPECT_EQ(seen.size(), 6u);
}

}  // namespace xb
