// The Ascend backend's second pass against the fake CANN runtime: sums
// over a timeline the legs really shared (the copier cannot start them
// together), and links named by the runtime (aclrtGetDevicesTopo). Each
// test runs in a process of its own under ctest.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/ascend/acl_api.hpp"
#include "backend/ascend/ascend_backend.hpp"
#include "core/error.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {
namespace {

// The fake's copy log (fake_runtime.hpp): (start_us, end_us, bytes) of
// every copy since the last clear, on this process's steady clock.
struct Stamp {
  double start, end, bytes;
};
std::vector<Stamp> copy_log() {
  using Fn = int (*)(double*, int);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "fake_acl_copy_log"));
  if (!fn) {
    ADD_FAILURE() << "the fake runtime has no copy log";
    return {};
  }
  std::vector<double> raw(3 * 256);
  const int n = std::min(fn(raw.data(), 256), 256);
  std::vector<Stamp> out;
  out.reserve(static_cast<std::size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) out.push_back({raw[3 * i], raw[3 * i + 1], raw[3 * i + 2]});
  return out;
}
void clear_copy_log() {
  auto fn = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "fake_acl_copy_log_clear"));
  ASSERT_NE(fn, nullptr);
  fn();
}

// From the first copy's start to the last one's end.
double span_us(const std::vector<Stamp>& s) {
  double first = s.front().start, last = s.front().end;
  for (const auto& x : s) {
    first = std::min(first, x.start);
    last = std::max(last, x.end);
  }
  return last - first;
}

// One batch of the dma copier, its copies' stamps beside its timing.
struct Batch {
  CopyTiming timing;
  std::vector<Stamp> stamps;
};
Batch run_batch(Backend& b, const std::vector<CopyOp>& ops) {
  auto copier = b.copier(Method::dma, {});
  copier->run(ops);  // streams made, first touch
  clear_copy_log();
  Batch out;
  out.timing = copier->run(ops);
  out.stamps = copy_log();
  return out;
}

TEST(AscendTiming, ABatchOfCopiesThatRanInTurnIsTimedOverBoth) {
  // Pageable memory: the synchronous path, one copy after the other.
  setenv("FAKE_ASCEND_GBPS", "4", 1);
  auto b = make_ascend_backend();
  const Bytes n = 16 << 20;  // 4 ms at 4 GB/s
  auto host_in = b->allocate(MemKind::pageable, -1, n),
       host_out = b->allocate(MemKind::pageable, -1, n);
  auto dev_in = b->allocate(MemKind::device, 0, n), dev_out = b->allocate(MemKind::device, 0, n);
  const Batch r =
      run_batch(*b, {{host_in.get(), dev_in.get(), n, {}}, {dev_out.get(), host_out.get(), n, {}}});
  ASSERT_EQ(r.stamps.size(), 2u);
  // The runtime's own clock says they ran in turn: the batch is as long.
  const Stamp first = r.stamps[0].start < r.stamps[1].start ? r.stamps[0] : r.stamps[1];
  const Stamp second = r.stamps[0].start < r.stamps[1].start ? r.stamps[1] : r.stamps[0];
  EXPECT_GE(second.start, first.end);
  const double span = span_us(r.stamps);
  EXPECT_GE(r.timing.batch_us, span)
      << "a sum over the batch would count an overlap that never was";
  unsetenv("FAKE_ASCEND_GBPS");
}

