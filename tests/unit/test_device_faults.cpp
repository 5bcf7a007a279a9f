// What a sick device looks like to the host side, without one (the CUDA
// review's N1, N2, N7): a wait that never ends meets its deadline, the NCCL
// that runs decides its features, and a failing GPU is not "no GPU".
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "backend/common/device_common.hpp"
#include "backend/common/device_wait.hpp"
#include "backend/common/nccl_rules.hpp"
#include "core/error.hpp"
#include "core/test_seam.hpp"

namespace xb {
namespace {

TEST(DeviceWait, TheTimeoutComesFromTheEnvironmentAndIsChecked) {
  ::unsetenv("XFERBENCH_DEVICE_TIMEOUT");
  EXPECT_EQ(device_timeout_from_env(), 120);
  ::setenv("XFERBENCH_DEVICE_TIMEOUT", "2.5", 1);
  EXPECT_EQ(device_timeout_from_env(), 2.5);
  for (const char* bad : {"0", "0.5", "-1", "abc", "nan", "1e9", "5s"}) {
    ::setenv("XFERBENCH_DEVICE_TIMEOUT", bad, 1);
    EXPECT_THROW(device_timeout_from_env(), UsageError) << bad;
  }
  ::unsetenv("XFERBENCH_DEVICE_TIMEOUT");
}

TEST(DeviceWait, AWaitThatEndsReturnsAndOneThatDoesNotMeetsItsDeadline) {
  ASSERT_EQ(device_hung(), "");  // this test marks the process: it runs once, last of its kind
  int polls = 0;
  wait_with_deadline([&] { return ++polls >= 3; }, 5, "a test wait");
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(device_hung(), "");

  // A stalled query (a stream that never finishes): the deadline ends it,
  // the process is marked, then on_timeout runs (NCCL aborts its
  // communicator there, and that may block on the wedged device).
  bool aborted = false, marked_first = false;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    wait_with_deadline([] { return false; }, 0.2, "GPU7's work",
                       [&] {
                         aborted = true;
                         marked_first = !device_hung().empty();
                       });
    FAIL() << "a wait that never ends must throw";
  } catch (const DeviceHung& e) {
    EXPECT_NE(std::string(e.what()).find("GPU7's work did not finish within 0.2 s "
                                         "(XFERBENCH_DEVICE_TIMEOUT)"),
              std::string::npos)
        << e.what();
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 2.0);
  EXPECT_TRUE(aborted);
  EXPECT_TRUE(marked_first);
  // The process is marked: later waits and blocking calls fail at once,
  // naming the first miss, and a DeviceHung is a RuntimeError (a failed record).
  EXPECT_NE(device_hung().find("GPU7's work"), std::string::npos);
  try {
    wait_with_deadline([] { return true; }, 5, "GPU0's stream");
    FAIL() << "a marked process must not wait again";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU0's stream not started"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("GPU7's work"), std::string::npos);
  }
  EXPECT_THROW(check_device_answers("a read"), DeviceHung);
}

TEST(NcclRules, OneRankHasNoFp8Average) {
  for (CollOp op : {CollOp::allreduce, CollOp::reduce, CollOp::reducescatter}) {
    EXPECT_FALSE(nccl_supports_on(1, op, DType::fp8e4m3, RedOp::avg).ok) << to_string(op);
    EXPECT_FALSE(nccl_supports_on(1, op, DType::fp8e5m2, RedOp::avg).ok) << to_string(op);
    EXPECT_TRUE(nccl_supports_on(2, op, DType::fp8e4m3, RedOp::avg).ok) << to_string(op);
    EXPECT_TRUE(nccl_supports_on(1, op, DType::fp8e4m3, RedOp::sum).ok) << to_string(op);
    EXPECT_TRUE(nccl_supports_on(1, op, DType::bf16, RedOp::avg).ok) << to_string(op);
  }
  EXPECT_TRUE(nccl_supports_on(1, CollOp::allgather, DType::fp8e4m3, RedOp::avg).ok);
}

TEST(NcclRules, TheLibraryThatRunsDecidesNotTheHeaders) {
  EXPECT_EQ(nccl_version_name(22803), "2.28.3");
  EXPECT_EQ(nccl_version_name(2708), "2.7.8");
  EXPECT_FALSE(nccl_has_gather_scatter(22707));
  EXPECT_TRUE(nccl_has_gather_scatter(22803));
  const auto ok = [](int v, int major, CollOp op, DType t) {
    return nccl_supports(v, major, op, t).ok;
  };
  for (DType t : {DType::float32, DType::bf16, DType::int8}) {
    EXPECT_TRUE(ok(21900, 8, CollOp::allreduce, t));
    EXPECT_TRUE(ok(22803, 8, CollOp::gather, t));
  }
  // No fp8 before 2.24, on any GPU.
  EXPECT_FALSE(ok(22304, 9, CollOp::allgather, DType::fp8e4m3));
  EXPECT_NE(nccl_supports(22304, 9, CollOp::sendrecv, DType::fp8e5m2).reason.find("2.23.4"),
            std::string::npos);
  // 2.24-2.28.2 on sm80: every fp8 collective of NCCL's own is refused;
  // grouped sends and receives are not.
  for (CollOp op : {CollOp::allreduce, CollOp::allgather, CollOp::broadcast, CollOp::reduce,
                    CollOp::reducescatter})
    EXPECT_FALSE(ok(22603, 8, op, DType::fp8e4m3)) << to_string(op);
  for (CollOp op :
       {CollOp::alltoall, CollOp::alltoallv, CollOp::sendrecv, CollOp::gather, CollOp::scatter})
    EXPECT_TRUE(ok(22603, 8, op, DType::fp8e4m3)) << to_string(op);
  // 2.28.3 on sm80: fp8 moves everywhere, reductions stay sm90's.
  for (CollOp op :
       {CollOp::allgather, CollOp::broadcast, CollOp::gather, CollOp::scatter, CollOp::alltoall})
    EXPECT_TRUE(ok(22803, 8, op, DType::fp8e5m2)) << to_string(op);
  for (CollOp op : {CollOp::allreduce, CollOp::reduce, CollOp::reducescatter})
    EXPECT_FALSE(ok(22803, 8, op, DType::fp8e5m2)) << to_string(op);
  // sm90 and newer: all of it from 2.24.
  for (CollOp op : {CollOp::allreduce, CollOp::allgather, CollOp::reducescatter})
    EXPECT_TRUE(ok(22403, 9, op, DType::fp8e4m3)) << to_string(op);
}

TEST(GpuProbe, AFailingGpuTheDriverListsIsBrokenNotAbsent) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("xb_gpus_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // No driver entries, an absence code: no GPU (this machine's case).
  BackendStatus s = failed_probe("cuda", "GPU", "no CUDA-capable device", true, dir.string());
  EXPECT_FALSE(s.available);
  EXPECT_FALSE(s.broken);
  EXPECT_EQ(s.reason, "no usable GPU: no CUDA-capable device");
  // Any other error: broken, even where the driver lists nothing.
  s = failed_probe("cuda", "GPU", "system not yet initialized", false, dir.string());
  EXPECT_TRUE(s.broken);
  // The driver lists two GPUs: even an "absence" code is a broken GPU.
  std::filesystem::create_directories(dir / "0000:17:00.0");
  std::filesystem::create_directories(dir / "0000:65:00.0");
  s = failed_probe("cuda", "GPU", "CUDA driver version is insufficient", true, dir.string());
  EXPECT_TRUE(s.broken);
  EXPECT_NE(s.reason.find("2 GPUs present"), std::string::npos) << s.reason;
  std::filesystem::remove_all(dir);
  // A directory that does not exist lists nothing.
  EXPECT_FALSE(failed_probe("cuda", "GPU", "x", true, (dir / "none").string()).broken);
}

TEST(NpuProbe, AFailingRuntimeWithNpuDeviceNodesIsBroken) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("xb_dev_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "davinci_manager");  // the manager is no NPU
  std::filesystem::create_directories(dir / "hisi_hdc");
  BackendStatus s =
      failed_probe("ascend", "NPU", "aclInit failed: error 507033", true, dir.string(), "davinci");
  EXPECT_FALSE(s.broken);
  EXPECT_EQ(s.reason, "no usable NPU: aclInit failed: error 507033");
  std::filesystem::create_directories(dir / "davinci0");
  std::filesystem::create_directories(dir / "davinci1");
  s = failed_probe("ascend", "NPU", "aclInit failed: error 507033", true, dir.string(), "davinci");
  EXPECT_TRUE(s.broken);
  EXPECT_NE(s.reason.find("2 NPUs present"), std::string::npos) << s.reason;
  std::filesystem::remove_all(dir);
}

TEST(TestSeam, StallsOnlyWhereNamed) {
  ::unsetenv("XFERBENCH_TEST_STALL");
  EXPECT_FALSE(test_stall("copy"));
  ::setenv("XFERBENCH_TEST_STALL", "census,nccl", 1);
  EXPECT_TRUE(test_stall("census"));
  EXPECT_TRUE(test_stall("nccl"));
  EXPECT_FALSE(test_stall("copy"));
  EXPECT_FALSE(test_stall("cens"));
  ::unsetenv("XFERBENCH_TEST_STALL");
}

}  // namespace
}  // namespace xb
