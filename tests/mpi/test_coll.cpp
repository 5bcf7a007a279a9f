#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>

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

// One collective, one dtype (sum), one size, out of place.
CollConfig one_case(CollOp op, DType t, int iters, int warmup) {
  CollConfig c = tiny();
  c.ops = {op};
  c.dtypes = {t};
  c.redops = {RedOp::sum};
  c.sizes = {c.sizes[0]};
  c.outofplace = true;
  c.inplace = false;
  c.iters = iters;
  c.warmup = warmup;
  return c;
}

// A stream library faked on top of MPI: calls are queued and run, in order,
// at synchronize(); each takes exactly kCallUs of "device time", and marks
// read that clock. The harness must time by the marks (per-iteration times
// of exactly kCallUs) and synchronize once after the timed calls.
constexpr double kCallUs = 7.25;

class FakeStreamComm final : public Communicator {
 public:
  explicit FakeStreamComm(Runtime& rt) : mpi_(make_mpi_communicator(rt)) {}
  std::string name() const override { return "fake-stream"; }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  MemKind buffer_kind() const override { return MemKind::pinned; }
  int device() const override { return -1; }
  bool on_stream() const override { return true; }
  std::size_t inplace_result_offset(CollOp op, std::size_t n) const override {
    return mpi_->inplace_result_offset(op, n);
  }
  void allreduce(const void* s, void* r, std::size_t n, DType t, RedOp o) override {
    queue([=, this] { mpi_->allreduce(s, r, n, t, o); });
  }
  void allgather(const void* s, void* r, std::size_t n, DType t) override {
    queue([=, this] { mpi_->allgather(s, r, n, t); });
  }
  void reducescatter(const void* s, void* r, std::size_t n, DType t, RedOp o) override {
    queue([=, this] { mpi_->reducescatter(s, r, n, t, o); });
  }
  void broadcast(const void* s, void* r, std::size_t n, DType t, int root) override {
    queue([=, this] { mpi_->broadcast(s, r, n, t, root); });
  }
  void reduce(const void* s, void* r, std::size_t n, DType t, RedOp o, int root) override {
    queue([=, this] { mpi_->reduce(s, r, n, t, o, root); });
  }
  void alltoall(const void* s, void* r, std::size_t n, DType t) override {
    queue([=, this] { mpi_->alltoall(s, r, n, t); });
  }
  void sendrecv(const void* s, void* r, std::size_t n, DType t) override {
    queue([=, this] { mpi_->sendrecv(s, r, n, t); });
  }
  void synchronize() override {
    if (capturing_) throw std::logic_error("synchronize() while capturing a graph");
    log += 'S';
    for (auto& op : pending_) op();
    pending_.clear();
  }

  class Marks final : public StreamMarks {
   public:
    Marks(FakeStreamComm& c, int n) : c_(c), at_(static_cast<std::size_t>(n), -1) {}
    void mark(int i) override {
      c_.log += 'M';
      c_.pending_.push_back([this, i] { at_.at(static_cast<std::size_t>(i)) = c_.clock_; });
    }
    double elapsed_us(int from, int to) override {
      const double a = at_.at(static_cast<std::size_t>(from)),
                   b = at_.at(static_cast<std::size_t>(to));
      if (a < 0 || b < 0) throw std::logic_error("a mark read before synchronize()");
      return b - a;
    }

   private:
    FakeStreamComm& c_;
    std::vector<double> at_;
  };
  std::unique_ptr<StreamMarks> stream_marks(int n) override {
    return std::make_unique<Marks>(*this, n);
  }
  // Graphs: what is queued while capturing waits in the graph until replay.
  bool can_capture() const override { return true; }
  bool begin_capture() override {
    log += 'G';
    captured_from_ = pending_.size();
    capturing_ = true;
    return true;
  }
  void end_capture_and_replay() override {
    log += 'R';
    capturing_ = false;
    replayed_ = true;
  }
  bool replayed_ = false;

