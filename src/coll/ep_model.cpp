#include "coll/ep_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "coll/fp16.hpp"
#include "core/error.hpp"
#include "core/pattern.hpp"

namespace xb {
namespace {

// [a * n + b] of a sender-major n x n table.
std::size_t pair_at(int a, int n, int b) {
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(n) + static_cast<std::size_t>(b);
}

std::uint64_t token_key(int rank, int token) {
  return splitmix64_mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(rank)) << 32) |
                        static_cast<std::uint32_t>(token));
}

// Word `word` of the dispatch message of token `token` of rank `src`.
std::uint64_t dispatch_word(std::uint64_t key, std::size_t word) {
  return splitmix64_mix(key + 0x9E3779B97F4A7C15ULL * (word + 1));
}

void fill_message(int src, int token, std::span<std::byte> out) {
  const std::uint64_t key = token_key(src, token);
  std::size_t i = 0;
  for (std::size_t w = 0; i < out.size(); ++w) {
    const std::uint64_t v = dispatch_word(key, w);
    const std::size_t n = std::min<std::size_t>(8, out.size() - i);
    std::memcpy(out.data() + i, &v, n);
    i += n;
  }
}

// Expert `e`'s output for token `token` of rank `src`, element `h`: -3..3.
int expert_output(int e, int src, int token, int h) {
  const std::uint64_t key =
      splitmix64_mix(token_key(src, token) ^ (static_cast<std::uint64_t>(e) << 40) ^ 0xC0FFEEULL);
  return static_cast<int>(splitmix64_mix(key + static_cast<std::uint64_t>(h)) % 7) - 3;
}

// Calls f(s, token) for each token rank `src` sends rank `dst`, in order.
template <class F>
void each_token_to(const EpTrace& tr, int src, int dst, F&& f) {
  for (int t = 0; t < tr.shape().tokens; ++t)
    if (tr.goes_to(src, t, dst)) f(t);
}

UsageError bad(const char* option, const std::string& why) {
  return UsageError(fmt::format("{}: {}", option, why));
}

}  // namespace

const char* to_string(EpDtype t) { return t == EpDtype::fp8 ? "fp8" : "bf16"; }

EpDtype parse_ep_dtype(const std::string& text, const char* option) {
  if (text == "fp8") return EpDtype::fp8;
  if (text == "bf16") return EpDtype::bf16;
  throw bad(option, fmt::format("'{}' is not a dispatch type (bf16 or fp8)", text));
}

void validate_ep(const EpShape& s) {
  if (s.ranks < 1) throw bad("ranks", "at least 1");
  if (s.tokens < 1 || s.tokens > 1 << 20)
    throw bad("--tokens", fmt::format("{} tokens per rank: 1..{}", s.tokens, 1 << 20));
  if (s.hidden < 1 || s.hidden > 1 << 16)
    throw bad("--hidden", fmt::format("{}: 1..{}", s.hidden, 1 << 16));
  if (s.dispatch == EpDtype::fp8 && s.hidden % 128 != 0)
    throw bad("--hidden", fmt::format("{} is not a multiple of 128: fp8 dispatch carries one "
                                      "scale per 128 values (use --dispatch-dtype bf16)",
                                      s.hidden));
  if (s.experts < 1 || s.experts > 1 << 16)
    throw bad("--experts", fmt::format("{}: 1..{}", s.experts, 1 << 16));
  if (s.experts % s.ranks != 0)
    throw bad("--experts",
              fmt::format("{} experts do not spread evenly over {} ranks", s.experts, s.ranks));
  if (s.topk < 1 || s.topk > std::min(s.experts, kEpMaxTopk))
    throw bad("--topk", fmt::format("{}: 1..{} (at most the experts, and {} keeps the combine's "
                                    "weighted sums exact)",
                                    s.topk, std::min(s.experts, kEpMaxTopk), kEpMaxTopk));
  if (s.routing.kind == Skew::Kind::hot && s.routing.hot >= s.experts)
    throw bad("--routing",
              fmt::format("hot:{}: K must be below the {} experts", s.routing.hot, s.experts));
}

