#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "backend/backend.hpp"
#include "backend/select/select.hpp"
#include "core/error.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

struct EnvDevices {
  explicit EnvDevices(const char* n) { setenv("XFERBENCH_HOST_DEVICES", n, 1); }
  ~EnvDevices() { unsetenv("XFERBENCH_HOST_DEVICES"); }
};

Registry copy_registry() {
  Registry r;
  register_copy(r);
  return r;
}

CopyConfig small(std::vector<std::string> cases) {
  CopyConfig c;
  c.cases = std::move(cases);
  c.sizes = c.p2p_sizes = {1, 4096, 100000};
  c.warmup = 1;
  c.iters = c.p2p_iters = 3;
  c.copier.threads = 2;
  c.copier.tile = 4096;
  return c;
}

// Forwards to a real backend; its copiers call `after` with every batch
// they ran.
using AfterRun = std::function<void(std::span<const CopyOp>)>;
class HookedBackend final : public Backend {
 public:
  HookedBackend(std::unique_ptr<Backend> inner, AfterRun after)
      : in_(std::move(inner)), after_(std::move(after)) {}
  std::string name() const override { return in_->name(); }
  const std::vector<DeviceInfo>& devices() const override { return in_->devices(); }
  Capabilities capabilities() const override { return in_->capabilities(); }
  Support method_support(Method m) const override { return in_->method_support(m); }
  Support peer_access(int s, int d) const override { return in_->peer_access(s, d); }
  std::string link_type(int a, int b) const override { return in_->link_type(a, b); }
  Bytes free_memory(MemKind k, int d) const override { return in_->free_memory(k, d); }
  std::unique_ptr<Buffer> allocate(MemKind k, int d, Bytes n) override {
    return in_->allocate(k, d, n);
  }
  void write(Buffer& b, Bytes o, std::span<const std::byte> s) override { in_->write(b, o, s); }
  void read(const Buffer& b, Bytes o, std::span<std::byte> d) override { in_->read(b, o, d); }
  std::unique_ptr<Stream> create_stream(int d, const CopierOptions& o) override {
    return in_->create_stream(d, o);
  }
  std::unique_ptr<Event> create_event() override { return in_->create_event(); }
  std::unique_ptr<Copier> copier(Method m, const CopierOptions& o) override {
    struct Hooked final : Copier {
      std::unique_ptr<Copier> c;
      AfterRun* after = nullptr;
      Method method() const override { return c->method(); }
      CopyTiming run(std::span<const CopyOp> ops) override {
        CopyTiming t = c->run(ops);
        (*after)(ops);
        return t;
      }
    };
    auto h = std::make_unique<Hooked>();
    h->c = in_->copier(m, o);
    h->after = &after_;
    return h;
  }

 private:
  std::unique_ptr<Backend> in_;
  AfterRun after_;
};

// Its copiers flip one byte of the first destination after every copy:
// what a broken engine would do.
HookedBackend corrupting(std::unique_ptr<Backend> inner) {
  return HookedBackend(std::move(inner), [](std::span<const CopyOp> ops) {
    auto* p = static_cast<std::byte*>(ops[0].dst->data());
    p[ops[0].bytes / 2] ^= std::byte{0x10};
  });
}

}  // namespace

TEST(CopyBench, EveryCaseAndMethodVerifies) {
  auto b = make_backend("host");
  const auto recs =
      run_copy(*b, copy_registry(), small({copy_case::h2d, copy_case::d2h, copy_case::d2d}));
  ASSERT_EQ(recs.size(), 3u * 2u * 3u);  // cases x methods x sizes
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true));
    EXPECT_EQ(r.iters, 3);
    EXPECT_GT(r.time_us.median, 0.0);
    EXPECT_GE(r.gbps_max, r.gbps_median);
  }
  EXPECT_EQ(recs[0].kase, "h2d");
  EXPECT_EQ(recs[0].src, -1);
  EXPECT_EQ(recs[0].method, "dma");
  EXPECT_EQ(recs[3].method, "core");
}

TEST(CopyBench, NoCheckLeavesVerifiedUnset) {
  auto b = make_backend("host");
  auto cfg = small({copy_case::d2d});
  cfg.check = false;
  for (const auto& r : run_copy(*b, copy_registry(), cfg)) EXPECT_FALSE(r.verified.has_value());
}

TEST(CopyBench, P2pMatrixWithFourDevices) {
  EnvDevices env("4");
  auto b = make_backend("host");
  auto cfg = small({copy_case::p2p});
  cfg.p2p_sizes = {65536};
  cfg.methods = {Method::dma};
  cfg.bidir = true;
  const auto recs = run_copy(*b, copy_registry(), cfg);
  int uni = 0, bidir = 0, total = 0, local = 0;
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true));
    if (r.kase == "p2p") ++uni;
    if (r.kase == "p2p_bidir") ++bidir;
    if (r.kase == "p2p_local") {
      ++local;
      EXPECT_EQ(r.src, r.dst);
    }
    if (r.kase == "p2p_bidir_total") {
      ++total;
      EXPECT_EQ(r.bytes, 2u * 65536u);
    }
  }
  EXPECT_EQ(uni, 12);
  EXPECT_EQ(bidir, 12);  // both directions of the 6 unordered pairs
  EXPECT_EQ(total, 6);
  EXPECT_EQ(local, 4);
}

