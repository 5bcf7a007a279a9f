// The host backend's copy engine queue: order, batches, errors and the cores
// its workers take.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/host/worker_pool.hpp"

namespace xb::host {
namespace {

// Waits until every job queued before it has run on every worker.
std::string drain(WorkerPool& pool) {
  std::promise<std::string> done;
  auto f = done.get_future();
  pool.submit({}, [&done](const std::string& error) { done.set_value(error); });
  return f.get();
}

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// The CPUs a worker may run on, read from the worker itself.
struct Seen {
  std::mutex mutex;
  std::vector<std::vector<int>> cpus;  // per worker: its affinity
};

WorkerPool::Part record_affinity(Seen& seen) {
  return [&seen](int w, int) {
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof set, &set), 0);
    std::vector<int> mine;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) mine.push_back(c);
    std::lock_guard lock(seen.mutex);
    if (seen.cpus.size() <= static_cast<std::size_t>(w)) seen.cpus.resize(w + 1);
    seen.cpus[static_cast<std::size_t>(w)] = mine;
  };
}

TEST(WorkerPool, EveryWorkerRunsEveryJobInSubmissionOrder) {
  WorkerPool pool(3, {});
  std::vector<std::vector<int>> order(3);
  for (int j = 0; j < 200; ++j)
    pool.submit([&order, j](int w, int n) {
      EXPECT_EQ(n, 3);
      order[static_cast<std::size_t>(w)].push_back(j);  // each worker its own vector
    });
  EXPECT_EQ(drain(pool), "");
  for (const auto& o : order) {
    ASSERT_EQ(o.size(), 200u);
    for (int j = 0; j < 200; ++j) EXPECT_EQ(o[static_cast<std::size_t>(j)], j);
  }
}

TEST(WorkerPool, AHeldBatchReachesTheWorkersOnlyWhenReleased) {
  WorkerPool pool(2, {});
  std::atomic<int> ran{0};
  pool.hold();
  for (int j = 0; j < 5; ++j) pool.submit([&ran](int, int) { ++ran; });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(ran.load(), 0);
  pool.release();
  EXPECT_EQ(drain(pool), "");
  EXPECT_EQ(ran.load(), 10);  // five jobs, each on both workers
}

TEST(WorkerPool, ADiscardedBatchNeverRuns) {
  WorkerPool pool(2, {});
  std::atomic<int> ran{0};
  pool.hold();
  pool.submit([&ran](int, int) { ++ran; });
  pool.discard();
  pool.submit([&ran](int, int) { ran += 100; });  // not held any more
  EXPECT_EQ(drain(pool), "");
  EXPECT_EQ(ran.load(), 200);
}

TEST(WorkerPool, APartsErrorReachesItsDone) {
  WorkerPool pool(2, {});
  std::promise<std::string> done;
  pool.submit(
      [](int w, int) {
        if (w == 1) throw std::runtime_error("worker 1 failed");
      },
      [&done](const std::string& error) { done.set_value(error); });
  EXPECT_EQ(done.get_future().get(), "worker 1 failed");
}

TEST(WorkerPool, TheGateOpensWhenItsLastWorkerArrives) {
  WorkerPool a(2, {}), b(1, {});
  auto gate = std::make_shared<Gate>(3);
  std::atomic<int> passed{0};
  a.hold();
  b.hold();
  for (auto* p : {&a, &b})
    p->submit([gate, &passed](int, int) {
      gate->arrive_and_wait();
      ++passed;
    });
  a.release();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(passed.load(), 0);  // b's worker has not arrived
  b.release();
  EXPECT_EQ(drain(a), "");
  EXPECT_EQ(drain(b), "");
  EXPECT_EQ(passed.load(), 3);
  EXPECT_GT(gate->start().time_since_epoch().count(), 0);
}

// The CPUs each worker of `pool` may run on, read from the workers.
std::vector<std::vector<int>> affinities(WorkerPool& pool) {
  Seen seen;
  pool.submit(record_affinity(seen));
  drain(pool);
  return seen.cpus;
}

TEST(WorkerPool, WorkersTakeCoresTheFewestOthersHold) {
  const int cpus = allowed_cpus();
  if (cpus < 2) GTEST_SKIP() << "needs 2 CPUs, this process may use " << cpus;
  std::set<int> taken;
  {
    WorkerPool a(1, {}), b(cpus - 1, {});  // every CPU taken once, across two pools
    for (auto* p : {&a, &b})
      for (const auto& w : affinities(*p)) {
        ASSERT_EQ(w.size(), 1u);
        taken.insert(w[0]);
      }
    EXPECT_EQ(taken.size(), static_cast<std::size_t>(cpus));  // all distinct
    // Every core is held once: a further pool's two workers still take two
    // distinct cores (two on one core copy at one core's speed).
    WorkerPool c(2, {});
    const auto two = affinities(c);
    ASSERT_EQ(two.size(), 2u);
    ASSERT_EQ(two[0].size(), 1u);
    ASSERT_EQ(two[1].size(), 1u);
    EXPECT_NE(two[0][0], two[1][0]);
  }
  // More workers than cores: one each, the rest on the whole set; and the
  // pools above gave their cores back, so each is free again.
  WorkerPool d(cpus + 1, {});
  const auto all = affinities(d);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(cpus + 1));
  std::set<int> own;
  int whole = 0;
  for (const auto& w : all) {
    if (w.size() == 1) own.insert(w[0]);
    if (w.size() == static_cast<std::size_t>(cpus)) ++whole;
  }
  EXPECT_EQ(own.size(), static_cast<std::size_t>(cpus));
  EXPECT_EQ(whole, 1);
}

}  // namespace
}  // namespace xb::host
