// The collective row shown in docs/DESIGN.md, compiled out of the document
// (design_coll_row.inc, made by CMake) and checked against the table's row,
// so the document cannot drift from the code.
#include <gtest/gtest.h>

#include "coll/communicator.hpp"
#include "coll/model.hpp"
#include "coll/verify.hpp"

namespace xb {

TEST(DesignExample, GatherRowMatchesTheTable) {
#include "design_coll_row.inc"
  const CollSpec& real = spec(CollOp::gather);
  EXPECT_EQ(row.op, real.op);
  EXPECT_STREQ(row.name, real.name);
  EXPECT_STREQ(row.help, real.help);
  EXPECT_EQ(row.reduction, real.reduction);
  EXPECT_EQ(row.rooted, real.rooted);
  EXPECT_EQ(row.root_only_receives, real.root_only_receives);
  EXPECT_EQ(row.split, real.split);
  EXPECT_EQ(row.inplace, real.inplace);
  const CollCase c{CollOp::gather, DType::int32, RedOp::sum, 4, 1, {}};
  for (int n : {2, 3, 4, 8}) EXPECT_DOUBLE_EQ(row.bus_factor(n), real.bus_factor(n));
  const CollCounts a = row.counts(c, 64), b = real.counts(c, 64);
  EXPECT_EQ(a.send, b.send);
  EXPECT_EQ(a.recv, b.recv);
  EXPECT_EQ(a.count, b.count);
  for (std::size_t i = 0; i < 64; ++i)
    EXPECT_EQ(row.expected(c, 1, i, a), real.expected(c, 1, i, b));
}

}  // namespace xb
