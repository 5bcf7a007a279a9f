#include "core/huge_pages.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace xb {
namespace {

constexpr std::uint64_t kThpBytes = 2ULL << 20;  // x86-64 and arm64 (4 KiB base pages)

std::string slurp(const char* path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// "Name:   123 kB" -> 123 * 1024 (the unit is kB or absent); nullopt if not `name`.
std::optional<std::uint64_t> meminfo_value(const std::string& line, const std::string& name) {
  if (line.rfind(name + ":", 0) != 0) return std::nullopt;
  std::istringstream in(line.substr(name.size() + 1));
  std::uint64_t v = 0;
  std::string unit;
  if (!(in >> v)) return std::nullopt;
  in >> unit;
  return unit == "kB" ? v * 1024 : v;
}

std::uint64_t round_up(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

const char* to_string(PageSource s) { return s == PageSource::hugetlb ? "hugetlb" : "thp"; }

HugePageFacts parse_huge_page_facts(const std::string& meminfo, const std::string& thp_enabled) {
  HugePageFacts f;
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    if (auto v = meminfo_value(line, "HugePages_Free")) f.hugetlb_free = *v;
    if (auto v = meminfo_value(line, "Hugepagesize")) f.hugetlb_bytes = *v;
  }
  const auto open = thp_enabled.find('['), close = thp_enabled.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open)
    f.thp_mode = thp_enabled.substr(open + 1, close - open - 1);
  return f;
}

HugePageFacts read_huge_page_facts() {
  return parse_huge_page_facts(slurp("/proc/meminfo"),
                               slurp("/sys/kernel/mm/transparent_hugepage/enabled"));
}

std::optional<PageSource> choose_page_source(const HugePageFacts& f, std::uint64_t bytes,
                                             std::string* why) {
  if (f.hugetlb_bytes > 0 && f.hugetlb_free * f.hugetlb_bytes >= round_up(bytes, f.hugetlb_bytes))
    return PageSource::hugetlb;
  if (f.thp_mode == "always" || f.thp_mode == "madvise") return PageSource::thp;
  if (why) {
    *why = fmt::format(
        "no huge pages: {} free hugetlb page{} of {} MiB (vm.nr_hugepages) for {} MiB, and "
        "transparent huge pages are {}",
        f.hugetlb_free, f.hugetlb_free == 1 ? "" : "s", f.hugetlb_bytes >> 20,
        round_up(bytes, 1ULL << 20) >> 20, f.thp_mode.empty() ? "unknown" : f.thp_mode);
  }
  return std::nullopt;
}

std::uint64_t huge_bytes_in(const std::string& smaps, std::uintptr_t addr, std::uint64_t len) {
  std::uint64_t total = 0;
  std::uintptr_t lo = 0, hi = 0;  // the current mapping
  std::uint64_t anon_huge = 0, kernel_page = 0;
  auto flush = [&] {
    const std::uintptr_t a = std::max(lo, addr), b = std::min<std::uintptr_t>(hi, addr + len);
    if (hi > lo && b > a) {
      const std::uint64_t overlap = b - a;
      if (kernel_page > 4096) {
        total += overlap;  // a hugetlb mapping: every page of it is huge
      } else if (anon_huge > 0) {
        // THP counts per mapping; adjacent mappings with the same flags merge,
        // so a buffer's share is prorated over its part of the mapping.
        total +=
            static_cast<std::uint64_t>(static_cast<double>(anon_huge) *
                                       static_cast<double>(overlap) / static_cast<double>(hi - lo));
      }
    }
    anon_huge = kernel_page = 0;
  };
  std::istringstream in(smaps);
  for (std::string line; std::getline(in, line);) {
    unsigned long long a = 0, b = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') > line.find(' ') && (head >> std::hex >> a >> dash >> b) && dash == '-') {
      flush();
      lo = static_cast<std::uintptr_t>(a);
      hi = static_cast<std::uintptr_t>(b);
      continue;
    }
    if (auto v = meminfo_value(line, "AnonHugePages")) anon_huge = *v;
    if (auto v = meminfo_value(line, "KernelPageSize")) kernel_page = *v;
  }
  flush();
  return std::min<std::uint64_t>(total, len);
}

HugeMapping map_huge(std::size_t bytes, PageSource source, std::uint64_t hugetlb_bytes) {
  HugeMapping m;
  m.source = source;
  const std::uint64_t page = source == PageSource::hugetlb ? hugetlb_bytes : kThpBytes;
  m.length = round_up(std::max<std::size_t>(bytes, 1), page);
  // THP needs 2 MiB-aligned ranges: map one page more and trim to alignment.
  const std::size_t slack = source == PageSource::thp ? page : 0;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (source == PageSource::hugetlb) flags |= MAP_HUGETLB;
  void* p = mmap(nullptr, m.length + slack, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED)
    throw RuntimeError(fmt::format("mmap of {} MiB of {} huge pages failed: {}", m.length >> 20,
                                   to_string(source), std::strerror(errno)));
  auto* base = static_cast<std::byte*>(p);
  if (slack) {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    const std::size_t head = round_up(addr, page) - addr;
    if (head) munmap(base, head);
    if (slack - head) munmap(base + head + m.length, slack - head);
    base += head;
    if (madvise(base, m.length, MADV_HUGEPAGE) != 0) {
      const int err = errno;
      munmap(base, m.length);
      throw RuntimeError(fmt::format("madvise(MADV_HUGEPAGE) failed: {}", std::strerror(err)));
    }
  }
  m.data = base;
  return m;
}

void unmap_huge(const HugeMapping& m) {
  if (m.data) munmap(m.data, m.length);
}

std::uint64_t huge_backed(const HugeMapping& m) {
  return huge_bytes_in(slurp("/proc/self/smaps"), reinterpret_cast<std::uintptr_t>(m.data),
                       m.length);
}

}  // namespace xb
