#include <gtest/gtest.h>

#include <stdexcept>

#include "core/registry.hpp"
#include "family/copy/copy_bench.hpp"

namespace xb {

TEST(Registry, FindAndDuplicate) {
  Registry r;
  r.add({"a.x", "a", "x", {}});
  ASSERT_NE(r.find("a.x"), nullptr);
  EXPECT_EQ(r.find("nope"), nullptr);
  EXPECT_TRUE(r.find("a.x")->filter(Capabilities{}).ok);  // default filter: runs
  EXPECT_THROW(r.add({"a.x", "a", "again", {}}), std::logic_error);
}

TEST(Registry, CopyFiltersOnDeviceCount) {
  Registry r;
  register_copy(r);
  Capabilities one{"host", 1, false};
  Capabilities two{"host", 2, false};
  EXPECT_TRUE(r.find("copy.d2d")->filter(one).ok);
  const Support s = r.find("copy.p2p")->filter(one);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("needs at least 2 devices"), std::string::npos);
  EXPECT_NE(s.reason.find("XFERBENCH_HOST_DEVICES"), std::string::npos);
  EXPECT_TRUE(r.find("copy.p2p")->filter(two).ok);
  EXPECT_EQ(r.all().size(), copy_patterns().size());  // one case per pattern row
  EXPECT_FALSE(r.find("copy.all_to_one")->filter(one).ok);
  EXPECT_TRUE(r.find("copy.all_to_host")->filter(one).ok);
}

}  // namespace xb
