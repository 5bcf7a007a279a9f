// The fake HCCL on two ranks, one forked process each, straight through the
// C API (tests/fake_cann/fake_hccl.cpp lists its rules): scatter from root
// 1, an uneven alltoallv and one whose receive count differs from what its
// sender sends; a batch send/recv whose receive does not match its peer's
// send fails on that rank and leaves no rank waiting. (Each test runs in a
// process of its own under ctest; none runs where CANN is loaded already.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "fake_test.hpp"

namespace xb {
namespace {

using Clock = std::chrono::steady_clock;

// ---- scatter and alltoallv ------------------------------------------------

// n int32 values counting up from `from`.
std::vector<std::int32_t> iota(std::size_t n, std::int32_t from) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<std::int32_t>(i);
  return v;
}

#define CHILD_CHECK(call)                                                  \
  do {                                                                     \
    const int e_ = (call);                                                 \
    if (e_ != 0)                                                           \
      return std::string(#call) + " = " + std::to_string(e_) + " (line " + \
             std::to_string(__LINE__) + ")";                               \
  } while (0)

// Rank `rank` of 2 on NPU `rank`: scatter from root 1, an uneven alltoallv,
// then one whose receive count differs from what its sender sends. "" or
// what went wrong.
std::string two_rank_child(int rank, int info_in, int info_out) {
  const BackendStatus status = probe_ascend();
  if (!status.available) return status.reason;
  const auto& a = ascend::api();
  if (!ascend::hccl().api) return ascend::hccl().error;
  const auto& h = *ascend::hccl().api;
  if (!h.HcclScatter || !h.HcclAlltoAllV) return "no HcclScatter or HcclAlltoAllV";
  CHILD_CHECK(a.aclrtSetDevice(rank));
  ascend::HcclRootInfo info{};
  if (rank == 0) {
    CHILD_CHECK(h.HcclGetRootInfo(&info));
    if (write(info_out, &info, sizeof info) != static_cast<ssize_t>(sizeof info))
      return "root info not sent";
  } else {
    std::size_t got = 0;
    while (got < sizeof info) {
      const ssize_t r = read(info_in, info.internal + got, sizeof info - got);
      if (r <= 0) return "no root info from rank 0";
      got += static_cast<std::size_t>(r);
    }
  }
  ascend::HcclComm comm = nullptr;
  void* stream = nullptr;
  CHILD_CHECK(h.HcclCommInitRootInfo(2, &info, static_cast<std::uint32_t>(rank), &comm));
  CHILD_CHECK(a.aclrtCreateStream(&stream));
  void *send = nullptr, *recv = nullptr;
  CHILD_CHECK(a.aclrtMalloc(&send, 1 << 20, 0));
  CHILD_CHECK(a.aclrtMalloc(&recv, 1 << 20, 0));
  auto to_device = [&](void* dev, const std::vector<std::int32_t>& v) {
    return a.aclrtMemcpy(dev, 1 << 20, v.data(), v.size() * 4, 1);
  };
  auto from_device = [&](const void* dev, std::size_t n) {
    std::vector<std::int32_t> v(n);
    if (a.aclrtMemcpy(v.data(), n * 4, dev, n * 4, 2) != 0) v.clear();
    return v;
  };

  // scatter: root 1 holds 2 * count; rank 0 passes no send.
  constexpr std::size_t count = 1000;
  CHILD_CHECK(to_device(send, iota(2 * count, 7)));
  CHILD_CHECK(to_device(recv, std::vector<std::int32_t>(count, -1)));
  CHILD_CHECK(
      h.HcclScatter(rank == 1 ? send : nullptr, recv, count, ascend::kHcclInt32, 1, comm, stream));
  CHILD_CHECK(a.aclrtSynchronizeStream(stream));
  if (from_device(recv, count) != iota(count, 7 + rank * static_cast<std::int32_t>(count)))
    return "scatter: rank " + std::to_string(rank) + " did not receive its block";

  // alltoallv: rank s sends 100(s+1) + 10d + 1 elements to rank d, the
  // blocks in reverse order with gaps of 5; receive blocks in order, gaps of 3.
  auto sent = [](int src, int dst) {
    const int n = 100 * (src + 1) + 10 * dst + 1;
    return static_cast<std::uint64_t>(n);
  };
  auto value = [](int src, int dst, std::uint64_t i) {
    return static_cast<std::int32_t>(1000000 * src + 10000 * dst + static_cast<int>(i));
  };
  std::uint64_t sc[2], sd[2], rc[2], rd[2];
  std::uint64_t at = 5;
  for (int d = 1; d >= 0; --d) {
    sc[d] = sent(rank, d);
    sd[d] = at;
    at += sc[d] + 5;
  }
  std::vector<std::int32_t> in(at, -2);
  for (int d = 0; d < 2; ++d)
    for (std::uint64_t i = 0; i < sc[d]; ++i) in[sd[d] + i] = value(rank, d, i);
  std::uint64_t rat = 3;
  for (int s = 0; s < 2; ++s) {
    rc[s] = sent(s, rank);
    rd[s] = rat;
    rat += rc[s] + 3;
  }
  std::vector<std::int32_t> want(rat, -1);
  for (int s = 0; s < 2; ++s)
    for (std::uint64_t i = 0; i < rc[s]; ++i) want[rd[s] + i] = value(s, rank, i);
  CHILD_CHECK(to_device(send, in));
  CHILD_CHECK(to_device(recv, std::vector<std::int32_t>(rat, -1)));
  CHILD_CHECK(h.HcclAlltoAllV(send, sc, sd, ascend::kHcclInt32, recv, rc, rd, ascend::kHcclInt32,
                              comm, stream));
  for (auto& x : sc) x = 0;  // read by the call: later changes do not matter
  CHILD_CHECK(a.aclrtSynchronizeStream(stream));
  if (from_device(recv, rat) != want)
    return "alltoallv: rank " + std::to_string(rank) + " received other data";

  // Rank 1 expects one element fewer from rank 0 than rank 0 sends: its
  // stream reports the failed work (507000), rank 0's none.
  for (int d = 0; d < 2; ++d) sc[d] = sent(rank, d);
  if (rank == 1) rc[0] -= 1;
  CHILD_CHECK(h.HcclAlltoAllV(send, sc, sd, ascend::kHcclInt32, recv, rc, rd, ascend::kHcclInt32,
                              comm, stream));
  const int mismatch = a.aclrtSynchronizeStream(stream);
  if (mismatch != (rank == 1 ? 507000 : 0))
    return "alltoallv with a short receive: rank " + std::to_string(rank) + " synchronized with " +
           std::to_string(mismatch);

  CHILD_CHECK(h.HcclCommDestroy(comm));
  CHILD_CHECK(a.aclrtDestroyStream(stream));
  CHILD_CHECK(a.aclrtFree(send));
  CHILD_CHECK(a.aclrtFree(recv));
  std::string first;
  if (rules_broken(&first) != 0) return "rule broken: " + first;
  return "";
}

TEST(FakeHccl, TwoRanksScatterAndAlltoallvStraightThroughTheApi) {
  if (dlopen("libascendcl.so", RTLD_NOW | RTLD_NOLOAD))
    GTEST_SKIP() << "CANN is loaded in this process already: run this test on its own (ctest does)";
  int info[2], report[2][2];
  ASSERT_EQ(pipe(info), 0);
  ASSERT_EQ(pipe(report[0]), 0);
  ASSERT_EQ(pipe(report[1]), 0);
  pid_t pid[2];
  for (int r = 0; r < 2; ++r) {
    pid[r] = fork();
    ASSERT_GE(pid[r], 0);
    if (pid[r] == 0) {
      close(r == 0 ? info[0] : info[1]);
      const std::string err = two_rank_child(r, info[0], info[1]);
      close(r == 0 ? info[1] : info[0]);  // rank 1 sees the end of a rank 0 that failed
      if (!err.empty()) (void)!write(report[r][1], err.data(), err.size());
      _exit(err.empty() ? 0 : 1);
    }
  }
  close(info[0]);
  close(info[1]);
  close(report[0][1]);
  close(report[1][1]);
  // A rank that failed leaves its peer waiting in the fake's barrier: that
  // one is stopped, as are both after 60 s.
  int status[2] = {0, 0};
  bool done[2] = {false, false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto failed = [&](int r) {
    return done[r] && !(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0);
  };
  while (!done[0] || !done[1]) {
    for (int r = 0; r < 2; ++r)
      if (!done[r] && waitpid(pid[r], &status[r], WNOHANG) == pid[r]) done[r] = true;
    if (failed(0) || failed(1) || std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < 2; ++r)
        if (!done[r]) {
          kill(pid[r], SIGKILL);
          waitpid(pid[r], &status[r], 0);
          done[r] = true;
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < 2; ++r) {
    std::string err;
    char buf[256];
    for (ssize_t n; (n = read(report[r][0], buf, sizeof buf)) > 0;)
      err.append(buf, static_cast<std::size_t>(n));
    close(report[r][0]);
    EXPECT_FALSE(failed(r)) << "rank " << r << " (status " << status[r] << "): " << err;
    EXPECT_EQ(err, "") << "rank " << r;
  }
}

// ---- G9: a mismatched batch send/recv -------------------------------------

// Rank `rank` of 2 on NPU `rank`: a batch send/recv in which rank 1 expects
// one element fewer than rank 0 sends. Rank 1's stream reports it, rank 0's
// does not, and both then destroy the communicator at once. "" or what
// went wrong.
std::string mismatched_batch(int rank, int info_in, int info_out) {
  const BackendStatus status = probe_ascend();
  if (!status.available) return status.reason;
  const auto& a = ascend::api();
  if (!ascend::hccl().api) return ascend::hccl().error;
  const auto& h = *ascend::hccl().api;
  auto check = [](int e, const char* what) {
    return e == 0 ? std::string() : std::string(what) + " = " + std::to_string(e);
  };
  std::string err;
  if (!(err = check(a.aclrtSetDevice(rank), "aclrtSetDevice")).empty()) return err;
  ascend::HcclRootInfo info{};
  if (rank == 0) {
    if (!(err = check(h.HcclGetRootInfo(&info), "HcclGetRootInfo")).empty()) return err;
    if (write(info_out, &info, sizeof info) != static_cast<ssize_t>(sizeof info))
      return "root info not sent";
  } else {
    std::size_t got = 0;
    while (got < sizeof info) {
      const ssize_t r = read(info_in, info.internal + got, sizeof info - got);
      if (r <= 0) return "no root info from rank 0";
      got += static_cast<std::size_t>(r);
    }
  }
  ascend::HcclComm comm = nullptr;
  void *stream = nullptr, *buf = nullptr;
  const auto r = static_cast<std::uint32_t>(rank);
  if (!(err = check(h.HcclCommInitRootInfo(2, &info, r, &comm), "init")).empty()) return err;
  if (!(err = check(a.aclrtCreateStream(&stream), "aclrtCreateStream")).empty()) return err;
  if (!(err = check(a.aclrtMalloc(&buf, 4096, 0), "aclrtMalloc")).empty()) return err;
  char* p = static_cast<char*>(buf);
  ascend::HcclSendRecvItem items[2] = {
      {ascend::kHcclSend, p, 256, ascend::kHcclInt32, 1 - r},
      {ascend::kHcclRecv, p + 1024, rank == 1 ? 255u : 256u, ascend::kHcclInt32, 1 - r},
  };
  if (!(err = check(h.HcclBatchSendRecv(items, 2, comm, stream), "batch")).empty()) return err;
  const int sync = a.aclrtSynchronizeStream(stream);
  if (sync != (rank == 1 ? kInjected : 0))
    return "rank " + std::to_string(rank) + " synchronized with " + std::to_string(sync);
  if (!(err = check(h.HcclCommDestroy(comm), "HcclCommDestroy")).empty()) return err;
  if (!(err = check(a.aclrtDestroyStream(stream), "aclrtDestroyStream")).empty()) return err;
  if (!(err = check(a.aclrtFree(buf), "aclrtFree")).empty()) return err;
  std::string first;
  if (rules_broken(&first) != 0) return "rule broken: " + first;
  return "";
}

TEST(FakeHccl, AMismatchedBatchSendRecvLeavesNoRankWaiting) {
  if (dlopen("libascendcl.so", RTLD_NOW | RTLD_NOLOAD))
    GTEST_SKIP() << "CANN is loaded in this process already: run this test on its own (ctest does)";
  int info[2], report[2][2];
  ASSERT_EQ(pipe(info), 0);
  ASSERT_EQ(pipe(report[0]), 0);
  ASSERT_EQ(pipe(report[1]), 0);
  pid_t pid[2];
  for (int r = 0; r < 2; ++r) {
    pid[r] = fork();
    ASSERT_GE(pid[r], 0);
    if (pid[r] == 0) {
      close(r == 0 ? info[0] : info[1]);
      const std::string err = mismatched_batch(r, info[0], info[1]);
      close(r == 0 ? info[1] : info[0]);
      if (!err.empty()) (void)!write(report[r][1], err.data(), err.size());
      _exit(err.empty() ? 0 : 1);
    }
  }
  close(info[0]);
  close(info[1]);
  close(report[0][1]);
  close(report[1][1]);
  // Both must be done well before the fake's 120 s barrier deadline.
  int status[2] = {0, 0};
  bool done[2] = {false, false}, killed = false;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!done[0] || !done[1]) {
    for (int r = 0; r < 2; ++r)
      if (!done[r] && waitpid(pid[r], &status[r], WNOHANG) == pid[r]) done[r] = true;
    if (Clock::now() > deadline) {
      for (int r = 0; r < 2; ++r)
        if (!done[r]) {
          kill(pid[r], SIGKILL);
          waitpid(pid[r], &status[r], 0);
          done[r] = killed = true;
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(killed) << "a rank was still waiting after 30 s";
  for (int r = 0; r < 2; ++r) {
    std::string err;
    char buf[256];
    for (ssize_t n; (n = read(report[r][0], buf, sizeof buf)) > 0;)
      err.append(buf, static_cast<std::size_t>(n));
    close(report[r][0]);
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " (status " << status[r] << "): " << err;
  }
}

}  // namespace
}  // namespace xb
