#include <gtest/gtest.h>

#include <vector>

#include "core/pattern.hpp"

namespace xb {

TEST(Pattern, RoundTripsAtAnyOffset) {
  for (std::uint64_t off : {0, 1, 7, 8, 13, 4096}) {
    std::vector<std::byte> buf(1000);
    fill_pattern(buf, 42, off);
    EXPECT_FALSE(find_mismatch(buf, 42, off).has_value()) << off;
  }
}

TEST(Pattern, PiecewiseFillEqualsWholeFill) {
  std::vector<std::byte> whole(777), parts(777);
  fill_pattern(whole, 9, 0);
  fill_pattern(std::span(parts).first(100), 9, 0);
  fill_pattern(std::span(parts).subspan(100, 333), 9, 100);
  fill_pattern(std::span(parts).subspan(433), 9, 433);
  EXPECT_EQ(whole, parts);
}

TEST(Pattern, FindsFirstCorruptedByte) {
  std::vector<std::byte> buf(4096);
  fill_pattern(buf, 1, 0);
  buf[1234] ^= std::byte{0x01};
  buf[3000] ^= std::byte{0x80};
  EXPECT_EQ(find_mismatch(buf, 1, 0), std::optional<std::size_t>(1234));
}

TEST(Pattern, SeedsAndShiftsDiffer) {
  std::vector<std::byte> a(256), b(256);
  fill_pattern(a, 1, 0);
  fill_pattern(b, 2, 0);
  EXPECT_NE(a, b);
  EXPECT_TRUE(find_mismatch(a, 1, 8).has_value());  // a shifted copy is caught
}

}  // namespace xb