std::size_t dispatch_msg_bytes(const EpShape& s) {
  const auto h = static_cast<std::size_t>(s.hidden);
  return s.dispatch == EpDtype::fp8 ? h + h / 128 * 4 + 16 : 2 * h;
}

std::size_t combine_msg_bytes(const EpShape& s) { return 2 * static_cast<std::size_t>(s.hidden); }

// Efraimidis-Spirakis weighted sampling without replacement: each expert
// gets the key log(u)/w, and the token takes the top-k keys (ties to the
// lower expert). A zero weight ranks last.
EpTrace::EpTrace(const EpShape& shape, std::uint64_t seed) : shape_(shape) {
  const std::vector<double> share = skew_shares(shape.routing, shape.experts);
  const std::size_t n = static_cast<std::size_t>(shape.ranks) *
                        static_cast<std::size_t>(shape.tokens) *
                        static_cast<std::size_t>(shape.topk);
  experts_.resize(n);
  halves_.resize(n);
  std::vector<std::pair<double, int>> keys(static_cast<std::size_t>(shape.experts));
  for (int r = 0; r < shape.ranks; ++r)
    for (int t = 0; t < shape.tokens; ++t) {
      const std::uint64_t key = splitmix64_mix(token_key(r, t) ^ seed);
      for (int e = 0; e < shape.experts; ++e) {
        const std::uint64_t x = splitmix64_mix(key + static_cast<std::uint64_t>(e));
        const double u = (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
        const double w = share[static_cast<std::size_t>(e)];
        keys[static_cast<std::size_t>(e)] = {
            w > 0 ? std::log(u) / w : -std::numeric_limits<double>::infinity(), e};
      }
      const auto k = static_cast<std::ptrdiff_t>(shape.topk);
      std::partial_sort(keys.begin(), keys.begin() + k, keys.end(),
                        [](const auto& a, const auto& b) {
                          return a.first != b.first ? a.first > b.first : a.second < b.second;
                        });
      for (int j = 0; j < shape.topk; ++j) {
        experts_[at(r, t, j)] = keys[static_cast<std::size_t>(j)].second;
        halves_[at(r, t, j)] = static_cast<std::uint8_t>((key >> (j % 64)) & 1U);
      }
    }
}

EpTrace::EpTrace(const EpShape& shape, std::vector<std::int32_t> experts,
                 std::vector<std::uint8_t> halves)
    : shape_(shape), experts_(std::move(experts)), halves_(std::move(halves)) {
  const auto n = static_cast<std::size_t>(shape.ranks) * static_cast<std::size_t>(shape.tokens) *
                 static_cast<std::size_t>(shape.topk);
  if (experts_.size() != n || halves_.size() != n)
    throw std::invalid_argument("EpTrace: one expert and one weight per selection");
}

bool EpTrace::goes_to(int src, int token, int dst) const {
  for (int k = 0; k < shape_.topk; ++k)
    if (rank_of_expert(shape_, expert(src, token, k)) == dst) return true;
  return false;
}

std::uint64_t EpTrace::hash() const {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  };
  for (std::size_t i = 0; i < experts_.size(); ++i)
    mix(static_cast<std::uint64_t>(experts_[i]) << 1 | halves_[i]);
  return h;
}

std::size_t EpPlan::dispatch_recv(int d) const {
  std::size_t n = 0;
  for (int s = 0; s < ranks; ++s) n += dispatch_tokens[pair_at(s, ranks, d)];
  return n;
}
std::size_t EpPlan::combine_recv(int s) const {
  std::size_t n = 0;
  for (int e = 0; e < ranks; ++e) n += combine_rows[pair_at(e, ranks, s)];
  return n;
}
std::size_t EpPlan::dispatch_sent(int s) const {
  std::size_t n = 0;
  for (int d = 0; d < ranks; ++d) n += dispatch_tokens[pair_at(s, ranks, d)];
  return n;
}
std::size_t EpPlan::combine_sent(int e) const {
  std::size_t n = 0;
  for (int s = 0; s < ranks; ++s) n += combine_rows[pair_at(e, ranks, s)];
  return n;
}