TEST(AscendTiming, ABatchIssuedOneCopyAtATimeIsTimedFromTheFirstIssue) {
  // Page-locked memory, async copies on 4 NPUs, each submit costing the host
  // 300 us: the later copies start that much later.
  setenv("FAKE_ASCEND_DEVICES", "4", 1);
  setenv("FAKE_ACL_SUBMIT_US", "300", 1);
  auto b = make_ascend_backend();
  const Bytes n = 4096;
  std::vector<std::unique_ptr<Buffer>> keep;
  std::vector<CopyOp> ops;
  for (int d = 0; d < 4; ++d) {
    keep.push_back(b->allocate(MemKind::device, d, n));
    keep.push_back(b->allocate(MemKind::pinned, -1, n));
    ops.push_back({keep[keep.size() - 2].get(), keep.back().get(), n, {}});
  }
  const Batch r = run_batch(*b, ops);
  ASSERT_EQ(r.stamps.size(), 4u);
  const double span = span_us(r.stamps);
  EXPECT_GE(span, 3 * 300 * 0.9);  // the submits are in it
  EXPECT_GE(r.timing.batch_us, span);
  unsetenv("FAKE_ACL_SUBMIT_US");
  unsetenv("FAKE_ASCEND_DEVICES");
}

TEST(AscendTiming, HostBidirTotalOfLegsThatRanInTurnIsOneLegsBandwidth) {
  setenv("FAKE_ASCEND_GBPS", "4", 1);
  auto b = make_ascend_backend();
  Registry reg;
  register_copy(reg);
  CopyConfig cfg;
  cfg.cases = {copy_case::h2d};
  cfg.bidir = true;
  cfg.methods = {Method::dma};
  cfg.host_mem = MemKind::pageable;
  cfg.sizes = {16 << 20};
  cfg.iters = 3;
  cfg.warmup = 1;
  cfg.device = 0;
  validate_copy(*b, cfg);
  double legs = 0, total = 0;
  for (const auto& r : run_copy(*b, reg, cfg)) {
    ASSERT_EQ(r.status, Status::ok) << r.kase << ": " << r.reason;
    if (r.kase == total_case(copy_case::host_bidir))
      total = r.gbps_median;
    else if (r.kase == copy_case::host_bidir)
      legs = std::max(legs, r.gbps_max);
  }
  // In each iteration the total is at most its faster leg when the legs ran in
  // turn, so the total's median is at most the legs' best iteration (medians
  // of the legs do not bound it: ASan's load made one leg's median the lower).
  ASSERT_GT(legs, 0);
  EXPECT_LE(total, 1.1 * legs) << "the two legs ran one after the other";
  unsetenv("FAKE_ASCEND_GBPS");
}

TEST(AscendLinks, ClassesAreNamedAsNpuSmiNamesThem) {
  EXPECT_EQ(ascend::topology_name(ascend::kTopoHccs), "HCCS");
  EXPECT_EQ(ascend::topology_name(ascend::kTopoSio), "SIO (the two dies of one chip)");
  EXPECT_EQ(ascend::topology_name(ascend::kTopoHccsSw), "HCCS_SW (an HCCS switch)");
  EXPECT_EQ(ascend::topology_name(ascend::kTopoPix), "PIX (one PCIe switch)");
  EXPECT_EQ(ascend::topology_name(ascend::kTopoSio | ascend::kTopoHccs), "HCCS");  // HCCL's order
  EXPECT_NE(ascend::topology_name(0x100).find("0x100"), std::string::npos);
}

TEST(AscendLinks, TheRuntimeNamesEachPairsLink) {
  setenv("FAKE_ASCEND_DEVICES", "4", 1);
  setenv("FAKE_ASCEND_TOPO", "0-1:SIO,2-3:SIO,*:HCCS", 1);
  auto b = make_ascend_backend();
  EXPECT_EQ(b->link_type(0, 1), "SIO (the two dies of one chip)");
  EXPECT_EQ(b->link_type(1, 0), "SIO (the two dies of one chip)");
  EXPECT_EQ(b->link_type(3, 2), "SIO (the two dies of one chip)");
  EXPECT_EQ(b->link_type(0, 2), "HCCS");
  EXPECT_EQ(b->link_type(1, 3), "HCCS");
  unsetenv("FAKE_ASCEND_TOPO");
  unsetenv("FAKE_ASCEND_DEVICES");
}

}  // namespace
}  // namespace xb
