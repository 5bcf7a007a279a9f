#pragma once
// Memory kinds, named where core, coll and the backends all see them, and the
// page-aligned host allocation they share. Header only: core knows no devices.
#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace xb {

// Where a buffer lives: on a device, in page-locked host memory, or in
// ordinary (pageable) host memory.
enum class MemKind { device, pinned, pageable };

constexpr const char* to_string(MemKind k) {
  switch (k) {
    case MemKind::device:
      return "device";
    case MemKind::pinned:
      return "pinned";
    case MemKind::pageable:
      return "pageable";
  }
  return "?";
}

inline constexpr std::size_t kPageBytes = 4096;

// `n` rounded up to whole pages; 0 stays 0.
constexpr std::size_t round_to_pages(std::size_t n) {
  return (n + kPageBytes - 1) / kPageBytes * kPageBytes;
}

// What alloc_pages(n) allocates: whole pages, at least one.
constexpr std::size_t page_alloc_size(std::size_t n) {
  return std::max(round_to_pages(n), kPageBytes);
}

// Page-aligned heap memory of page_alloc_size(n) bytes, uninitialised;
// nullptr when out of memory. Release it with std::free.
inline void* alloc_pages(std::size_t n) {
  return std::aligned_alloc(kPageBytes, page_alloc_size(n));
}

}  // namespace xb
