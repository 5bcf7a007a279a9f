// Wrong data as a result (core/corruption.hpp): the interval, the tally, the
// first-bad report and the test knob.
#include <gtest/gtest.h>

#include <vector>

#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/pattern.hpp"

namespace xb {

TEST(Corruption, WilsonIntervalMatchesTheFormula) {
  // 20 of 2000: the textbook Wilson interval is 0.649 %-1.540 %.
  const RateInterval a = wilson95(20, 2000);
  EXPECT_NEAR(a.lo, 0.006488, 2e-5);
  EXPECT_NEAR(a.hi, 0.015400, 2e-5);
  // None wrong: from 0 exactly to z^2 / (n + z^2), "at most 0.19 %".
  const RateInterval z = wilson95(0, 2000);
  EXPECT_EQ(z.lo, 0.0);
  EXPECT_NEAR(z.hi, 3.8415 / (2000 + 3.8415), 1e-6);
  // All wrong: to 1 exactly; symmetric with none.
  const RateInterval all = wilson95(50, 50);
  EXPECT_EQ(all.hi, 1.0);
  EXPECT_NEAR(all.lo, 1 - wilson95(0, 50).hi, 1e-12);
  // Nothing checked says nothing.
  EXPECT_EQ(wilson95(0, 0).lo, 0.0);
  EXPECT_EQ(wilson95(0, 0).hi, 1.0);
  // The interval holds the rate and narrows as n grows.
  for (std::int64_t n : {10, 100, 1000, 100000}) {
    const RateInterval i = wilson95(n / 10, n);
    EXPECT_LE(i.lo, 0.1);
    EXPECT_GE(i.hi, 0.1);
  }
  EXPECT_LT(wilson95(1000, 10000).hi - wilson95(1000, 10000).lo,
            wilson95(10, 100).hi - wilson95(10, 100).lo);
}

TEST(Corruption, TallyCountsIterationsOnceAndKeepsTheFirst) {
  CheckTally a, b;
  for (int i = 0; i < 10; ++i) a.right(i);
  a.wrong(byte_mismatch(7, "device 1", 4096, 0x3c, 0x3d, 1));
  b.right(9);
  b.wrong(byte_mismatch(3, "rank 2 (vm)", 8, 0xff, 0x00, 5));
  b.wrong(byte_mismatch(7, "rank 2 (vm)", 9, 0x01, 0x03, 1));  // the same iteration as a's
  a.merge(b);
  EXPECT_EQ(a.checked(), 10);
  EXPECT_EQ(a.wrong_iters(), 2);  // 3 and 7
  ASSERT_TRUE(a.first());
  EXPECT_EQ(a.first()->iter, 3);
  EXPECT_EQ(a.first()->where, "rank 2 (vm)");
  EXPECT_EQ(describe(*a.first()),
            "iteration 3, rank 2 (vm), byte 8: expected 0xff, got 0x00 (xor 0xff); 5 bytes wrong "
            "in it");
  EXPECT_NE(a.summary().find("2 of 10 checked iterations wrong (20 %"), std::string::npos)
      << a.summary();
  // Lossless between ranks.
  const CheckTally back = CheckTally::from_wire(a.to_wire());
  EXPECT_EQ(back.to_wire(), a.to_wire());
  EXPECT_THROW(CheckTally::from_wire("{\"checked\": 1}"), RuntimeError);
}

TEST(Corruption, RecordFieldsAndVerdict) {
  Record clean, bad;
  CheckTally t;
  for (int i = 0; i < 2000; ++i) t.right(i);
  set_check_fields(clean, t);
  EXPECT_EQ(clean.status, Status::ok);
  EXPECT_EQ(clean.verified, true);
  EXPECT_EQ(clean.get(check_field::wrong_iters), 0);
  EXPECT_NEAR(*clean.get(check_field::wrong_rate_hi), 0.00192, 1e-5);
  EXPECT_FALSE(clean.get(check_field::first_bad));
  t.wrong(byte_mismatch(1999, "device 0", 1, 0x10, 0x11, 1));
  bad.set_samples(std::vector<double>{1.0, 2.0});
  set_check_fields(bad, t);
  EXPECT_EQ(bad.status, Status::failed);  // whatever its speed
  EXPECT_EQ(bad.verified, false);
  EXPECT_GT(bad.time_us.median, 0);  // its times are kept
  EXPECT_NE(bad.reason.find("1 of 2000"), std::string::npos) << bad.reason;
  EXPECT_NE(bad.reason.find("device 0, byte 1: expected 0x10, got 0x11 (xor 0x01)"),
            std::string::npos)
      << bad.reason;
}

TEST(Corruption, FindsEveryWrongByte) {
  std::vector<std::byte> buf(4096);
  fill_pattern(buf, 5, 100);
  EXPECT_EQ(find_mismatches(buf, 5, 100).count, 0U);
  buf[17] ^= std::byte{0x04};
  buf[18] ^= std::byte{0x01};
  buf[4095] ^= std::byte{0x80};
  const Mismatches m = find_mismatches(buf, 5, 100);
  EXPECT_EQ(m.count, 3U);
  ASSERT_TRUE(m.first);
  EXPECT_EQ(*m.first, 17U);
  EXPECT_EQ(buf[17] ^ pattern_byte(5, 117), std::byte{0x04});
}

TEST(Corruption, CheckModes) {
  EXPECT_EQ(parse_check_mode("every", "--check"), CheckMode::every);
  EXPECT_EQ(parse_check_mode("none", "--check"), CheckMode::none);
  EXPECT_THROW(parse_check_mode("sometimes", "--check"), UsageError);
}

TEST(Corruption, KnobParsesItsTargets) {
  const auto r = parse_corrupt("1%,0.5:2,0.25:rank3,1:rank0-rank1");
  ASSERT_EQ(r.size(), 4U);
  EXPECT_DOUBLE_EQ(r[0].rate, 0.01);
  EXPECT_EQ(r[0].target, CorruptRule::Target::any);
  EXPECT_EQ(r[1].target, CorruptRule::Target::device);
  EXPECT_EQ(r[1].a, 2);
  EXPECT_EQ(r[2].target, CorruptRule::Target::rank);
  EXPECT_EQ(r[2].a, 3);
  EXPECT_EQ(r[3].target, CorruptRule::Target::link);
  EXPECT_EQ(r[3].b, 1);
  for (const char* bad : {"", "0", "1.5", "x", "2%%", "0.1:", "0.1:dev", "0.1:rank", "0.1:rank1-2",
                          "0.1:-1", "nan", "0.1,"})
    EXPECT_THROW(parse_corrupt(bad), UsageError) << bad;
  Corrupter c(parse_corrupt("0.1:3,0.1:rank0-rank0"));
  EXPECT_THROW(c.check_targets(2, 4), UsageError);  // device 3 of 2
  Corrupter self(parse_corrupt("0.1:rank1-rank1"));
  EXPECT_THROW(self.check_targets(2, 4), UsageError);  // a link is two ranks
}

TEST(Corruption, KnobDrawsItsRateOnItsTargetsOnly) {
  Corrupter c(parse_corrupt("1%:1,5%:rank2,100%:rank0-rank3"));
  int hits = 0;
  constexpr int kCopies = 100000;
  for (int i = 0; i < kCopies; ++i) {
    const auto f = c.draw_copy(1, 1, 4096);
    if (!f) continue;
    ++hits;
    ASSERT_LT(f->offset, 4096U);
    ASSERT_EQ(__builtin_popcount(f->mask), 1);  // one bit
  }
  const RateInterval ci = wilson95(hits, kCopies);
  EXPECT_LE(ci.lo, 0.01);
  EXPECT_GE(ci.hi, 0.01);
  EXPECT_FALSE(c.draw_copy(0, -1, 4096));  // device 0, host: not its target
  EXPECT_FALSE(c.draw_receive(1, 0, 64));  // rank 1 is nobody's target
  EXPECT_TRUE(c.draw_receive(3, 0, 64));   // the link, either way
  EXPECT_TRUE(c.draw_receive(0, 3, 64));
  EXPECT_FALSE(c.draw_receive(0, 2, 64));  // rank 0 from 2: not the link
  std::vector<std::uint8_t> data(8, 0);
  Flip{5, 0x10}.apply(data.data());
  EXPECT_EQ(data[5], 0x10);
}

}  // namespace xb
