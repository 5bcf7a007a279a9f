#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/units.hpp"

namespace xb {

TEST(ParseSize, PlainAndBinaryAndDecimal) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("4kib"), 4096u);
  EXPECT_EQ(parse_size("4KB"), 4000u);
  EXPECT_EQ(parse_size("1M"), 1048576u);
  EXPECT_EQ(parse_size("1MB"), 1000000u);
  EXPECT_EQ(parse_size("2G"), 2147483648u);
  EXPECT_EQ(parse_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_size("3B"), 3u);
  EXPECT_EQ(parse_size("1T"), 1ULL << 40);
}

TEST(ParseSize, RejectsBadInputWithClearMessage) {
  auto msg = [](const char* s) {
    try {
      parse_size(s, "-s size");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg("-3"), "invalid -s size '-3': must be positive");
  EXPECT_EQ(msg("0"), "invalid -s size '0': must be greater than zero");
  EXPECT_EQ(msg("0K"), "invalid -s size '0K': must be greater than zero");
  EXPECT_NE(msg("4Q").find("unknown unit"), std::string::npos);
  EXPECT_NE(msg("").find("empty"), std::string::npos);
  EXPECT_NE(msg("K").find("expected a number"), std::string::npos);
  EXPECT_NE(msg("1.5M").find("unknown unit"), std::string::npos);
  EXPECT_NE(msg("99999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(msg("20000000T").find("too large"), std::string::npos);
}

TEST(FormatSize, ExactBinaryUnits) {
  EXPECT_EQ(format_size(3), "3 B");
  EXPECT_EQ(format_size(4096), "4 KiB");
  EXPECT_EQ(format_size(4000), "4000 B");
  EXPECT_EQ(format_size(256ULL << 20), "256 MiB");
  EXPECT_EQ(format_size(3ULL << 30), "3 GiB");
}

TEST(FormatCapacity, TwoDecimals) {
  EXPECT_EQ(format_capacity(512), "512 B");
  EXPECT_EQ(format_capacity(1536), "1.50 KiB");
  EXPECT_EQ(format_capacity(4810524ULL * 1024), "4.59 GiB");
}

TEST(Gbps, DecimalBytesPerSecond) {
  EXPECT_DOUBLE_EQ(gbps(1000000000, 1e6), 1.0);  // 1e9 B in 1 s
  EXPECT_DOUBLE_EQ(gbps(4096, 1.0), 4.096);
  EXPECT_EQ(gbps(4096, 0.0), 0.0);
}

TEST(MessagesPerSecond, WindowOverMedianTime) {
  EXPECT_DOUBLE_EQ(messages_per_second(64, 10.0), 6.4e6);  // 64 messages in 10 us
  EXPECT_DOUBLE_EQ(messages_per_second(1, 1e6), 1.0);
  EXPECT_EQ(messages_per_second(64, 0.0), 0.0);
  EXPECT_EQ(messages_per_second(64, -1.0), 0.0);
}

}  // namespace xb
