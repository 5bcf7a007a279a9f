#pragma once
// `xferbench copy`: the copy patterns (copy_plan.hpp: h2d, d2h, d2d, p2p and
// the concurrent ones) by the dma engine or by cores, over a fixed size or a
// sweep (ascend-dmi --bw, nvbandwidth CE/SM).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/corruption.hpp"
#include "core/record.hpp"
#include "core/registry.hpp"
#include "core/sweep.hpp"
#include "family/copy/copy_plan.hpp"

namespace xb {

// The field copy adds to its records when --threads is a list.
namespace copy_field {
inline constexpr FieldKey<std::int64_t> threads{"threads"};  // cores (host) or blocks (cuda)
inline constexpr FieldKey<std::string> link{"link"};         // p2p: the backend's link_type
// d2d with --d2d-count read+write: "read+write" (its GB/s count each byte twice)
inline constexpr FieldKey<std::string> counted{"counted"};
}  // namespace copy_field

struct CopyConfig {
  // Pattern keys (copy_patterns()), in the order they run.
  std::vector<std::string> cases{copy_case::h2d, copy_case::d2h, copy_case::d2d};
  std::optional<int> device;    // -d: one device (h2d/d2h/d2d, the one of all_to_one/one_to_all)
  std::optional<int> src, dst;  // --src/--dst: one p2p pair
  bool bidir = false;           // also both directions at once, where the pattern has it
  std::vector<P2pOp> p2p_ops{P2pOp::write};  // --p2p-op: who drives device-to-device copies
  std::vector<Method> methods{Method::dma, Method::core};
  std::vector<Bytes> sizes;      // h2d/d2h/d2d
  std::vector<Bytes> p2p_sizes;  // p2p (one fixed size by default, as ascend-dmi)
  int warmup = 5;
  int iters = 5;       // h2d/d2h/d2d
  int p2p_iters = 20;  // p2p
  bool check = true;
  // --check every: each timed iteration checked (core/corruption.hpp), the
  // records with its fields; else the last iteration only.
  bool check_every = false;
  // --d2d-count read+write: d2d's GB/s count the bytes read and the bytes
  // written, as ascend-dmi's d2d does (twice the bytes-once figure).
  bool d2d_read_write = false;
  CopierOptions copier;
  // --threads as a list: one run per value, each record with a `threads`
  // field; empty: copier.threads alone, no field.
  std::vector<int> thread_counts;
  MemKind host_mem = MemKind::pinned;
  bool huge_pages = false;  // --host-mem huge: pinned, on huge pages (family/host_pages.hpp)
  std::string waive_all;    // why every group is waived (huge pages unavailable), or ""
};

// Declares copy.<pattern> for every row of copy_patterns(), with its filter.
void register_copy(Registry& registry);

// Checks the config against the backend before anything runs; throws
// UsageError for an unknown pattern, an option the patterns asked for do not
// take, a device out of range, too few devices for all_to_one/one_to_all, or
// sizes larger than free memory.
void validate_copy(const Backend& backend, const CopyConfig& cfg);

// A buffer's first n bytes through the backend, outside timing (staged in
// 8 MiB pieces): the pattern of `seed`, a poison byte (0x5A), and the offset
// of the first byte that differs from the pattern, if any.
void fill_buffer(Backend& b, Buffer& buf, Bytes n, std::uint64_t seed);
void poison_buffer(Backend& b, Buffer& buf, Bytes n);
std::optional<Bytes> verify_buffer(Backend& b, const Buffer& buf, Bytes n, std::uint64_t seed);
// Every wrong byte of the buffer against the pattern: the first as iteration
// `iter`'s first bad at `where`, with the count; nullopt when all match.
std::optional<FirstBad> check_buffer(Backend& b, const Buffer& buf, Bytes n, std::uint64_t seed,
                                     std::int64_t iter, const std::string& where);

// Runs every group; never throws for one that fails at run time (it
// becomes a `failed` record). Records come in group, method, size order,
// each size's legs first and then the group's sum.
std::vector<Record> run_copy(Backend& backend, const Registry& registry, const CopyConfig& cfg,
                             const Progress& progress = {});

}  // namespace xb
