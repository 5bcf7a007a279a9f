// The collective table, alltoallv's skew and the slowest rank: pure parts.
#include <gtest/gtest.h>

#include <numeric>

#include "coll/communicator.hpp"
#include "coll/model.hpp"
#include "coll/skew.hpp"
#include "coll/verify.hpp"
#include "core/error.hpp"
#include "family/coll/coll_bench.hpp"
#include "family/coll/coll_ranks.hpp"

namespace xb {
namespace {

std::size_t sum(const std::vector<std::size_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::size_t{0});
}

}  // namespace

TEST(CollTable, EveryRowIsNamedOnceAndParses) {
  std::size_t rows = 0;
  for (const CollSpec& s : collectives()) {
    ++rows;
    EXPECT_EQ(&spec(s.op), &s);
    EXPECT_EQ(parse_collectives(s.name), std::vector<CollOp>{s.op});
    EXPECT_NE(collective_names().find(s.name), std::string::npos);
  }
  EXPECT_EQ(parse_collectives("all").size(), rows);
  EXPECT_EQ(parse_collectives("gather,scatter"),
            (std::vector<CollOp>{CollOp::gather, CollOp::scatter}));
  EXPECT_EQ(parse_collectives("gather,all").size(), rows);  // each once
  EXPECT_THROW(parse_collectives("gather,,scatter"), UsageError);
  EXPECT_THROW(parse_collectives("allreduce,allreduse"), UsageError);
}

TEST(CollTable, GatherAndScatterByteModels) {
  auto k = coll_counts(CollOp::gather, 4096, DType::float32, 4);  // size = gathered result
  EXPECT_EQ(k.send, 256u);
  EXPECT_EQ(k.recv, 1024u);
  EXPECT_EQ(k.count, 256u);
  k = coll_counts(CollOp::scatter, 4096, DType::float32, 4);  // size = the root's input
  EXPECT_EQ(k.send, 1024u);
  EXPECT_EQ(k.recv, 256u);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::alltoallv, 4), 0.75);
  EXPECT_THROW(coll_counts(CollOp::gather, 4096, DType::float32, 3), UsageError);
}

TEST(CollTable, GatherAndScatterExpectations) {
  const CollCase g{CollOp::gather, DType::int32, RedOp::sum, 3, 1, {}};
  const CollCounts k = coll_counts(g, 3 * 4 * 5);  // 5 elements per rank
  EXPECT_TRUE(receives(g, 1));
  EXPECT_FALSE(receives(g, 0));
  for (std::size_t i = 0; i < 15; ++i)
    EXPECT_EQ(expected_value(g, 1, i, k), input_value(g, static_cast<int>(i / 5), i % 5));
  const CollCase s{CollOp::scatter, DType::int32, RedOp::sum, 3, 2, {}};
  const CollCounts ks = coll_counts(s, 3 * 4 * 5);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(receives(s, r));
    for (std::size_t i = 0; i < 5; ++i)
      EXPECT_EQ(expected_value(s, r, i, ks),
                input_value(s, 2, static_cast<std::size_t>(r) * 5 + i));
  }
}

// The byte model of docs/commands/coll.md: size = each rank's send total; per-pair counts
// apportion it over the shares, every row sums to it exactly.
TEST(CollSkew, ByteModelOfAlltoallv) {
  const CollCase c{CollOp::alltoallv, DType::float32, RedOp::sum, 3, 0, parse_skew("hot:1:0.5")};
  const CollCounts k = coll_counts(c, 4096);  // 1024 floats from each rank
  ASSERT_EQ(k.pairs.size(), 9u);
  EXPECT_EQ(k.send, 1024u);
  EXPECT_EQ(k.count, 1024u);
  const std::vector<double> share = skew_shares(c.skew, 3);
  int hot = -1;
  for (int d = 0; d < 3; ++d)
    if (share[static_cast<std::size_t>(d)] == 0.5) hot = d;
  ASSERT_GE(hot, 0) << "one destination gets half";
  std::size_t recv_max = 0;
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(sum(k.send_counts(r)), 1024u);
    EXPECT_EQ(k.send_counts(r)[static_cast<std::size_t>(hot)], 512u);
    for (int d = 0; d < 3; ++d)
      if (d != hot) {
        EXPECT_EQ(k.send_counts(r)[static_cast<std::size_t>(d)], 256u);
      }
    recv_max = std::max(recv_max, k.recv_of(r));
  }
  EXPECT_EQ(k.recv_of(hot), 3u * 512u);  // the hot rank receives half of everything
  EXPECT_EQ(k.recv, recv_max);
  EXPECT_EQ(k.send_displs(0), (std::vector<std::size_t>{0, k.pairs[0], k.pairs[0] + k.pairs[1]}));
}