  std::string log;  // C call, M mark, S synchronize

 private:
  void queue(std::function<void()> op) {
    log += 'C';
    pending_.push_back([this, op = std::move(op)] {
      op();
      clock_ += kCallUs;
    });
  }
  std::unique_ptr<Communicator> mpi_;
  std::vector<std::function<void()>> pending_;
  std::size_t captured_from_ = 0;
  bool capturing_ = false;
  double clock_ = 0;
};

}  // namespace

TEST(Coll, EveryCollectiveDtypeAndRedopIsExact) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  CollConfig cfg = tiny();
  cfg.iters = 1;  // exactness is the check's, after the timed call; warm-ups are one_case's
  cfg.warmup = 0;
  validate_coll(rt.size(), cfg);
  const CollResult res = run_coll(rt, *comm, *backend, cfg);
  // Per row: its redops (5 or 1) x every dtype x 2 sizes x 2 placements.
  std::size_t want = 0;
  for (const CollSpec& s : collectives()) want += (s.reduction ? 5u : 1u);
  ASSERT_EQ(res.records.size(), want * cfg.dtypes.size() * 2u * 2u);
  for (const auto& r : res.records) {
    if (r.kase == "alltoallv" && r.get_or(coll_field::inplace, false)) {
      EXPECT_EQ(r.status, Status::waived);
      EXPECT_EQ(r.reason, "alltoallv has no in-place form");
      continue;
    }
    EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true));
    EXPECT_GT(r.time_us.median, 0.0);
  }
  EXPECT_EQ(res.summary.size(), collectives().size());
}

TEST(Coll, SkewedAlltoallvIsExactAndCarriesItsCounts) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  for (const char* skew : {"zipf:1.2", "hot:1:0.5", "uniform"}) {
    CollConfig cfg = one_case(CollOp::alltoallv, DType::int32, 1, 1);
    cfg.skew = parse_skew(skew);
    cfg.sizes = {4096, 4 * 1000 + 4};  // not a multiple of the ranks: alltoallv needs none
    validate_coll(rt.size(), cfg);
    const CollResult res = run_coll(rt, *comm, *backend, cfg);
    ASSERT_EQ(res.records.size(), 2u);
    for (const auto& r : res.records) {
      EXPECT_EQ(r.status, Status::ok) << skew << " " << r.reason;
      EXPECT_EQ(r.get_or(coll_field::wrong, std::int64_t{-1}), 0);
      EXPECT_EQ(r.get_or(coll_field::skew, std::string()), skew);
      const auto pairs = r.get_or(coll_field::pair_counts, std::vector<std::int64_t>{});
      ASSERT_EQ(pairs.size(), static_cast<std::size_t>(rt.size() * rt.size()));
      std::int64_t row = 0;
      for (int d = 0; d < rt.size(); ++d) row += pairs[static_cast<std::size_t>(d)];
      EXPECT_EQ(row, static_cast<std::int64_t>(r.bytes / 4));
    }
  }
}

TEST(Coll, AWrongAlltoallvElementIsCounted) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  CollConfig cfg = one_case(CollOp::alltoallv, DType::int32, 1, 0);
  cfg.skew = parse_skew("zipf:1.2");
  cfg.before_check = [&](const CollCase&, void* recv, std::size_t count) {
    if (rt.rank() == 0 && count > 0) static_cast<std::int32_t*>(recv)[count - 1] += 1;
  };
  const CollResult res = run_coll(rt, *comm, *backend, cfg);
  ASSERT_EQ(res.records.size(), 1u);
  EXPECT_EQ(res.records[0].status, Status::failed);
  EXPECT_EQ(res.records[0].get_or(coll_field::wrong, std::int64_t{-1}), 1);
}