EpPlan plan_ep(const EpTrace& tr) {
  const EpShape& s = tr.shape();
  EpPlan p;
  p.ranks = s.ranks;
  const auto nn = static_cast<std::size_t>(s.ranks) * static_cast<std::size_t>(s.ranks);
  p.dispatch_tokens.assign(nn, 0);
  p.combine_rows.assign(nn, 0);
  std::vector<char> seen(static_cast<std::size_t>(s.ranks));
  for (int src = 0; src < s.ranks; ++src)
    for (int t = 0; t < s.tokens; ++t) {
      std::fill(seen.begin(), seen.end(), 0);
      for (int k = 0; k < s.topk; ++k) {
        const int d = rank_of_expert(s, tr.expert(src, t, k));
        ++p.combine_rows[pair_at(d, s.ranks, src)];
        if (!seen[static_cast<std::size_t>(d)]++) ++p.dispatch_tokens[pair_at(src, s.ranks, d)];
      }
    }
  return p;
}

namespace {

// `per_pair[s * n + d]` units of `unit` bytes sent s -> d, split by where.
EpBytes split_bytes(const std::vector<std::size_t>& per_pair, int n, std::size_t unit,
                    std::span<const int> node_of) {
  EpBytes b;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const double bytes =
          static_cast<double>(per_pair[pair_at(s, n, d)]) * static_cast<double>(unit);
      b.payload += bytes;
      const bool same_node =
          static_cast<std::size_t>(std::max(s, d)) < node_of.size() &&
          node_of[static_cast<std::size_t>(s)] == node_of[static_cast<std::size_t>(d)];
      (s == d ? b.local : same_node ? b.node : b.remote) += bytes;
    }
  return b;
}

}  // namespace

EpBytes dispatch_bytes(const EpTrace& tr, const EpPlan& p, std::span<const int> node_of) {
  const EpShape& s = tr.shape();
  EpBytes b = split_bytes(p.dispatch_tokens, p.ranks, dispatch_msg_bytes(s), node_of);
  b.logical =
      static_cast<double>(s.ranks) * s.tokens * s.topk * static_cast<double>(dispatch_msg_bytes(s));
  return b;
}

EpBytes combine_bytes(const EpTrace& tr, const EpPlan& p, std::span<const int> node_of) {
  const EpShape& s = tr.shape();
  EpBytes b = split_bytes(p.combine_rows, p.ranks, combine_msg_bytes(s), node_of);
  b.logical =
      static_cast<double>(s.ranks) * s.tokens * s.topk * static_cast<double>(combine_msg_bytes(s));
  return b;
}

double imbalance(std::span<const std::size_t> counts) {
  if (counts.empty()) return 1;
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (total <= 0) return 1;
  return static_cast<double>(*std::max_element(counts.begin(), counts.end())) /
         (total / static_cast<double>(counts.size()));
}

std::size_t EpLayout::send_bytes() const {
  return std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
}
std::size_t EpLayout::recv_bytes() const {
  return std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
}

namespace {

EpLayout layout_of(const std::vector<std::size_t>& per_pair, int n, int rank, std::size_t unit) {
  EpLayout l;
  std::size_t send = 0, recv = 0;
  for (int peer = 0; peer < n; ++peer) {
    l.send_displs.push_back(send);
    l.send_counts.push_back(per_pair[pair_at(rank, n, peer)] * unit);
    send += l.send_counts.back();
    l.recv_displs.push_back(recv);
    l.recv_counts.push_back(per_pair[pair_at(peer, n, rank)] * unit);
    recv += l.recv_counts.back();
  }
  return l;
}

}  // namespace

EpLayout dispatch_layout(const EpTrace& tr, const EpPlan& p, int rank) {
  return layout_of(p.dispatch_tokens, p.ranks, rank, dispatch_msg_bytes(tr.shape()));
}

EpLayout combine_layout(const EpTrace& tr, const EpPlan& p, int rank) {
  return layout_of(p.combine_rows, p.ranks, rank, combine_msg_bytes(tr.shape()));
}

