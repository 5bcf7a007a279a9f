// The fake HCCL on two ranks, one forked process each, straight through the
// C API (tests/fake_cann/fake_hccl.cpp lists its rules): a batch send/recv
// whose receive does not match its peer's send fails on that rank and
// leaves no rank waiting. (Each test runs in a process of its own under
// ctest; none runs where CANN is loaded already.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "fake_test.hpp"

namespace xb {
namespace {

using Clock = std::chrono::steady_clock;

// ---- G9: two ranks, one process each ---------------------------------------------

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
  shm_unlink(("/xb_fake_hccl_" + std::to_string(pid[0]) + "_0").c_str());  // left by a failure
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
