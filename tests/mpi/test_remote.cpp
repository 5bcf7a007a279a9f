#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "backend/select/select.hpp"
#include "core/corruption.hpp"
#include "core/error.hpp"
#include "family/remote/remote_bench.hpp"
#include "mpi_env.hpp"
#include "report/report.hpp"

namespace xb {
namespace {

RemoteConfig small(Transport t) {
  RemoteConfig c;
  c.ops = {RemoteOp::get, RemoteOp::put};
  c.sizes = {4096, 65536, 100003};  // one not a multiple of the tile
  c.iters = 3;
  c.warmup = 1;
  c.transport = t;
  c.copier.tile = 4096;
  return c;
}

}  // namespace

class RemoteTest : public ::testing::TestWithParam<Transport> {};

TEST_P(RemoteTest, GetAndPutBothMethodsVerifyOnEveryRank) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  const RemoteConfig cfg = small(GetParam());
  validate_remote(rt, cfg);
  const RemoteResult res = run_remote(rt, *backend, cfg);
  ASSERT_EQ(res.records.size(), 2u * 2u * 3u);  // ops x methods x sizes, on every rank
  for (const auto& r : res.records) {
    EXPECT_EQ(r.status, Status::ok)
        << r.kase << " " << r.method << " " << r.bytes << " " << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true));
    EXPECT_EQ(r.iters, 3);
    EXPECT_GT(r.gbps_median, 0.0);
    if (r.kase == "get") {
      EXPECT_EQ(r.src, 1);
      EXPECT_EQ(r.dst, 0);
    } else {
      EXPECT_EQ(r.src, 0);
      EXPECT_EQ(r.dst, 1);
    }
  }
}

TEST_P(RemoteTest, LastRankReadsFromRankZero) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  RemoteConfig cfg = small(GetParam());
  cfg.root = rt.size() - 1;
  cfg.peer = 0;
  validate_remote(rt, cfg);
  const RemoteResult res = run_remote(rt, *backend, cfg);
  ASSERT_FALSE(res.records.empty());
  for (const auto& r : res.records) EXPECT_EQ(r.verified, std::optional<bool>(true)) << r.reason;
}

TEST_P(RemoteTest, ACorruptedWindowIsDetected) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  RemoteConfig cfg = small(GetParam());
  cfg.sizes = {65536};
  cfg.before_verify = [](std::span<std::byte> got) { got[777] ^= std::byte{0x40}; };
  const RemoteResult res = run_remote(rt, *backend, cfg);
  ASSERT_EQ(res.records.size(), 4u);
  for (const auto& r : res.records) {
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.verified, std::optional<bool>(false));
    EXPECT_NE(r.reason.find("offset 777"), std::string::npos) << r.reason;
  }
}

// --check every: each timed transfer checked; a corruption of every third
// is counted as such, with its first place and the rate's interval.
TEST_P(RemoteTest, CheckEveryCountsTheWrongTransfers) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  RemoteConfig cfg = small(GetParam());
  cfg.sizes = {65536};
  cfg.iters = 30;
  cfg.check_every = true;
  int seen = 0;
  cfg.before_verify = [&seen](std::span<std::byte> got) {
    if (seen++ % 3 == 1) got[4097] ^= std::byte{0x02};
  };
  const RemoteResult res = run_remote(rt, *backend, cfg);
  ASSERT_EQ(res.records.size(), 4u);
  for (const auto& r : res.records) {
    SCOPED_TRACE(r.kase + " " + r.method);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.iters, 30);
    EXPECT_EQ(r.get(check_field::checked_iters), std::optional<std::int64_t>(30));
    EXPECT_EQ(r.get(check_field::wrong_iters), std::optional<std::int64_t>(10));
    EXPECT_NE(r.get_or(check_field::first_bad, std::string()).find("iteration 1, rank "),
              std::string::npos);
    EXPECT_NE(r.get_or(check_field::first_bad, std::string()).find("byte 4097"), std::string::npos);
    EXPECT_LE(r.get_or(check_field::wrong_rate_lo, 1.0), 1.0 / 3);
    EXPECT_GE(r.get_or(check_field::wrong_rate_hi, 0.0), 1.0 / 3);
  }
}

