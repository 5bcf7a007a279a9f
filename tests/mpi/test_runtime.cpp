#include <gtest/gtest.h>

#include <cstring>

#include "backend/common/placement.hpp"
#include "core/error.hpp"
#include "core/record.hpp"
#include "mpi_env.hpp"

namespace xb {

TEST(Runtime, RanksAndCollectives) {
  Runtime& rt = test_runtime();
  ASSERT_GE(rt.size(), 2) << "run under mpiexec -n 2 or more";
  EXPECT_TRUE(rt.single_host());
  EXPECT_EQ(rt.local_rank(), rt.rank());  // one node: node order is world order
  const auto all = rt.allgather("rank" + std::to_string(rt.rank()));
  ASSERT_EQ(static_cast<int>(all.size()), rt.size());
  for (int r = 0; r < rt.size(); ++r)
    EXPECT_EQ(all[static_cast<std::size_t>(r)], "rank" + std::to_string(r));
  EXPECT_DOUBLE_EQ(rt.max(rt.rank()), rt.size() - 1);
  EXPECT_DOUBLE_EQ(rt.sum(1.0), rt.size());
  std::int64_t v = rt.rank() == 1 ? 42 : 0;
  rt.broadcast(std::as_writable_bytes(std::span(&v, 1)), 1);
  EXPECT_EQ(v, 42);
}

TEST(Runtime, AgreeSpreadsTheFirstError) {
  Runtime& rt = test_runtime();
  EXPECT_EQ(rt.agree(""), "");
  const std::string e = rt.agree(rt.rank() == rt.size() - 1 ? "late rank failed" : "");
  EXPECT_EQ(e, "late rank failed");  // on every rank
}

TEST(Runtime, RecordsCrossRanksIntact) {
  Runtime& rt = test_runtime();
  Record r;
  r.kase = "get";
  r.method = "core";
  r.src = rt.rank();
  r.bytes = 1ULL << 40;
  r.verified = false;
  r.status = Status::failed;
  r.reason = "x";
  const std::vector<double> us{1.5, 2.5};
  r.set_samples(us);
  r.extra = {{"cycles", 3.25}, {"n", std::int64_t{-7}}, {"t", std::string("shm")}, {"b", true}};
  const auto wires = rt.allgather(records_to_wire({r}));
  const auto back = records_from_wire(wires[1]);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].src, 1);
  EXPECT_EQ(back[0].bytes, 1ULL << 40);
  EXPECT_EQ(back[0].status, Status::failed);
  EXPECT_EQ(back[0].verified, std::optional<bool>(false));
  EXPECT_DOUBLE_EQ(back[0].time_us.median, 2.0);
  ASSERT_EQ(back[0].extra.size(), 4u);
  EXPECT_EQ(std::get<double>(back[0].extra[0].second), 3.25);
  EXPECT_EQ(std::get<std::int64_t>(back[0].extra[1].second), -7);
  EXPECT_EQ(std::get<std::string>(back[0].extra[2].second), "shm");
  EXPECT_THROW(records_from_wire("not cbor"), RuntimeError);
}

class WindowTest : public ::testing::TestWithParam<Transport> {};

TEST_P(WindowTest, GetPutAndDirectAccess) {
  Runtime& rt = test_runtime();
  auto w = rt.allocate_window(4096, GetParam());
  std::memset(w->local(), 'a' + rt.rank(), 4096);
  w->sync();
  rt.barrier();
  w->sync();
  const int peer = (rt.rank() + 1) % rt.size();
  std::byte buf[16];
  w->get(buf, peer, 100, 16);
  EXPECT_EQ(static_cast<char>(buf[0]), 'a' + peer);
  w->rget(buf, peer, 200, 16)->wait();
  EXPECT_EQ(static_cast<char>(buf[15]), 'a' + peer);
  if (GetParam() == Transport::shm) {
    ASSERT_NE(w->direct(peer), nullptr);
    EXPECT_EQ(static_cast<char>(w->direct(peer)[5]), 'a' + peer);
  } else {
    EXPECT_EQ(w->direct(peer), nullptr);
  }
  rt.barrier();
  const std::byte mark{static_cast<unsigned char>('A' + rt.rank())};
  std::byte one[4] = {mark, mark, mark, mark};
  w->put(one, peer, 0, 4);  // everyone writes the front of the next rank
  w->rput(one, peer, 8, 4)->wait();
  w->sync();
  rt.barrier();
  w->sync();
  const int prev = (rt.rank() + rt.size() - 1) % rt.size();
  EXPECT_EQ(static_cast<char>(w->local()[0]), 'A' + prev);
  EXPECT_EQ(static_cast<char>(w->local()[11]), 'A' + prev);
  rt.barrier();
}

INSTANTIATE_TEST_SUITE_P(Transports, WindowTest, ::testing::Values(Transport::shm, Transport::rma),
                         [](const auto& p) { return std::string(to_string(p.param)); });

// NCCL/HCCL placement on a fake device count: every rank sees the same verdict.
TEST(Placement, OneDevicePerRankOnTheRanksOfThisHost) {
  Runtime& rt = test_runtime();
  ASSERT_GE(rt.size(), 2);
  const Support one = one_device_per_rank(rt, 1, "NCCL", "GPU");
  EXPECT_FALSE(one.ok);
  EXPECT_NE(one.reason.find("NCCL needs one GPU per rank: ranks 0 and 1 on host "),
            std::string::npos)
      << one.reason;
  EXPECT_NE(one.reason.find("share GPU 0; use fewer ranks or --backend host"), std::string::npos);
  EXPECT_TRUE(one_device_per_rank(rt, rt.size(), "NCCL", "GPU").ok);
  EXPECT_FALSE(one_device_per_rank(rt, 0, "HCCL", "NPU").ok);
  // One device each (per-rank visibility): index 0 everywhere, distinct devices.
  EXPECT_TRUE(one_device_per_rank(rt, 1, "NCCL", "GPU", [&](int) {
                return "gpu-of-rank-" + std::to_string(rt.rank());
              }).ok);
}

}  // namespace xb
