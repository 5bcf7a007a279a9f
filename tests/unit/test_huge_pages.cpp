// --host-mem huge: which page source a mapping gets, and how much of a
// buffer smaps says sits on huge pages (pure, on text); then one real
// mapping where this machine offers huge pages.
#include <gtest/gtest.h>

#include <memory>

#include "backend/host/host_backend.hpp"
#include "core/huge_pages.hpp"

namespace xb {
namespace {

const char* kMeminfo =
    "MemTotal:       24000000 kB\n"
    "HugePages_Total:       4\n"
    "HugePages_Free:        3\n"
    "Hugepagesize:       2048 kB\n";

TEST(HugePages, ParsesMeminfoAndTheBracketedThpMode) {
  const HugePageFacts f = parse_huge_page_facts(kMeminfo, "always [madvise] never\n");
  EXPECT_EQ(f.hugetlb_free, 3u);
  EXPECT_EQ(f.hugetlb_bytes, 2u << 20);
  EXPECT_EQ(f.thp_mode, "madvise");
  EXPECT_EQ(parse_huge_page_facts("", "").thp_mode, "");
}

TEST(HugePages, HugetlbWhenEnoughAreFreeElseThpElseWhy) {
  HugePageFacts f = parse_huge_page_facts(kMeminfo, "[never]");
  std::string why;
  EXPECT_EQ(choose_page_source(f, 6u << 20, &why), PageSource::hugetlb);  // 3 pages of 2 MiB
  EXPECT_EQ(choose_page_source(f, (6u << 20) + 1, &why), std::nullopt);   // a 4th page short
  EXPECT_NE(why.find("never"), std::string::npos) << why;
  EXPECT_NE(why.find("vm.nr_hugepages"), std::string::npos) << why;
  f.thp_mode = "always";
  EXPECT_EQ(choose_page_source(f, 64u << 20, &why), PageSource::thp);
}

TEST(HugePages, SmapsCountsThpProratedAndHugetlbWhole) {
  const std::string smaps =
      "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 \n"  // 8 MiB, 4 MiB of THP
      "Size:               8192 kB\n"
      "KernelPageSize:        4 kB\n"
      "AnonHugePages:      4096 kB\n"
      "7f0000800000-7f0000a00000 rw-p 00000000 00:0f 123 /anon_hugepage (deleted)\n"
      "Size:               2048 kB\n"
      "KernelPageSize:     2048 kB\n"
      "AnonHugePages:         0 kB\n";
  const std::uintptr_t base = 0x7f0000000000;
  EXPECT_EQ(huge_bytes_in(smaps, base, 8u << 20), 4u << 20);
  EXPECT_EQ(huge_bytes_in(smaps, base, 4u << 20), 2u << 20);  // half the mapping: half its share
  EXPECT_EQ(huge_bytes_in(smaps, base + (8u << 20), 2u << 20), 2u << 20);
  EXPECT_EQ(huge_bytes_in(smaps, base, 10u << 20), 6u << 20);
  EXPECT_EQ(huge_bytes_in(smaps, 0x1000, 4096), 0u);  // no mapping there
}

TEST(HugePages, HostBackendBuffersOnHugePagesOrTheReason) {
  auto b = make_host_backend();
  std::string why;
  const bool offered = choose_page_source(read_huge_page_facts(), 1, &why).has_value();
  const Support s = b->use_huge_pages();
  ASSERT_EQ(s.ok, offered) << s.reason;
  if (!s.ok) {
    EXPECT_EQ(s.reason, why);
    GTEST_SKIP() << "this machine offers no huge pages: " << why;
  }
  auto buf = b->allocate(MemKind::device, 0, 8u << 20);
  ASSERT_NE(buf->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf->data()) % (2u << 20), 0u);
  const std::string note = b->huge_pages_note();
  EXPECT_NE(note.find("on huge pages"), std::string::npos) << note;
  EXPECT_NE(note.find("of 8 MiB"), std::string::npos) << note;
}

}  // namespace
}  // namespace xb