TEST_P(RemoteTest, AWindowMovesEverySlotAndCountsItsMessages) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  RemoteConfig cfg = small(GetParam());
  cfg.sizes = {8, 4096, 100003};
  cfg.window = 5;
  validate_remote(rt, cfg);
  const RemoteResult res = run_remote(rt, *backend, cfg);
  ASSERT_EQ(res.records.size(), 2u * 2u * 3u);
  for (const auto& r : res.records) {
    SCOPED_TRACE(r.kase + " " + r.method + " " + std::to_string(r.bytes));
    EXPECT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true));  // all five slots, both sides
    EXPECT_EQ(r.bytes % 5, 0u);
    EXPECT_EQ(r.get(remote_field::window), std::optional<std::int64_t>(5));
    const double rate = r.get_or(remote_field::msg_rate, 0.0);
    EXPECT_GT(rate, 0.0);
    EXPECT_NEAR(rate, 5 * 1e6 / r.time_us.median, 1e-9 * rate);
    EXPECT_NEAR(r.gbps_median, static_cast<double>(r.bytes) / (r.time_us.median * 1e3),
                1e-9 * r.gbps_median);
  }
  // Without --window: no window fields.
  cfg.window = 0;
  cfg.sizes = {4096};
  for (const auto& r : run_remote(rt, *backend, cfg).records) {
    EXPECT_EQ(r.bytes, 4096u);
    EXPECT_FALSE(r.get(remote_field::window));
    EXPECT_FALSE(r.get(remote_field::msg_rate));
  }
}

TEST_P(RemoteTest, AWrongByteInTheLastSlotOfAWindowIsDetected) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  RemoteConfig cfg = small(GetParam());
  cfg.sizes = {4096};
  cfg.window = 4;
  cfg.before_verify = [](std::span<std::byte> got) {
    ASSERT_EQ(got.size(), 4u * 4096u);
    got[3 * 4096 + 5] ^= std::byte{0x40};
  };
  const RemoteResult res = run_remote(rt, *backend, cfg);
  ASSERT_EQ(res.records.size(), 4u);
  for (const auto& r : res.records) {
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_NE(r.reason.find("offset 12293"), std::string::npos) << r.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, RemoteTest, ::testing::Values(Transport::shm, Transport::rma),
                         [](const auto& p) { return std::string(to_string(p.param)); });

TEST(Remote, JsonRecordsCarryTheFields) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  RemoteConfig cfg = small(Transport::shm);
  cfg.ops = {RemoteOp::get};
  RemoteResult res = run_remote(rt, *backend, cfg);
  Report rep{"remote", {}, {}, std::move(res.records), std::move(res.summary)};
  const auto doc = nlohmann::json::parse(format_json(rep));
  for (const auto& r : doc["results"]) {
    for (const char* k : {"method", "bytes", "gbps", "time_us", "cycles", "verified", "transport"})
      EXPECT_TRUE(r.contains(k)) << k;
    EXPECT_GT(r["cycles"].get<double>(), 0.0);
  }
  EXPECT_EQ(doc["summary"]["cycle_counter"], "TSC");
  EXPECT_GT(doc["summary"]["cycle_hz"].get<double>(), 1e6);
  EXPECT_TRUE(doc["summary"].contains("crossover_get"));
}

TEST(Remote, BadOptionsFailOnEveryRank) {
  Runtime& rt = test_runtime();
  RemoteConfig cfg = small(Transport::shm);
  cfg.peer = rt.size() + 3;
  EXPECT_THROW(validate_remote(rt, cfg), UsageError);
  cfg = small(Transport::shm);
  cfg.peer = 0;  // == root
  EXPECT_THROW(validate_remote(rt, cfg), UsageError);
  cfg = small(Transport::shm);
  if (rt.rank() == 1) cfg.sizes = {8192};  // ranks disagree
  try {
    validate_remote(rt, cfg);
    ADD_FAILURE() << "mismatched sizes accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("different options"), std::string::npos);
  }
  cfg = small(Transport::shm);
  cfg.sizes = {1ULL << 50};
  EXPECT_THROW(validate_remote(rt, cfg), UsageError);
}

}  // namespace xb