// A rank slowed on purpose is the one the others waited for.
TEST(Coll, TheSlowedRankIsNamed) {
  Runtime& rt = test_runtime();
  if (rt.size() < 2) GTEST_SKIP() << "needs two ranks";
  auto backend = make_backend("host");
  auto comm = make_mpi_communicator(rt);
  CollConfig cfg = one_case(CollOp::allreduce, DType::float32, 8, 1);
  cfg.slow_rank = rt.size() - 1;
  cfg.slow_us = 3000;
  cfg.samples = true;
  const CollResult res = run_coll(rt, *comm, *backend, cfg);
  ASSERT_EQ(res.records.size(), 1u);
  const Record& r = res.records[0];
  EXPECT_EQ(r.get_or(coll_field::slowest_rank, std::int64_t{-1}), rt.size() - 1);
  EXPECT_TRUE(names_straggler(r)) << r.get_or(coll_field::rank_spread, 0.0);
  EXPECT_EQ(r.get_or(coll_field::samples_us, std::vector<double>{}).size(),
            static_cast<std::size_t>(rt.size() * 8));
  EXPECT_EQ(r.get_or(coll_field::rank_median_us, std::vector<double>{}).size(),
            static_cast<std::size_t>(rt.size()));
  // Without the knob nobody is convicted.
  cfg.slow_rank = -1;
  EXPECT_FALSE(names_straggler(run_coll(rt, *comm, *backend, cfg).records.at(0)));
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
  cfg.inplace = cfg.outofplace = false;
  EXPECT_THROW(validate_coll(test_runtime().size(), cfg), UsageError);
}

TEST(Coll, StreamLibrariesAreTimedByMarksWithOneSynchronize) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  FakeStreamComm comm(rt);
  const CollConfig cfg = one_case(CollOp::allreduce, DType::float32, 5, 2);
  const CollResult res = run_coll(rt, comm, *backend, cfg);
  ASSERT_EQ(res.records.size(), 1u);
  const Record& r = res.records[0];
  EXPECT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.verified, std::optional<bool>(true));  // the queued calls really ran
  // Every iteration's time is its device time, not the host's.
  EXPECT_DOUBLE_EQ(r.time_us.min, kCallUs);
  EXPECT_DOUBLE_EQ(r.time_us.median, kCallUs);
  EXPECT_DOUBLE_EQ(r.time_us.max, kCallUs);
  EXPECT_EQ(r.iters, 5);
  // warm-up (2 calls, synchronize), marks around 5 calls queued back to
  // back, one synchronize, then the check's call and synchronize.
  EXPECT_EQ(comm.log,
            "CCS"
            "MCMCMCMCMCM"
            "S"
            "CS");
  EXPECT_NE(timed_by(comm).find("device events"), std::string::npos);
  auto mpi = make_mpi_communicator(rt);
  EXPECT_NE(timed_by(*mpi).find("host clock"), std::string::npos);
}

TEST(Coll, GraphCaptureQueuesTheTimedIterationsThenReplaysThem) {
  Runtime& rt = test_runtime();
  auto backend = make_backend("host");
  FakeStreamComm comm(rt);
  CollConfig cfg = one_case(CollOp::allgather, DType::int32, 3, 1);
  cfg.graph = true;
  validate_coll(rt.size(), cfg, &comm);
  const CollResult res = run_coll(rt, comm, *backend, cfg);
  ASSERT_EQ(res.records.size(), 1u);
  EXPECT_EQ(res.records[0].status, Status::ok) << res.records[0].reason;
  EXPECT_DOUBLE_EQ(res.records[0].time_us.median, kCallUs);
  EXPECT_TRUE(comm.replayed_);
  // warm-up, the timed calls captured and replayed, then the check's call
  // captured and replayed too: what a graph computes is what is checked.
  EXPECT_EQ(comm.log,
            "CS"
            "GMCMCMCMR"
            "S"
            "GCRS");
  // MPI runs on the host: --graph is a usage error before anything runs.
  auto mpi = make_mpi_communicator(rt);
  EXPECT_THROW(validate_coll(rt.size(), cfg, mpi.get()), UsageError);
}

}  // namespace xb
