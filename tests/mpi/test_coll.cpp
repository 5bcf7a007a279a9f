#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "backend/select/select.hpp"
#include "core/error.hpp"
#include "family/coll/coll_bench.hpp"
#include "mpi_env.hpp"

namespace xb {
namespace {

CollConfig tiny() {
  CollConfig c;
  c.ops = parse_collectives("all");
  c.dtypes = parse_dtypes("all");
  c.redops = parse_redops("all");
  const Bytes unit = 8ULL * static_cast<Bytes>(test_runtime().size());
  c.sizes = {unit * 16, unit * 129};  // elements split evenly for every dtype
  c.iters = 2;
  c.warmup = 1;
  c.root = test_runtime().size() - 1;
  return c;
}

}  // namespace

TEST(Coll, EveryCollectiveDtypeAndRedopIsExact) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  const CollConfig cfg = tiny();
  validate_coll(rt.size(), cfg);
  const CollResult res = run_coll(rt, *comm, *backend, cfg);
  // (3 reductions x 5 redops + 4 others) x 8 dtypes x 2 sizes x 2 placements
  ASSERT_EQ(res.records.size(), (3u * 5u + 4u) * 8u * 2u * 2u);
  for (const auto& r : res.records) {
    EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true));
    EXPECT_GT(r.time_us.median, 0.0);
  }
  EXPECT_EQ(res.summary.size(), 7u);
}

TEST(Coll, AnInjectedWrongElementIsCounted) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  CollConfig cfg = tiny();
  cfg.ops = {CollOp::allreduce, CollOp::allgather};
  cfg.dtypes = {DType::bf16, DType::int32};
  cfg.redops = {RedOp::sum};
  cfg.sizes = {cfg.sizes[0]};
  cfg.before_check = [&](const CollCase&, void* recv, std::size_t count) {
    if (rt.rank() == 0)
      static_cast<unsigned char*>(recv)[count] ^= 0x01;  // byte `count`: inside for 2+ B types
  };
  const CollResult res = run_coll(rt, *comm, *backend, cfg);
  ASSERT_EQ(res.records.size(), 2u * 2u * 2u);
  for (const auto& r : res.records) {
    EXPECT_EQ(r.status, Status::failed) << r.kase;
    EXPECT_EQ(r.verified, std::optional<bool>(false));
    EXPECT_NE(r.reason.find("#wrong = 1"), std::string::npos) << r.reason;
  }
}

TEST(Coll, TimeAggregationOverRanks) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  CollConfig cfg = tiny();
  cfg.ops = {CollOp::allreduce};
  cfg.dtypes = {DType::float32};
  cfg.sizes = {cfg.sizes[0]};
  cfg.inplace = false;
  double median[3];
  int i = 0;
  for (TimeAgg a : {TimeAgg::min, TimeAgg::avg, TimeAgg::max}) {
    cfg.agg = a;
    median[i++] = run_coll(rt, *comm, *backend, cfg).records.at(0).time_us.median;
  }
  for (double m : median) EXPECT_GT(m, 0.0);
}

TEST(Coll, BadOptions) {
  CollConfig cfg = tiny();
  cfg.root = test_runtime().size();
  EXPECT_THROW(validate_coll(test_runtime().size(), cfg), UsageError);
  cfg = tiny();
  cfg.sizes = {8ULL * static_cast<Bytes>(test_runtime().size()) + 4};  // half a double per rank
  EXPECT_THROW(validate_coll(test_runtime().size(), cfg), UsageError);
  cfg = tiny();
  cfg.inplace = cfg.outofplace = false;
  EXPECT_THROW(validate_coll(test_runtime().size(), cfg), UsageError);
}

}  // namespace xb
