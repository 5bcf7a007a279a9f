#pragma once
// Mixture-of-experts expert parallelism (`xferbench ep`) as data: the shape
// of a layer's routing, the seeded trace of which experts every token of
// every rank selects, what dispatch and combine move between which ranks,
// and the exact contents of every message (the oracle). Pure: no MPI, no
// device; the family (family/ep/) moves the buffers this model lays out.
//
// Dispatch sends each token once to every rank that holds at least one of
// its experts (rank-deduplicated, DeepEP's normal mode); combine returns
// each selected expert's output row to the token's rank, where the rows are
// weighted and summed. Experts are spread evenly: expert e lives on rank
// e / (experts / ranks).
//
// Bytes per message, as DeepEP's tests count them: a dispatched token is
// `hidden + hidden/128*4 + 16` bytes in fp8 (values, one fp32 scale per 128
// values, a 16-byte header) or `2*hidden` in bf16; a combined row is
// `2*hidden` (bf16). DeepEP reports "logical" bytes: every selection of a
// rank's tokens times the message, local ones included, not deduplicated;
// the payload is what this layout moves.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "coll/skew.hpp"

namespace xb {

enum class EpDtype { bf16, fp8 };
const char* to_string(EpDtype t);
// "bf16" or "fp8"; UsageError naming `option` otherwise.
EpDtype parse_ep_dtype(const std::string& text, const char* option);

struct EpShape {
  int ranks = 1;
  int tokens = 128;  // per rank
  int hidden = 7168;
  int topk = 8;
  int experts = 256;
  Skew routing{};  // each expert's popularity (coll/skew.hpp over the experts)
  EpDtype dispatch = EpDtype::fp8;
};

inline constexpr int kEpMaxTopk = 32;  // keeps every weighted sum exact in bf16
// UsageError naming the option for a shape the model cannot take: experts
// not a multiple of ranks, top-k above the experts or kEpMaxTopk, fp8 with
// a hidden size that is not a multiple of 128, sizes out of range.
void validate_ep(const EpShape& s);

std::size_t dispatch_msg_bytes(const EpShape& s);  // per dispatched token
std::size_t combine_msg_bytes(const EpShape& s);   // per returned expert row (bf16)
inline int experts_per_rank(const EpShape& s) { return s.experts / s.ranks; }
inline int rank_of_expert(const EpShape& s, int expert) { return expert / experts_per_rank(s); }

// Which experts each token selects and with what weight, for every rank:
// the same on every rank by construction (a pure function of the shape and
// the seed), and checked across ranks by its hash.
class EpTrace {
 public:
  EpTrace(const EpShape& shape, std::uint64_t seed);
  // A given routing (tests): `experts` and `halves` (1: weight 0.5) at
  // [(rank * tokens + token) * topk + k].
  EpTrace(const EpShape& shape, std::vector<std::int32_t> experts,
          std::vector<std::uint8_t> halves);
  const EpShape& shape() const { return shape_; }
  int expert(int rank, int token, int k) const { return experts_[at(rank, token, k)]; }
  // 1 or 0.5: powers of two, so the weighted sums are exact.
  float weight(int rank, int token, int k) const { return halves_[at(rank, token, k)] ? 0.5F : 1; }
  // Whether token `token` of rank `src` has an expert on rank `dst`.
  bool goes_to(int src, int token, int dst) const;
  std::uint64_t hash() const;  // FNV-1a over the experts and weights

 private:
  std::size_t at(int rank, int token, int k) const {
    return (static_cast<std::size_t>(rank) * static_cast<std::size_t>(shape_.tokens) +
            static_cast<std::size_t>(token)) *
               static_cast<std::size_t>(shape_.topk) +
           static_cast<std::size_t>(k);
  }
  EpShape shape_;
  std::vector<std::int32_t> experts_;
  std::vector<std::uint8_t> halves_;
};

// Who sends whom what, sender-major ([s * ranks + d]).
struct EpPlan {
  int ranks = 1;
  std::vector<std::size_t> dispatch_tokens;  // tokens of s sent to d (deduplicated)
  std::vector<std::size_t> combine_rows;     // expert rows d... sent back: [e * ranks + s]
  std::size_t dispatch_recv(int d) const;    // tokens rank d receives
  std::size_t combine_recv(int s) const;     // rows rank s receives
  std::size_t dispatch_sent(int s) const;
  std::size_t combine_sent(int e) const;
};
EpPlan plan_ep(const EpTrace& trace);

// Bytes of one dispatch or one combine, over all ranks, split by where they
// travel: to the same rank, to another rank of the same node, to another
// node (`node_of[r]`: rank r's node index). `logical` is DeepEP's count
// (selections x message, local included).
struct EpBytes {
  double payload = 0, local = 0, node = 0, remote = 0, logical = 0;
};
EpBytes dispatch_bytes(const EpTrace& trace, const EpPlan& plan, std::span<const int> node_of);
EpBytes combine_bytes(const EpTrace& trace, const EpPlan& plan, std::span<const int> node_of);

// The largest receive count over the mean (1 = balanced).
double imbalance(std::span<const std::size_t> counts);

// The buffers, in bytes. Dispatch: rank s's send buffer holds, for each d
// in order, its tokens for d in token order; rank d's receive buffer, for
// each s in order, the tokens s sent it. Combine: rank e's send buffer holds,
// for each s, for each token of s dispatched to e, for each k whose expert
// is on e, that expert's output row; rank s receives them in the same order
// from each e. `counts`/`displs` are per peer, in bytes.
struct EpLayout {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
  std::size_t send_bytes() const;
  std::size_t recv_bytes() const;
};
EpLayout dispatch_layout(const EpTrace& trace, const EpPlan& plan, int rank);
EpLayout combine_layout(const EpTrace& trace, const EpPlan& plan, int rank);

// The contents: rank `rank`'s dispatch send buffer, the dispatch receive
// buffer it should get, its combine send buffer (expert outputs: small
// integers in bf16), and its tokens' combined rows (tokens x hidden
// float, the weighted sums).
void fill_dispatch_send(const EpTrace& trace, int rank, std::span<std::byte> out);
void expected_dispatch_recv(const EpTrace& trace, int rank, std::span<std::byte> out);
void fill_combine_send(const EpTrace& trace, int rank, std::span<std::byte> out);
// Weighs and sums the rows rank `rank` received (combine_layout's order)
// into `combined` (tokens x hidden); what the token's rank does on combine.
void reduce_combine(const EpTrace& trace, int rank, std::span<const std::byte> recv,
                    std::span<float> combined);
float expected_combined(const EpTrace& trace, int rank, int token, int h);

// Elements that differ: dispatch in elements of its dtype (fp8: bytes,
// scales and header included; bf16: 2-byte values), combine in output
// elements of the combined rows.
std::size_t dispatch_wrong(const EpTrace& trace, int rank, std::span<const std::byte> got);
std::size_t combine_wrong(const EpTrace& trace, int rank, std::span<const float> combined);

}  // namespace xb