TEST(CollSkew, ZipfSharesFallWithPopularityAndRowsStayExact) {
  const Skew z = parse_skew("zipf:1.2");
  const std::vector<double> share = skew_shares(z, 4);
  std::vector<double> sorted = share;
  std::sort(sorted.rbegin(), sorted.rend());
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(sorted[static_cast<std::size_t>(k)] / sorted[0], 1.0 / std::pow(k + 1.0, 1.2),
                1e-12);
  for (std::size_t per : {0u, 1u, 7u, 1000u, 1048576u}) {
    const auto counts = pair_counts(z, 4, per);
    for (std::size_t s = 0; s < 4; ++s)
      EXPECT_EQ(
          std::accumulate(counts.begin() + static_cast<std::ptrdiff_t>(4 * s),
                          counts.begin() + static_cast<std::ptrdiff_t>(4 * s + 4), std::size_t{0}),
          per);
  }
  EXPECT_EQ(pair_counts(z, 4, 4096), pair_counts(z, 4, 4096));  // a pure function
  const auto u = pair_counts(parse_skew("uniform"), 4, 4096);
  for (std::size_t x : u) EXPECT_EQ(x, 1024u);
}

TEST(CollSkew, ExpectedBlocksFollowTheCounts) {
  const CollCase c{CollOp::alltoallv, DType::int32, RedOp::sum, 3, 0, parse_skew("zipf:2")};
  const CollCounts k = coll_counts(c, 4 * 30);
  for (int r = 0; r < 3; ++r) {
    std::size_t at = 0;
    for (int s = 0; s < 3; ++s) {
      const std::size_t displ = k.send_displs(s)[static_cast<std::size_t>(r)];
      for (std::size_t j = 0; j < k.send_counts(s)[static_cast<std::size_t>(r)]; ++j, ++at)
        EXPECT_EQ(expected_value(c, r, at, k), input_value(c, s, displ + j));
    }
    EXPECT_EQ(at, k.recv_of(r));
  }
}

TEST(CollSkew, BadSkewsAreUsageErrors) {
  for (const char* bad : {"zipf:-1", "zipf:0", "zipf:", "zipf:x", "hot:0:0.5", "hot:1:0",
                          "hot:1:1.5", "hot:1.5:0.5", "hot:1", "lognormal", ""})
    EXPECT_THROW(parse_skew(bad), UsageError) << bad;
  EXPECT_THROW(check_skew(parse_skew("hot:9:0.5"), 3), UsageError);
  EXPECT_THROW(check_skew(parse_skew("hot:3:0.5"), 3), UsageError);
  EXPECT_NO_THROW(check_skew(parse_skew("hot:2:0.5"), 3));
  EXPECT_EQ(to_string(parse_skew("zipf:1.2")), "zipf:1.2");
  EXPECT_EQ(to_string(parse_skew("hot:1:0.5")), "hot:1:0.5");
}

// The rank that arrives late waits least inside the call: it is the slowest.
TEST(CollRanks, TheLateArrivalIsTheSlowest) {
  RankTimes t;
  const int n = 4, iters = 8;
  for (int r = 0; r < n; ++r) {
    t.iter.emplace_back(iters, 2050.0);  // coupled: every rank's iteration is the same
    t.in_call.emplace_back(iters, r == 2 ? 50.0 : 2050.0);
  }
  const Straggler s = find_straggler(t);
  EXPECT_EQ(s.rank, 2);
  EXPECT_NEAR(s.spread, 2050.0 / 50.0, 1e-9);
  EXPECT_DOUBLE_EQ(s.share, 1.0);
  EXPECT_TRUE(is_straggler(s.spread, s.share, iters));
}

TEST(CollRanks, DeviceTimedOrEvenRanksNameNoOne) {
  RankTimes t;
  for (int r = 0; r < 3; ++r) {
    t.iter.push_back({100, 101, 99, 100, 102, 100});
    t.in_call.push_back(t.iter.back());  // a device stream: no arrival split
  }
  t.iter[1][3] = t.in_call[1][3] = 400;  // one noisy iteration
  const Straggler s = find_straggler(t);
  EXPECT_FALSE(is_straggler(s.spread, s.share, 6)) << s.spread << " " << s.share;
  EXPECT_FALSE(is_straggler(3.0, 1.0, 4));   // too few iterations
  EXPECT_FALSE(is_straggler(3.0, 0.4, 20));  // not the slowest often enough
  EXPECT_EQ(find_straggler(RankTimes{{{1, 2}}, {{1, 2}}, {}}).rank, -1);  // one rank
}

