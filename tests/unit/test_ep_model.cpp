// coll/ep_model: the byte model, rank deduplication, the trace, the layout
// and the exact oracle of `xferbench ep`, against hand-computed cases.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "coll/ep_model.hpp"
#include "core/error.hpp"
#include "family/ep/ep_bench.hpp"

namespace xb {
namespace {

EpShape shape(int ranks, int tokens, int hidden, int topk, int experts, EpDtype d = EpDtype::bf16) {
  EpShape s;
  s.ranks = ranks;
  s.tokens = tokens;
  s.hidden = hidden;
  s.topk = topk;
  s.experts = experts;
  s.dispatch = d;
  return s;
}

// What a correct alltoallv does: rank s's block for d lands at d's slot for s.
std::vector<std::vector<std::byte>> deliver(const std::vector<std::vector<std::byte>>& send,
                                            const std::vector<EpLayout>& l) {
  std::vector<std::vector<std::byte>> recv;
  recv.reserve(l.size());
  for (const EpLayout& x : l) recv.emplace_back(x.recv_bytes());
  for (std::size_t s = 0; s < l.size(); ++s)
    for (std::size_t d = 0; d < l.size(); ++d) {
      EXPECT_EQ(l[s].send_counts[d], l[d].recv_counts[s]);
      std::memcpy(recv[d].data() + l[d].recv_displs[s], send[s].data() + l[s].send_displs[d],
                  l[s].send_counts[d]);
    }
  return recv;
}

TEST(EpModel, MessageBytesAreDeepEpsCounts) {
  // The published low-latency defaults: hidden 7168, fp8 dispatch.
  EXPECT_EQ(dispatch_msg_bytes(shape(1, 128, 7168, 8, 256, EpDtype::fp8)), 7168u + 56 * 4 + 16);
  EXPECT_EQ(dispatch_msg_bytes(shape(1, 128, 7168, 8, 256, EpDtype::fp8)), 7408u);
  EXPECT_EQ(dispatch_msg_bytes(shape(1, 128, 4096, 8, 256, EpDtype::fp8)), 4096u + 32 * 4 + 16);
  EXPECT_EQ(dispatch_msg_bytes(shape(1, 128, 7168, 8, 256, EpDtype::bf16)), 2u * 7168);
  EXPECT_EQ(combine_msg_bytes(shape(1, 128, 7168, 8, 256, EpDtype::fp8)), 2u * 7168);
}

TEST(EpModel, LogicalBytesAreEverySelectionTimesTheMessage) {
  const EpShape s = shape(4, 128, 7168, 8, 256, EpDtype::fp8);
  const EpTrace tr(s, 7);
  const EpPlan p = plan_ep(tr);
  const std::vector<int> one_node(4, 0);
  EXPECT_DOUBLE_EQ(dispatch_bytes(tr, p, one_node).logical, 4.0 * 128 * 8 * 7408);
  EXPECT_DOUBLE_EQ(combine_bytes(tr, p, one_node).logical, 4.0 * 128 * 8 * 14336);
}

// 2 ranks, 4 experts (0,1 on rank 0; 2,3 on rank 1), top-2, 2 tokens each.
EpTrace hand_trace() {
  const EpShape s = shape(2, 2, 8, 2, 4);
  // rank 0: token 0 -> {0, 1} (rank 0 only), token 1 -> {1, 2} (both ranks)
  // rank 1: token 0 -> {3, 2} (rank 1 only), token 1 -> {0, 3} (both ranks)
  return EpTrace(s, {0, 1, 1, 2, 3, 2, 0, 3}, {0, 1, 1, 0, 0, 0, 1, 1});
}

TEST(EpModel, DispatchIsDeduplicatedByRankAndCombineReturnsEveryExpertRow) {
  const EpTrace tr = hand_trace();
  const EpPlan p = plan_ep(tr);
  // dispatch tokens [s * 2 + d]: rank 0 sends 2 to itself, 1 to rank 1;
  // rank 1 sends 1 to rank 0, 2 to itself.
  EXPECT_EQ(p.dispatch_tokens, (std::vector<std::size_t>{2, 1, 1, 2}));
  // combine rows [e * 2 + s]: rank 0's experts return 3 rows to rank 0
  // (0, 1 of token 0; 1 of token 1) and 1 to rank 1 (0 of its token 1).
  EXPECT_EQ(p.combine_rows, (std::vector<std::size_t>{3, 1, 1, 3}));
  EXPECT_EQ(p.dispatch_recv(0), 3u);
  EXPECT_EQ(p.combine_sent(1), 4u);
  EXPECT_EQ(p.combine_recv(0), 4u);  // every selection of rank 0's tokens comes back
  // Where the bytes go, on one node and on two.
  const std::vector<int> one{0, 0}, two{0, 1};
  const EpBytes a = dispatch_bytes(tr, p, one);
  EXPECT_DOUBLE_EQ(a.payload, 6 * 16.0);  // bf16, hidden 8: 16 B per token
  EXPECT_DOUBLE_EQ(a.local, 4 * 16.0);
  EXPECT_DOUBLE_EQ(a.node, 2 * 16.0);
  EXPECT_DOUBLE_EQ(a.remote, 0);
  const EpBytes b = combine_bytes(tr, p, two);
  EXPECT_DOUBLE_EQ(b.local, 6 * 16.0);
  EXPECT_DOUBLE_EQ(b.node, 0);
  EXPECT_DOUBLE_EQ(b.remote, 2 * 16.0);
  EXPECT_DOUBLE_EQ(b.logical, 8 * 16.0);
  // Layouts: rank 1 receives rank 0's token 1 first, then its own two.
  const EpLayout l1 = dispatch_layout(tr, p, 1);
  EXPECT_EQ(l1.recv_counts, (std::vector<std::size_t>{16, 32}));
  EXPECT_EQ(l1.recv_displs, (std::vector<std::size_t>{0, 16}));
  EXPECT_EQ(l1.send_counts, (std::vector<std::size_t>{16, 32}));
}

TEST(EpModel, CombinedRowsAreTheWeightedSumsExactly) {
  const EpTrace tr = hand_trace();
  const EpPlan p = plan_ep(tr);
  std::vector<EpLayout> l{combine_layout(tr, p, 0), combine_layout(tr, p, 1)};
  std::vector<std::vector<std::byte>> send;
  for (int r = 0; r < 2; ++r) {
    send.emplace_back(l[static_cast<std::size_t>(r)].send_bytes());
    fill_combine_send(tr, r, send.back());
  }
  const auto recv = deliver(send, l);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> combined(2 * 8);
    reduce_combine(tr, r, recv[static_cast<std::size_t>(r)], combined);
    EXPECT_EQ(combine_wrong(tr, r, combined), 0u);
    // Weights 1 and 0.5 over values -3..3: multiples of 0.5, not all zero.
    std::set<float> seen(combined.begin(), combined.end());
    EXPECT_GT(seen.size(), 2u);
    for (float v : combined) EXPECT_EQ(v * 2, static_cast<float>(static_cast<int>(v * 2)));
  }
}

TEST(EpModel, TheOracleFindsACorruptedElementAndSwappedBlocks) {
  const EpShape s = shape(3, 16, 256, 4, 12, EpDtype::fp8);
  const EpTrace tr(s, 42);
  const EpPlan p = plan_ep(tr);
  std::vector<EpLayout> dl, cl;
  std::vector<std::vector<std::byte>> ds, cs;
  for (int r = 0; r < 3; ++r) {
    dl.push_back(dispatch_layout(tr, p, r));
    cl.push_back(combine_layout(tr, p, r));
    ds.emplace_back(dl.back().send_bytes());
    cs.emplace_back(cl.back().send_bytes());
    fill_dispatch_send(tr, r, ds.back());
    fill_combine_send(tr, r, cs.back());
  }
  auto dr = deliver(ds, dl);
  auto cr = deliver(cs, cl);
  for (int r = 0; r < 3; ++r) {
    const auto q = static_cast<std::size_t>(r);
    EXPECT_EQ(dispatch_wrong(tr, r, dr[q]), 0u);
    std::vector<float> combined(16 * 256);
    reduce_combine(tr, r, cr[q], combined);
    EXPECT_EQ(combine_wrong(tr, r, combined), 0u);
  }
  // One flipped byte of a dispatched token: one wrong element (fp8: bytes).
  dr[1][5] ^= std::byte{1};
  EXPECT_EQ(dispatch_wrong(tr, 1, dr[1]), 1u);
  // One flipped bit of a returned bf16 row: that token's element is wrong.
  cr[2][1] ^= std::byte{0x40};
  std::vector<float> combined(16 * 256);
  reduce_combine(tr, 2, cr[2], combined);
  EXPECT_EQ(combine_wrong(tr, 2, combined), 1u);
  // Rank 0's blocks from two sources swapped: most of them differ.
  auto swapped = dr[0];
  ASSERT_GT(dl[0].recv_counts[1], 0u);
  ASSERT_GT(dl[0].recv_counts[2], 0u);
  std::memcpy(swapped.data(), dr[0].data() + dl[0].recv_displs[1],
              std::min(dl[0].recv_counts[0], dl[0].recv_counts[1]));
  EXPECT_GT(dispatch_wrong(tr, 0, swapped), dl[0].recv_counts[0] / 2);
}

TEST(EpModel, TheTraceIsAPureFunctionOfTheShapeAndSeed) {
  const EpShape s = shape(4, 64, 128, 8, 64);
  const EpTrace a(s, 5), b(s, 5), c(s, 6);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a.hash(), c.hash());
  // A token routes the same at every step of the ladder.
  EpShape longer = s;
  longer.tokens = 128;
  const EpTrace d(longer, 5);
  for (int r = 0; r < 4; ++r)
    for (int t = 0; t < 64; ++t)
      for (int k = 0; k < 8; ++k) {
        EXPECT_EQ(a.expert(r, t, k), d.expert(r, t, k));
        EXPECT_EQ(a.weight(r, t, k), d.weight(r, t, k));
      }
  // Top-k experts are distinct and in range.
  for (int r = 0; r < 4; ++r)
    for (int t = 0; t < 64; ++t) {
      std::set<int> e;
      for (int k = 0; k < 8; ++k) e.insert(a.expert(r, t, k));
      EXPECT_EQ(e.size(), 8u);
      EXPECT_GE(*e.begin(), 0);
      EXPECT_LT(*e.rbegin(), 64);
    }
}

