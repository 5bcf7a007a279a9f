// family/kv/kv_model: the KV cache of a model on tensor-parallel shards, its
// pages and the descriptors of a prefill -> decode handoff, against
// hand-computed cases and kvbench's published DeepSeek descriptor.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "core/error.hpp"
#include "family/kv/kv_model.hpp"

namespace xb {
namespace {

KvModel model(const std::string& name) { return find_kv_model(kv_model_presets(), name); }

std::vector<KvDesc> descs(const KvModel& m, const KvPlan& p, int isl, bool frag = false) {
  const int pages = pages_of(isl, p.page_tokens);
  const KvPool src(1, pages, m.layers, frag, 1), dst(1, pages, m.layers, frag, 2);
  return request_descs(m, p, isl, 0, src, dst);
}

TEST(KvModel, Llama70bAtTp8MovesPagesOf640KiBAcrossLayersOr8KiBPerLayer) {
  const KvModel m = model("llama-3.1-70b");
  KvPlan p;
  p.tp = p.decode_tp = 8;
  p.page_tokens = 16;
  EXPECT_EQ(unit_bytes(m, 8, 16), 8u * 1024);  // 2 x 1 head x 128 x 2 B x 16 tokens
  const KvRequestShape block = shape_of(descs(m, p, 8192));
  EXPECT_EQ(block.largest, 640u * 1024);  // 80 layers x 8 KiB
  EXPECT_EQ(block.smallest, 640u * 1024);
  EXPECT_EQ(block.descs, 8u * 512);  // every shard, every page
  // The request's bytes: the whole KV of 8192 tokens, 80 x 2 x 8 x 128 x 2 B per token.
  EXPECT_EQ(block.bytes, 80ULL * 2 * 8 * 128 * 2 * 8192);
  p.layer_layout = true;
  const KvRequestShape layer = shape_of(descs(m, p, 8192));
  EXPECT_EQ(layer.largest, 8u * 1024);
  EXPECT_EQ(layer.smallest, 8u * 1024);
  EXPECT_EQ(layer.descs, 80 * block.descs);
  EXPECT_EQ(layer.bytes, block.bytes);
}

TEST(KvModel, DeepSeekMlaIsNotSplitByTpAndMatchesKvbenchsDescriptor) {
  KvModel m = model("deepseek-v3");
  m.dtype_bytes = kv_dtype_bytes("fp8");
  KvPlan p;
  p.pp = 8;  // kvbench: DeepSeek-R1 fp8, TP1 PP8, page 256
  p.page_tokens = 256;
  EXPECT_EQ(stage_layers(m, p), 8);
  const KvRequestShape s = shape_of(descs(m, p, 4096));
  EXPECT_EQ(s.largest, 1179648u);         // 576 x 1 B x 256 tokens x 8 layers
  EXPECT_EQ(s.smallest, 576u * 256 * 5);  // the last stage: 61 - 7 x 8 = 5 layers
  EXPECT_EQ(s.descs, 16u * 8);            // 16 pages x 8 stages
  // MLA at TP 4: every shard holds (and receives) the whole latent.
  p = KvPlan{};
  p.tp = p.decode_tp = 4;
  EXPECT_EQ(unit_bytes(m, 4, 16), unit_bytes(m, 1, 16));
  EXPECT_EQ(shape_of(descs(m, p, 64)).bytes, 4ULL * 61 * 576 * 64);
}

// Which (K or V, head, byte within the head's page) a byte of a shard's pool holds, for
// an unfragmented pool of one request: unit = page * layers + layer.
std::tuple<int, int, int, std::uint64_t> what_at(const KvModel& m, int tp, int shard,
                                                 int page_tokens, std::uint64_t off) {
  const std::uint64_t unit = unit_bytes(m, tp, page_tokens);
  const std::uint64_t in = off % unit;
  const std::uint64_t half = unit / 2;
  const std::uint64_t head_page = static_cast<std::uint64_t>(page_tokens) * m.head_dim *
                                  static_cast<std::uint64_t>(m.dtype_bytes);
  const int kv = static_cast<int>(in / half);
  const int head = head_slice(m, tp, shard).first + static_cast<int>((in % half) / head_page);
  return {static_cast<int>(off / unit), kv, head, (in % half) % head_page};
}

void expect_heads_land_right(int tp, int decode_tp) {
  const KvModel m = model("llama-3.1-70b");
  KvPlan p;
  p.tp = tp;
  p.decode_tp = decode_tp;
  p.page_tokens = 16;
  const int isl = 64;
  const auto d = descs(m, p, isl);
  const std::uint64_t du = unit_bytes(m, decode_tp, 16);
  std::map<int, std::uint64_t> got;  // bytes each decode shard received
  const std::uint64_t head_page = 16ULL * 128 * 2;
  for (const KvDesc& x : d) {
    ASSERT_EQ(x.bytes % head_page, 0u);
    for (std::uint64_t b = 0; b < x.bytes; b += head_page) {
      const auto s = what_at(m, tp, x.src_shard, 16, x.src_off + b);
      const auto t = what_at(m, decode_tp, x.dst_shard, 16, x.dst_off + b);
      EXPECT_EQ(s, t) << "prefill shard " << x.src_shard << " -> decode shard " << x.dst_shard;
    }
    got[x.dst_shard] += x.bytes;
  }
  ASSERT_EQ(got.size(), static_cast<std::size_t>(decode_tp));
  for (const auto& [shard, bytes] : got)
    EXPECT_EQ(bytes, static_cast<std::uint64_t>(pages_of(isl, 16)) * 80 * du) << shard;
}

TEST(KvModel, HeterogeneousTpMovesEachHeadSliceToTheShardThatHoldsIt) {
  expect_heads_land_right(8, 4);  // two prefill shards fill each decode shard
  expect_heads_land_right(4, 8);  // each decode shard takes half of a prefill shard
  expect_heads_land_right(2, 8);
  expect_heads_land_right(16, 8);  // 16 shards over 8 heads: each head held twice
  expect_heads_land_right(8, 16);
}

TEST(KvModel, HeadSlicesAndReplication) {
  const KvModel m = model("llama-3.1-8b");
  EXPECT_EQ(head_slice(m, 2, 1).first, 4);
  EXPECT_EQ(head_slice(m, 2, 1).count, 4);
  EXPECT_EQ(head_slice(m, 16, 3).first, 1);  // shards 2 and 3 share head 1
  EXPECT_EQ(head_slice(m, 16, 3).count, 1);
  EXPECT_EQ(unit_bytes(m, 16, 16), unit_bytes(m, 8, 16));
}

TEST(KvModel, AFragmentedPoolRaisesDescriptorsNotBytes) {
  const KvModel m = model("qwen3-32b");
  KvPlan p;
  p.tp = p.decode_tp = 2;
  const KvRequestShape flat = shape_of(descs(m, p, 2048));
  const KvRequestShape frag = shape_of(descs(m, p, 2048, true));
  EXPECT_EQ(flat.descs, 2u * 128);         // a page across its 64 layers per shard
  EXPECT_GT(frag.descs, 30 * flat.descs);  // nearly every (page, layer) on its own
  EXPECT_LE(frag.descs, 64 * flat.descs);
  EXPECT_EQ(frag.bytes, flat.bytes);
  // The same seed draws the same pool; another seed another.
  EXPECT_EQ(KvPool(2, 8, 4, true, 7).slot(1, 3, 2), KvPool(2, 8, 4, true, 7).slot(1, 3, 2));
}

TEST(KvModel, SlidingLayersMoveOnlyTheirWindow) {
  const KvModel m = model("gpt-oss-120b");
  KvPlan p;
  p.page_tokens = 16;
  const int isl = 4096;
  // 18 full layers of 256 pages, 18 sliding ones of the last 8 pages (128 tokens).
  const std::uint64_t unit = unit_bytes(m, 1, 16);
  EXPECT_EQ(unit, 2u * 8 * 64 * 2 * 16);
  EXPECT_EQ(shape_of(descs(m, p, isl)).bytes, (18ULL * 256 + 18ULL * 8) * unit);
}

TEST(KvModel, ModelFilesAddOrReplacePresets) {
  const auto extra = kv_models_from_json(
      R"([{"name": "tiny", "layers": 2, "kv_heads": 2, "head_dim": 16, "dtype": "fp8"},
          {"name": "llama-3.1-8b", "layers": 3, "kv_heads": 8, "head_dim": 128}])",
      "m.json");
  std::vector<KvModel> all = kv_model_presets();
  all.insert(all.end(), extra.begin(), extra.end());
  EXPECT_EQ(find_kv_model(all, "tiny").dtype_bytes, 1);
  EXPECT_EQ(find_kv_model(all, "llama-3.1-8b").layers, 3);
  EXPECT_THROW(find_kv_model(all, "gpt-5"), UsageError);
  EXPECT_THROW(kv_models_from_json("{}", "m.json"), UsageError);
  EXPECT_THROW(kv_models_from_json(R"([{"name": "x", "layers": 2}])", "m.json"), UsageError);
  EXPECT_THROW(kv_models_from_json(R"([{"name": "x", "layers": 2, "kv_heads": 2, "head_dim": 8,
                                        "dtype": "int4"}])",
                                   "m.json"),
               UsageError);
  EXPECT_THROW(kv_models_from_json("[1,", "m.json"), UsageError);
}

}  // namespace
}  // namespace xb
