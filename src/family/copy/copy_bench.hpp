#pragma once
// `xferbench copy`: h2d, d2h, d2d and p2p bandwidth by the dma engine or by
// cores, over a fixed size or a sweep (ascend-dmi --bw, nvbandwidth CE/SM).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "core/registry.hpp"
#include "core/sweep.hpp"

namespace xb {

// The field copy adds to its records when --threads is a list.
namespace copy_field {
inline constexpr FieldKey<std::int64_t> threads{"threads"};  // cores (host) or blocks (cuda)
}  // namespace copy_field

enum class CopyCase { h2d, d2h, d2d, p2p };
const char* to_string(CopyCase c);

struct CopyConfig {
  std::vector<CopyCase> cases{CopyCase::h2d, CopyCase::d2h, CopyCase::d2d};
  std::optional<int> device;    // -d: one device for h2d/d2h/d2d
  std::optional<int> src, dst;  // --src/--dst: one p2p pair
  bool bidir = false;           // p2p also both directions at once
  std::vector<Method> methods{Method::dma, Method::core};
  std::vector<Bytes> sizes;      // h2d/d2h/d2d
  std::vector<Bytes> p2p_sizes;  // p2p (fixed by default, like ascend-dmi)
  int warmup = 5;
  int iters = 5;       // h2d/d2h/d2d
  int p2p_iters = 20;  // p2p
  bool check = true;
  CopierOptions copier;
  // --threads as a list: one run per value, each record with a `threads`
  // field; empty: copier.threads alone, no field.
  std::vector<int> thread_counts;
  MemKind host_mem = MemKind::pinned;
};

// Declares copy.h2d, copy.d2h, copy.d2d and copy.p2p with their filters.
void register_copy(Registry& registry);

// Checks the config against the backend before anything runs; throws
// UsageError for a device out of range or sizes larger than free memory.
void validate_copy(const Backend& backend, const CopyConfig& cfg);

// A buffer's first n bytes through the backend, outside timing (staged in
// 8 MiB pieces): the pattern of `seed`, a poison byte (0x5A), and the offset
// of the first byte that differs from the pattern, if any.
void fill_buffer(Backend& b, Buffer& buf, Bytes n, std::uint64_t seed);
void poison_buffer(Backend& b, Buffer& buf, Bytes n);
std::optional<Bytes> verify_buffer(Backend& b, const Buffer& buf, Bytes n, std::uint64_t seed);

// Runs every case; never throws for a case that fails at run time (it
// becomes a `failed` record). Records come in case, pair, method, size order.
std::vector<Record> run_copy(Backend& backend, const Registry& registry, const CopyConfig& cfg,
                             const Progress& progress = {});

}  // namespace xb