TEST(EpModel, SkewedRoutingLoadsSomeRanksMore) {
  EpShape s = shape(4, 512, 128, 8, 256);
  const EpPlan flat = plan_ep(EpTrace(s, 9));
  s.routing = parse_skew("zipf:1.2", "--routing");
  const EpPlan zipf = plan_ep(EpTrace(s, 9));
  std::vector<std::size_t> a, b;
  for (int r = 0; r < 4; ++r) {
    a.push_back(flat.combine_sent(r));
    b.push_back(zipf.combine_sent(r));
  }
  EXPECT_LT(imbalance(a), 1.05);
  EXPECT_GT(imbalance(b), 1.1);
  EXPECT_DOUBLE_EQ(imbalance(std::vector<std::size_t>{2, 2, 2, 6}), 2.0);
}

TEST(EpModel, ShapesTheModelCannotTakeAreUsageErrors) {
  EXPECT_THROW(validate_ep(shape(3, 8, 128, 2, 8)), UsageError);  // 8 experts over 3 ranks
  EXPECT_THROW(validate_ep(shape(2, 8, 100, 2, 8, EpDtype::fp8)), UsageError);  // 100 % 128
  EXPECT_NO_THROW(validate_ep(shape(2, 8, 100, 2, 8, EpDtype::bf16)));
  EXPECT_THROW(validate_ep(shape(2, 8, 128, 9, 8)), UsageError);    // top-9 of 8
  EXPECT_THROW(validate_ep(shape(2, 8, 128, 33, 64)), UsageError);  // above kEpMaxTopk
  EXPECT_THROW(parse_ep_dtype("fp16", "--dispatch-dtype"), UsageError);
  EXPECT_THROW(parse_skew("zipf:0", "--routing"), UsageError);
}

TEST(EpOptions, LaddersMethodsAndLists) {
  EXPECT_EQ(parse_token_ladder("decode").front(), 1);
  EXPECT_EQ(parse_token_ladder("decode").back(), 512);
  EXPECT_EQ(parse_token_ladder("prefill"), (std::vector<int>{1024, 2048, 4096, 8192}));
  EXPECT_EQ(parse_token_ladder("128,1,128"), (std::vector<int>{128, 1}));
  EXPECT_THROW(parse_token_ladder("0"), UsageError);
  EXPECT_THROW(parse_token_ladder("8,"), UsageError);
  EXPECT_EQ(parse_ep_methods("all").size(), 2u);
  EXPECT_EQ(parse_ep_methods("put,put").size(), 1u);
  EXPECT_THROW(parse_ep_methods("rdma"), UsageError);
}

}  // namespace
}  // namespace xb