TEST(CopyBench, P2pWithOneDeviceIsWaived) {
  auto b = make_backend("host");
  if (b->devices().size() != 1) GTEST_SKIP() << "machine has several NUMA nodes";
  const auto recs = run_copy(*b, copy_registry(), small({copy_case::p2p}));
  ASSERT_EQ(recs.size(), 2u * 3u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::waived);
    EXPECT_NE(r.reason.find("needs at least 2 devices"), std::string::npos);
  }
}

TEST(CopyBench, VerificationCatchesACorruptedCopy) {
  HookedBackend b = corrupting(make_backend("host"));
  auto cfg = small({copy_case::d2d});
  cfg.sizes = {100000};
  const auto recs = run_copy(b, copy_registry(), cfg);
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.verified, std::optional<bool>(false));
    EXPECT_NE(r.reason.find("first wrong byte at offset 50000"), std::string::npos) << r.reason;
  }
}

// The old bench read any two-op batch as bidirectional: all_to_host on two
// devices came out as p2p_bidir_total. Two legs one way are two legs and a sum.
TEST(CopyBench, TwoLegsOneWayNeverMakeABidirRecord) {
  EnvDevices env("2");
  auto b = make_backend("host");
  auto cfg = small({copy_case::all_to_host});
  cfg.methods = {Method::dma};
  const auto recs = run_copy(*b, copy_registry(), cfg);
  ASSERT_EQ(recs.size(), 3u * 3u);  // sizes x (two legs and the sum)
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.reason;
    EXPECT_EQ(r.kase.find("bidir"), std::string::npos) << r.kase;
    if (i % 3 == 2) {
      EXPECT_EQ(r.kase, "all_to_host_total");
      EXPECT_EQ(r.src, kEveryDevice);
      EXPECT_EQ(r.bytes, 2 * recs[i - 1].bytes);
    } else {
      EXPECT_EQ(r.kase, "all_to_host");
      EXPECT_EQ(r.src, static_cast<int>(i % 3));
      EXPECT_EQ(r.dst, -1);
    }
  }
}

// CUDA review 2, N5, on the host backend: host_bidir's h2d record comes from
// a batch with d2h at twice the size and its d2h record from the mirror
// one; the sum from the batch of equal sizes. Warm-up and timed runs each.
TEST(CopyBench, HostBidirLegsRunAgainstDoubledInterference) {
  std::vector<std::vector<Bytes>> runs;
  HookedBackend b(make_backend("host"), [&](std::span<const CopyOp> ops) {
    std::vector<Bytes> sizes;
    for (const auto& op : ops) sizes.push_back(op.bytes);
    runs.push_back(sizes);
  });
  auto cfg = small({copy_case::h2d});
  cfg.bidir = true;
  cfg.device = 0;
  cfg.sizes = {4096};
  cfg.methods = {Method::dma};
  const auto recs = run_copy(b, copy_registry(), cfg);
  ASSERT_EQ(recs.size(), 1u + 3u);  // h2d, then host_bidir's two legs and the sum
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::ok) << r.kase << " " << r.reason;
    EXPECT_EQ(r.verified, std::optional<bool>(true)) << r.kase;
    EXPECT_EQ(r.iters, 3) << r.kase;
  }
  EXPECT_EQ(recs[3].kase, "host_bidir_total");
  EXPECT_EQ(recs[3].bytes, 2u * 4096u);
  const int per = cfg.warmup + cfg.iters;  // runs of one batch
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(per * 4));
  const std::vector<std::vector<Bytes>> want = {{4096}, {4096, 4096}, {4096, 8192}, {8192, 4096}};
  for (std::size_t i = 0; i < runs.size(); ++i)
    EXPECT_EQ(runs[i], want[i / static_cast<std::size_t>(per)]) << "run " << i;
}

TEST(CopyBench, TheDriverOfACopyIsOneOfItsEnds) {
  EnvDevices env("3");
  auto b = make_backend("host");
  auto x = b->allocate(MemKind::device, 0, 4096);
  auto y = b->allocate(MemKind::device, 1, 4096);
  CopyOp op{x.get(), y.get(), 4096};
  EXPECT_EQ(executing_device(op), 0);  // a push by default
  op.by = 1;
  EXPECT_EQ(executing_device(op), 1);  // a pull
  EXPECT_NO_THROW(b->copier(Method::dma, {})->run(std::span(&op, 1)));
  op.by = 2;
  EXPECT_THROW(check_ops(std::span(&op, 1)), RuntimeError);
  for (Method m : {Method::dma, Method::core})
    EXPECT_THROW(b->copier(m, {})->run(std::span(&op, 1)), RuntimeError);
}

TEST(CopyBench, ValidationRejectsImpossibleRequests) {
  auto b = make_backend("host");
  auto cfg = small({copy_case::d2d});
  cfg.device = 99;
  EXPECT_THROW(validate_copy(*b, cfg), UsageError);
  cfg = small({copy_case::d2d});
  cfg.sizes = {1ULL << 50};
  EXPECT_THROW(validate_copy(*b, cfg), UsageError);
  cfg = small({copy_case::p2p});
  cfg.src = 0;
  cfg.dst = 0;
  EXPECT_THROW(validate_copy(*b, cfg), UsageError);
  EXPECT_NO_THROW(validate_copy(*b, small({copy_case::h2d})));
  if (b->devices().size() == 1) {
    EXPECT_THROW(validate_copy(*b, small({"one_to_all"})), UsageError);
  }
  cfg = small({copy_case::h2d});
  cfg.p2p_ops = {P2pOp::read};
  EXPECT_THROW(validate_copy(*b, cfg), UsageError);
  cfg = small({"all_to_all"});
  EXPECT_THROW(validate_copy(*b, cfg), UsageError);
}

}  // namespace xb