void fill_dispatch_send(const EpTrace& tr, int rank, std::span<std::byte> out) {
  const std::size_t msg = dispatch_msg_bytes(tr.shape());
  std::size_t at = 0;
  for (int d = 0; d < tr.shape().ranks; ++d)
    each_token_to(tr, rank, d, [&](int t) {
      fill_message(rank, t, out.subspan(at, msg));
      at += msg;
    });
}

void expected_dispatch_recv(const EpTrace& tr, int rank, std::span<std::byte> out) {
  const std::size_t msg = dispatch_msg_bytes(tr.shape());
  std::size_t at = 0;
  for (int s = 0; s < tr.shape().ranks; ++s)
    each_token_to(tr, s, rank, [&](int t) {
      fill_message(s, t, out.subspan(at, msg));
      at += msg;
    });
}

void fill_combine_send(const EpTrace& tr, int rank, std::span<std::byte> out) {
  const EpShape& sh = tr.shape();
  std::size_t at = 0;
  for (int s = 0; s < sh.ranks; ++s)
    each_token_to(tr, s, rank, [&](int t) {
      for (int k = 0; k < sh.topk; ++k) {
        const int e = tr.expert(s, t, k);
        if (rank_of_expert(sh, e) != rank) continue;
        for (int h = 0; h < sh.hidden; ++h) {
          const std::uint16_t v = float_to_bf16(static_cast<float>(expert_output(e, s, t, h)));
          std::memcpy(out.data() + at, &v, 2);
          at += 2;
        }
      }
    });
}

void reduce_combine(const EpTrace& tr, int rank, std::span<const std::byte> recv,
                    std::span<float> combined) {
  const EpShape& sh = tr.shape();
  std::fill(combined.begin(), combined.end(), 0.0F);
  const auto hidden = static_cast<std::size_t>(sh.hidden);
  std::size_t at = 0;
  for (int e_rank = 0; e_rank < sh.ranks; ++e_rank)
    each_token_to(tr, rank, e_rank, [&](int t) {
      float* row = combined.data() + static_cast<std::size_t>(t) * hidden;
      for (int k = 0; k < sh.topk; ++k) {
        if (rank_of_expert(sh, tr.expert(rank, t, k)) != e_rank) continue;
        const float w = tr.weight(rank, t, k);
        for (std::size_t h = 0; h < hidden; ++h) {
          std::uint16_t v = 0;
          std::memcpy(&v, recv.data() + at, 2);
          row[h] += w * bf16_to_float(v);
          at += 2;
        }
      }
    });
}

float expected_combined(const EpTrace& tr, int rank, int token, int h) {
  float sum = 0;
  for (int k = 0; k < tr.shape().topk; ++k)
    sum += tr.weight(rank, token, k) *
           static_cast<float>(expert_output(tr.expert(rank, token, k), rank, token, h));
  return sum;
}

std::size_t dispatch_wrong(const EpTrace& tr, int rank, std::span<const std::byte> got) {
  std::vector<std::byte> want(got.size());
  expected_dispatch_recv(tr, rank, want);
  const std::size_t es = tr.shape().dispatch == EpDtype::fp8 ? 1 : 2;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); i += es)
    if (std::memcmp(got.data() + i, want.data() + i, std::min(es, got.size() - i)) != 0) ++wrong;
  return wrong;
}

std::size_t combine_wrong(const EpTrace& tr, int rank, std::span<const float> combined) {
  const EpShape& sh = tr.shape();
  std::size_t wrong = 0;
  for (int t = 0; t < sh.tokens; ++t)
    for (int h = 0; h < sh.hidden; ++h) {
      const float got = combined[static_cast<std::size_t>(t) * static_cast<std::size_t>(sh.hidden) +
                                 static_cast<std::size_t>(h)];
      // Exact: the sum is a multiple of 0.5 below 2^7 in magnitude, a bf16.
      if (!(got == expected_combined(tr, rank, t, h))) ++wrong;
    }
  return wrong;
}

}  // namespace xb
