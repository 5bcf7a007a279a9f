#include <gtest/gtest.h>

#include "family/remote/remote_bench.hpp"

namespace xb {
namespace {

Record rec(const char* op, const char* method, Bytes n, double gbps) {
  Record r;
  r.kase = op;
  r.method = method;
  r.bytes = n;
  r.gbps_median = gbps;
  return r;
}

}  // namespace

TEST(Remote, ScaledIterationsLikeTheTgetExample) {
  EXPECT_EQ(scaled_iters(4096), 1000);
  EXPECT_EQ(scaled_iters(1 << 20), 256);
  EXPECT_EQ(scaled_iters(4 << 20), 64);
  EXPECT_EQ(scaled_iters(1ULL << 30), 20);
}

TEST(Remote, CrossoverNamesTheFirstSizeFromWhichDmaStaysAhead) {
  // The reference figures of pto-isa's TGET example: TGET vs TGET_ASYNC.
  const std::vector<Record> ref = {
      rec("get", "core", 4096, 0.21),    rec("get", "dma", 4096, 0.19),
      rec("get", "core", 16384, 0.72),   rec("get", "dma", 16384, 0.75),
      rec("get", "core", 65536, 1.75),   rec("get", "dma", 65536, 2.55),
      rec("get", "core", 4194304, 3.99), rec("get", "dma", 4194304, 12.95)};
  EXPECT_EQ(crossover_text(ref, "get"), "get: dma overtakes core from 16 KiB");
  std::vector<Record> dip = ref;
  dip[5].gbps_median = 1.0;  // dma loses again at 64 KiB: the crossover moves up
  EXPECT_EQ(crossover_text(dip, "get"), "get: dma overtakes core from 4 MiB");
  std::vector<Record> last = ref;
  last[7].gbps_median = 3.0;  // dma ahead everywhere but at the largest size
  EXPECT_EQ(crossover_text(last, "get"),
            "get: no crossover: dma is faster at 2 of 4 sizes, core at the largest (4 MiB)");
  EXPECT_EQ(crossover_text({rec("put", "core", 4096, 2), rec("put", "dma", 4096, 1)}, "put"),
            "put: core is faster at every size up to 4 KiB");
  EXPECT_EQ(crossover_text({rec("put", "core", 4096, 1), rec("put", "dma", 4096, 2)}, "put"),
            "put: dma is faster at every size from 4 KiB");
  EXPECT_EQ(crossover_text({rec("get", "dma", 4096, 2)}, "get"), "");  // one method only
  EXPECT_EQ(crossover_text(ref, "put"), "");
}

TEST(Remote, AWindowedRecordIsReadByItsMessageSize) {
  Record r = rec("get", "dma", 64 * 4096, 1.0);
  EXPECT_EQ(remote_message_size(r), 64u * 4096u);  // no window: bytes
  r.set(remote_field::window, std::int64_t{64});
  EXPECT_EQ(remote_message_size(r), 4096u);
  RemoteConfig c;
  EXPECT_EQ(remote_slots(c), 1u);
  c.window = 64;
  EXPECT_EQ(remote_slots(c), 64u);
  // The crossover names message sizes, not bytes per iteration.
  std::vector<Record> w = {rec("get", "core", 64 * 8, 2), rec("get", "dma", 64 * 8, 1),
                           rec("get", "core", 64 * 4096, 1), rec("get", "dma", 64 * 4096, 2)};
  for (auto& x : w) x.set(remote_field::window, std::int64_t{64});
  EXPECT_EQ(crossover_text(w, "get"), "get: dma overtakes core from 4 KiB");
}

}  // namespace xb