// Review N6: a device stream's times (in_call == iter) carry no arrival,
// so no rank is named: before, every tie fell to rank 0 with share 1.0,
// and every NCCL record said "rank 0 was the slowest in every iteration".
TEST(CollRanks, DeviceTimedCallsNameNoRank) {
  RankTimes t;
  for (int r = 0; r < 4; ++r) {
    t.iter.push_back({100.0 + r, 130, 90, 100, 101, 99, 100, 100});
    t.in_call.push_back(t.iter.back());
  }
  const Straggler s = find_straggler(t);
  EXPECT_EQ(s.rank, -1);
  EXPECT_EQ(s.share, 0.0);
  EXPECT_EQ(s.spread, 0.0);
  EXPECT_EQ(s.own_us.size(), 4U);  // still there for --samples
  // Host-timed ranks that tie in every iteration: no one either.
  RankTimes even;
  for (int r = 0; r < 3; ++r) {
    even.iter.emplace_back(6, 200.0);
    even.in_call.emplace_back(6, 150.0);
  }
  EXPECT_EQ(find_straggler(even).rank, -1);
}

// Finding 5 of the first CUDA review: nccl-tests moves each iteration to the
// next slot of its largest-size buffers; so does the harness, on every backend.
TEST(CollRotation, IterationsStepThroughTheLargestBuffer) {
  const Rotation r = rotation(4096, 1 << 20);  // a 4 KiB call, 1 MiB buffers
  EXPECT_EQ(r.steps, 256U);
  EXPECT_EQ(r.at(0), 0U);
  EXPECT_EQ(r.at(1), 4096U);
  EXPECT_EQ(r.at(255), 255U * 4096);
  EXPECT_EQ(r.at(256), 0U);                           // wraps
  EXPECT_EQ(rotation(1 << 20, 1 << 20).at(7), 0U);    // the largest size stays put
  EXPECT_EQ(rotation(600 << 10, 1 << 20).at(1), 0U);  // no room for a second slot
  EXPECT_EQ(rotation(0, 1 << 20).at(3), 0U);
  const Rotation odd = rotation(1000, 10000);  // 256-byte steps, never past the end
  EXPECT_EQ(odd.step, 1024U);
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(odd.at(i) % 256, 0U);
    EXPECT_LE(odd.at(i) + 1000, 10000U);
  }
}

TEST(CollRanks, Aggregation) {
  const std::vector<std::vector<double>> it{{1, 2, 3}, {4, 5, 6}};
  EXPECT_DOUBLE_EQ(aggregate(it, TimeAgg::max).median, 5);
  EXPECT_DOUBLE_EQ(aggregate(it, TimeAgg::min).median, 2);
  EXPECT_DOUBLE_EQ(aggregate(it, TimeAgg::avg).median, 3.5);
  EXPECT_DOUBLE_EQ(aggregate(it, TimeAgg::rank0).median, 2);
  EXPECT_DOUBLE_EQ(aggregate(it, TimeAgg::rank0).max, 3);
}

// A library without a collective: the base class says so, by name.
TEST(CollTable, MissingCallsAreNotSupported) {
  struct Bare final : Communicator {
    std::string name() const override { return "bare"; }
    int rank() const override { return 0; }
    int size() const override { return 1; }
    MemKind buffer_kind() const override { return MemKind::pageable; }
    int device() const override { return -1; }
    std::size_t inplace_result_offset(CollOp, std::size_t) const override { return 0; }
    void allreduce(const void*, void*, std::size_t, DType, RedOp) override {}
    void allgather(const void*, void*, std::size_t, DType) override {}
    void reducescatter(const void*, void*, std::size_t, DType, RedOp) override {}
    void broadcast(const void*, void*, std::size_t, DType, int) override {}
    void reduce(const void*, void*, std::size_t, DType, RedOp, int) override {}
    void alltoall(const void*, void*, std::size_t, DType) override {}
    void sendrecv(const void*, void*, std::size_t, DType) override {}
    void synchronize() override {}
  } bare;
  try {
    bare.gather(nullptr, nullptr, 0, DType::int8, 0);
    FAIL();
  } catch (const NotSupported& e) {
    EXPECT_STREQ(e.what(), "bare has no gather");
  }
  EXPECT_THROW(bare.scatter(nullptr, nullptr, 0, DType::int8, 0), NotSupported);
  EXPECT_THROW(bare.alltoallv(nullptr, {}, {}, nullptr, {}, {}, DType::int8), NotSupported);
}

}  // namespace xb
