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
  Capabilities one{"host", 1, false, false};
  Capabilities two{"host", 2, true, false};
  Capabilities two_apart{"host", 2, false, false};  // two devices, no pair may copy directly
  EXPECT_TRUE(r.find("copy.d2d")->filter(one).ok);
  const Support s = r.find("copy.p2p")->filter(one);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("needs at least 2 devices"), std::string::npos);
  EXPECT_NE(s.reason.find("XFERBENCH_HOST_DEVICES"), std::string::npos);
  EXPECT_TRUE(r.find("copy.p2p")->filter(two).ok);
  const Support apart = r.find("copy.p2p")->filter(two_apart);
  EXPECT_FALSE(apart.ok);
  EXPECT_NE(apart.reason.find("no pair of the host backend's devices has peer access"),
            std::string::npos);
  EXPECT_EQ(r.all().size(), 4u);
}

}  // namespace xb
