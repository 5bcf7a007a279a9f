#pragma once
// `xferbench ep`: mixture-of-experts dispatch and combine between ranks,
// host-initiated, through the backend's Communicator (MPI alltoallv on
// host, grouped ncclSend/ncclRecv on cuda, HcclAlltoAllV on ascend) or, on
// host, MPI one-sided puts into per-source slots with a flag (the shape of
// the low-latency kernels). The routing and the oracle are coll/ep_model.
// GPU-initiated kernels are a later method: a new EpMethod row.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "coll/communicator.hpp"
#include "coll/ep_model.hpp"
#include "core/record.hpp"
#include "core/registry.hpp"
#include "runtime/runtime.hpp"

namespace xb {

namespace ep_field {
inline constexpr FieldKey<std::string> phase{"phase"};  // dispatch, combine, roundtrip
inline constexpr FieldKey<std::string> library{"library"};
inline constexpr FieldKey<std::int64_t> tokens{"tokens"};
inline constexpr FieldKey<std::int64_t> hidden{"hidden"};
inline constexpr FieldKey<std::int64_t> topk{"topk"};
inline constexpr FieldKey<std::int64_t> experts{"experts"};
inline constexpr FieldKey<std::string> routing{"routing"};
inline constexpr FieldKey<std::string> dispatch_dtype{"dispatch_dtype"};
// Fresh entry: from a barrier, each rank's median, MAX (and MIN) over ranks.
inline constexpr FieldKey<double> fresh_us{"fresh_us"};
inline constexpr FieldKey<double> fresh_min_us{"fresh_min_us"};
// Chained: back-to-back round trips, each rank's median, median (and MIN) over ranks.
inline constexpr FieldKey<double> chained_us{"chained_us"};
inline constexpr FieldKey<double> chained_min_us{"chained_min_us"};
inline constexpr FieldKey<double> fresh_spread{"fresh_spread"};  // fresh MAX / MIN
inline constexpr FieldKey<double> payload_gbps{"payload_gbps"};
inline constexpr FieldKey<double> logical_gbps{"logical_gbps"};
inline constexpr FieldKey<std::int64_t> payload_bytes{"payload_bytes"};  // all ranks
inline constexpr FieldKey<std::int64_t> local_bytes{"local_bytes"};
inline constexpr FieldKey<std::int64_t> node_bytes{"node_bytes"};
inline constexpr FieldKey<std::int64_t> remote_bytes{"remote_bytes"};
inline constexpr FieldKey<std::int64_t> logical_bytes{"logical_bytes"};
inline constexpr FieldKey<std::vector<std::int64_t>> recv_counts{"recv_counts"};
inline constexpr FieldKey<std::vector<std::int64_t>> expert_rows{"expert_rows"};
inline constexpr FieldKey<double> imbalance{"imbalance"};
inline constexpr FieldKey<std::int64_t> wrong{"wrong"};
inline constexpr FieldKey<std::int64_t> trace_hash{"trace_hash"};
}  // namespace ep_field

enum class EpMethod { alltoallv, put };
const char* to_string(EpMethod m);
std::vector<EpMethod> parse_ep_methods(const std::string& list);

struct EpConfig {
  EpShape shape;  // ranks and tokens are set per run and per ladder step
  std::vector<int> tokens{1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  std::vector<EpMethod> methods{EpMethod::alltoallv};
  EpDtype combine = EpDtype::bf16;
  std::uint64_t seed = 0x5eed;
  int iters = 20;
  int warmup = 3;
  bool check = true;
  // --check every: as many checked round trips as timed ones, after them
  // (each alone, poisoned), the records with the rate and its interval.
  bool check_every = false;
  // Test seam (XFERBENCH_TEST_EP_CORRUPT=dispatch|combine): the last rank
  // flips one element of what it received before the check.
  std::string corrupt;
};

// The token ladders by name: decode 1..512, prefill 1024..8192, all.
std::vector<int> parse_token_ladder(const std::string& text);

// Same on every rank: the shape at the largest step (UsageError).
void validate_ep_config(int nranks, const EpConfig& cfg);
// The buffers of the largest step against this rank's memory: "" when they fit.
std::string ep_memory_shortfall(Backend& backend, Communicator& comm, const EpConfig& cfg);

void register_ep(Registry& registry);

// Every (method, tokens, phase) in order; records identical on every rank.
std::vector<Record> run_ep(Runtime& rt, Communicator& comm, Backend& backend, const EpConfig& cfg);

}  // namespace xb
