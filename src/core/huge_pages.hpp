#pragma once
// Host memory on huge pages (`--host-mem huge`): hugetlbfs pages (mmap with
// MAP_HUGETLB) where the system has enough of them reserved, transparent huge
// pages (madvise MADV_HUGEPAGE) otherwise. The parsers are pure, so the
// choice is unit-tested on text; the mapping reads the live system.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace xb {

enum class PageSource { hugetlb, thp };
const char* to_string(PageSource s);  // "hugetlb", "thp"

// What /proc/meminfo and /sys/kernel/mm/transparent_hugepage say.
struct HugePageFacts {
  std::uint64_t hugetlb_free = 0;   // HugePages_Free
  std::uint64_t hugetlb_bytes = 0;  // Hugepagesize, bytes
  std::string thp_mode;             // "always", "madvise", "never", "" unknown
};
// From the text of /proc/meminfo and of transparent_hugepage/enabled
// ("always [madvise] never": the bracketed word).
HugePageFacts parse_huge_page_facts(const std::string& meminfo, const std::string& thp_enabled);
HugePageFacts read_huge_page_facts();

// The source a mapping of `bytes` gets: hugetlb when enough free pages are
// reserved, THP when the kernel honours madvise; nullopt with `why` set
// when neither can be had.
std::optional<PageSource> choose_page_source(const HugePageFacts& f, std::uint64_t bytes,
                                             std::string* why);

// Bytes of huge pages backing [addr, addr + len), summed over the
// /proc/self/smaps text's mappings that overlap it (AnonHugePages for THP,
// the whole mapping for a hugetlb one, KernelPageSize > 4 kB).
std::uint64_t huge_bytes_in(const std::string& smaps, std::uintptr_t addr, std::uint64_t len);

// An anonymous mapping of at least `bytes` (rounded up to whole 2 MiB or
// hugetlb pages, aligned to them), from `source`, not yet touched: bind it
// to a node first if it should live there, then touch it. Throws
// RuntimeError when the kernel refuses.
struct HugeMapping {
  void* data = nullptr;
  std::size_t length = 0;  // the mapped length
  PageSource source = PageSource::thp;
};
HugeMapping map_huge(std::size_t bytes, PageSource source, std::uint64_t hugetlb_bytes);
void unmap_huge(const HugeMapping& m);
// Of `m`, the bytes the kernel backs with huge pages now (/proc/self/smaps).
std::uint64_t huge_backed(const HugeMapping& m);

}  // namespace xb
