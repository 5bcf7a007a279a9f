#pragma once
// `kv --model`: the prefill -> decode KV handoff of a model (kv_model.hpp)
// over the UCX engine. The first `prefill_ranks` ranks hold the prefill
// instance's TP shards (shard s on rank s modulo them), the others the decode
// instance's; a burst of requests is pulled by the decode ranks (RDMA reads)
// or pushed by the prefill ranks (writes), every request's descriptors
// posted at once and completed in order. Verified by a pattern of (request,
// page, layer, K/V, head, byte), outside timing.
#include <string>
#include <vector>

#include "core/record.hpp"
#include "family/kv/kv_model.hpp"
#include "runtime/runtime.hpp"

namespace xb {

namespace kv_field {
inline constexpr FieldKey<std::string> model{"model"};
inline constexpr FieldKey<std::int64_t> tp{"tp"};
inline constexpr FieldKey<std::int64_t> decode_tp{"decode_tp"};
inline constexpr FieldKey<std::int64_t> isl{"isl"};
inline constexpr FieldKey<std::int64_t> page_tokens{"page_tokens"};
inline constexpr FieldKey<std::string> layout{"layout"};
inline constexpr FieldKey<bool> fragment{"fragment"};
inline constexpr FieldKey<std::int64_t> burst{"burst"};
inline constexpr FieldKey<std::int64_t> descs{"descs"};            // per request
inline constexpr FieldKey<std::int64_t> desc_bytes{"desc_bytes"};  // the largest
inline constexpr FieldKey<std::int64_t> request_bytes{"request_bytes"};
inline constexpr FieldKey<double> handoff_p50_us{"handoff_p50_us"};
inline constexpr FieldKey<double> handoff_p99_us{"handoff_p99_us"};
inline constexpr FieldKey<double> handoff_max_us{"handoff_max_us"};
inline constexpr FieldKey<double> rank_gbps{"rank_gbps"};
inline constexpr FieldKey<double> ceiling_ratio{"ceiling_ratio"};
inline constexpr FieldKey<double> prefill_share{"prefill_share"};
inline constexpr FieldKey<std::int64_t> wrong_bytes{"wrong_bytes"};
}  // namespace kv_field

struct KvHandoffConfig {
  KvModel model;
  KvPlan plan;
  std::vector<int> isl{8192};
  std::vector<int> bursts{1};
  std::vector<bool> push{false};  // false: pull
  int prefill_ranks = 0;          // 0: half the ranks
  double prefill_tps = 0;         // tokens/s of the prefill, for the share (0: none)
  int iters = 5;
  int warmup = 1;
  bool check = true;
  // --check every: each timed round's decode shards poisoned before it and
  // checked after it (outside its time); the records get the rate.
  bool check_every = false;
  double timeout_s = 60;
  // Test seam (XFERBENCH_TEST_KV_CORRUPT=1): the last rank flips one byte it
  // received before the check.
  bool corrupt = false;
};

// UsageError (the same on every rank) for a plan the ranks cannot hold:
// TP that does not divide the heads or is divided by them, fewer than 2
// ranks, pools beyond memory.
void validate_handoff(Runtime& rt, const KvHandoffConfig& cfg);
// Records, identical on every rank: one per (isl, burst, op).
std::vector<Record> run_handoff(Runtime& rt, const KvHandoffConfig& cfg);

}  // namespace xb
