#include <gtest/gtest.h>

#include <cmath>

#include "coll/dtype.hpp"
#include "coll/model.hpp"
#include "coll/verify.hpp"
#include "core/error.hpp"

namespace xb {

TEST(CollModel, BusFactorsAsNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::allreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::reducescatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::alltoall, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::broadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::reduce, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::sendrecv, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollOp::allreduce, 1), 0.0);
}

TEST(CollModel, ByteModels) {
  auto k = coll_counts(CollOp::allreduce, 4096, DType::float32, 4);
  EXPECT_EQ(k.send, 1024u);
  EXPECT_EQ(k.recv, 1024u);
  k = coll_counts(CollOp::allgather, 4096, DType::float32, 4);  // size = gathered result
  EXPECT_EQ(k.send, 256u);
  EXPECT_EQ(k.recv, 1024u);
  EXPECT_EQ(k.count, 256u);
  k = coll_counts(CollOp::reducescatter, 4096, DType::half, 4);  // size = full input
  EXPECT_EQ(k.send, 2048u);
  EXPECT_EQ(k.recv, 512u);
  k = coll_counts(CollOp::alltoall, 4096, DType::int8, 4);
  EXPECT_EQ(k.send, 4096u);
  EXPECT_EQ(k.recv, 4096u);
  EXPECT_EQ(k.count, 1024u);  // per peer
  k = coll_counts(CollOp::sendrecv, 24, DType::float64, 3);
  EXPECT_EQ(k.count, 3u);
}

TEST(CollModel, IndivisibleSizesAreUsageErrors) {
  EXPECT_THROW(coll_counts(CollOp::allreduce, 6, DType::float32, 2), UsageError);  // 1.5 elements
  try {
    coll_counts(CollOp::allgather, 4096, DType::float32, 3);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("do not split over 3 ranks"), std::string::npos);
  }
  EXPECT_NO_THROW(coll_counts(CollOp::allreduce, 4096, DType::float32, 3));  // no split needed
}

TEST(CollModel, Names) {
  EXPECT_EQ(parse_collectives("all").size(), collectives().size());
  EXPECT_THROW(parse_collectives("allreduce2"), UsageError);
  EXPECT_EQ(parse_dtypes("all").size(), 8u);
  EXPECT_EQ(parse_dtypes("float,bf16"), (std::vector<DType>{DType::float32, DType::bf16}));
  EXPECT_THROW(parse_dtypes("float16"), UsageError);
  EXPECT_EQ(parse_redops("all").size(), 5u);
  EXPECT_THROW(parse_redops("xor"), UsageError);
}

TEST(DTypes, HalfConversions) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);                          // rounds to infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie to even, up
  for (int v = -2048; v <= 2048; ++v)
    EXPECT_EQ(half_to_float(float_to_half(static_cast<float>(v))), v);
  EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(DTypes, Bf16Conversions) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie to even, up
  for (int v = -256; v <= 256; ++v)
    EXPECT_EQ(bf16_to_float(float_to_bf16(static_cast<float>(v))), v);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

// Simulates the reduction the way a library may do it (pairwise, rounding
// to the element type after every step, in any order) and requires the
// verification data to make the result exact anyway.
class ExactData : public ::testing::TestWithParam<std::tuple<DType, RedOp>> {};

TEST_P(ExactData, ReductionsAreExactInEveryOrder) {
  const auto [t, op] = GetParam();
  for (int n : {2, 3, 4, 8}) {
    const CollCase c{CollOp::allreduce, t, op, n, 0};
    const CollCounts k{64, 64, 64, {}};
    for (std::size_t i = 0; i < 64; ++i) {
      for (bool reverse : {false, true}) {
        unsigned char acc[8], v[8];
        store(t, acc, 0, input_value(c, reverse ? n - 1 : 0, i));
        for (int s = 1; s < n; ++s) {
          store(t, v, 0, input_value(c, reverse ? n - 1 - s : s, i));
          const double a = load(t, acc, 0), b = load(t, v, 0);
          const double r = op == RedOp::prod  ? a * b
                           : op == RedOp::min ? std::min(a, b)
                           : op == RedOp::max ? std::max(a, b)
                                              : a + b;
          store(t, acc, 0, r);
        }
        double got = load(t, acc, 0);
        if (op == RedOp::avg) got = load(t, acc, 0) / n;
        unsigned char want[8];
        store(t, want, 0, expected_value(c, 0, i, k));
        EXPECT_EQ(got, load(t, want, 0))
            << to_string(t) << " " << to_string(op) << " n=" << n << " i=" << i;
        EXPECT_EQ(load(t, want, 0), expected_value(c, 0, i, k));  // the expectation itself is exact
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAndOps, ExactData,
    ::testing::Combine(::testing::Values(DType::int8, DType::uint8, DType::int32, DType::int64,
                                         DType::half, DType::bf16, DType::float32, DType::float64),
                       ::testing::Values(RedOp::sum, RedOp::prod, RedOp::min, RedOp::max,
                                         RedOp::avg)),
    [](const auto& p) {
      return std::string(to_string(std::get<0>(p.param))) + "_" + to_string(std::get<1>(p.param));
    });

TEST(CollVerify, ExpectationsOfDataMovement) {
  const CollCounts k = coll_counts(CollOp::alltoall, 4 * 6 * 4, DType::int32, 4);  // 6 per peer
  const CollCase c{CollOp::alltoall, DType::int32, RedOp::sum, 4, 0};
  // Rank 2's block 1 came from rank 1's slot for rank 2.
  EXPECT_EQ(expected_value(c, 2, 1 * 6 + 5, k), input_value(c, 1, 2 * 6 + 5));
  const CollCase sr{CollOp::sendrecv, DType::int32, RedOp::sum, 4, 0};
  EXPECT_EQ(expected_value(sr, 0, 3, k), input_value(sr, 3, 3));  // from rank n-1
  const CollCase red{CollOp::reduce, DType::int32, RedOp::sum, 4, 2};
  EXPECT_TRUE(receives(red, 2));
  EXPECT_FALSE(receives(red, 0));
}

TEST(CollVerify, CountWrongSeesOneBadElement) {
  const CollCase c{CollOp::broadcast, DType::float32, RedOp::sum, 2, 1};
  const CollCounts k{100, 100, 100, {}};
  std::vector<float> recv(100);
  for (std::size_t i = 0; i < 100; ++i) recv[i] = static_cast<float>(expected_value(c, 0, i, k));
  EXPECT_EQ(count_wrong(c, 0, recv.data(), k), 0u);
  recv[42] += 1;
  EXPECT_EQ(count_wrong(c, 0, recv.data(), k), 1u);
}

}  // namespace xb
