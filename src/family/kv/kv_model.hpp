#pragma once
// The KV cache of a model as data, for `kv --model`: what one token of one
// layer holds on one tensor-parallel shard, how a prompt's pages are laid
// out on each side of a prefill -> decode handoff, and the descriptors that
// move them. Pure: no engine, no MPI; kv_bench moves what this lays out.
//
// A shard's memory (vLLM's HND layout, a page the unit): page after page,
// each page the layers its pipeline stage holds, each layer's unit K then V
// (GQA: [head][token][dim] each) or one latent tensor (MLA: [token][dim]).
// `block` layout: one descriptor per page across its layers; `layer`: one
// per page and layer. Fragmented (a seeded random slot for every page and
// layer unit in a pool, on each side): descriptors are the runs of units
// adjacent on both sides, never across pages.
#include <cstdint>
#include <string>
#include <vector>

namespace xb {

struct KvModel {
  std::string name;
  int layers = 0;
  int kv_heads = 0;  // GQA key/value heads (0 with MLA)
  int head_dim = 0;
  int latent = 0;  // MLA: elements per token and layer, the same on every shard (0: GQA)
  int dtype_bytes = 2;
  int window = 0;         // sliding window in tokens (0: none)
  int window_layers = 0;  // how many layers slide (the others attend to everything)
  std::string source;     // where the numbers come from
};

// The built-in presets (llama-3.1-8b, llama-3.1-70b, qwen3-32b, deepseek-v3,
// gpt-oss-120b), then those of a JSON file (`--model-file`: a list of
// objects with the fields above), which may replace a preset by name.
const std::vector<KvModel>& kv_model_presets();
std::vector<KvModel> kv_models_from_json(const std::string& text, const std::string& what);
// The model named `name` (UsageError listing the names otherwise).
KvModel find_kv_model(const std::vector<KvModel>& models, const std::string& name);
int kv_dtype_bytes(const std::string& dtype);  // fp8 1, bf16/fp16 2, fp32 4; UsageError

struct KvPlan {
  int tp = 1;         // prefill tensor parallelism
  int decode_tp = 1;  // decode tensor parallelism
  int pp = 1;         // prefill pipeline stages (each holds layers / pp, rounded up)
  int page_tokens = 16;
  bool layer_layout = false;  // one descriptor per page and layer
  bool fragment = false;
  std::uint64_t seed = 0x6B5;
};

// Heads shard s of `tp` holds: [first, first + count). With more shards than
// heads, each holds one head, shared by tp / kv_heads shards (vLLM's rule).
struct HeadSlice {
  int first = 0, count = 0;
};
HeadSlice head_slice(const KvModel& m, int tp, int shard);

// Layers of the first pipeline stage (the one the descriptors describe).
int stage_layers(const KvModel& m, const KvPlan& p);
// Bytes of one page of one layer on one shard of `tp`.
std::uint64_t unit_bytes(const KvModel& m, int tp, int page_tokens);
// Pages a prompt of `isl` tokens fills, and the pages a sliding layer keeps.
int pages_of(int isl, int page_tokens);
// The first page layer `layer` keeps of a prompt of `isl` tokens: 0, or for
// a sliding layer the page holding the window's first token.
int kv_first_page(const KvModel& m, int layer, int isl, int page_tokens);

// One transfer: from a prefill shard to a decode shard, offsets in each
// shard's pool.
struct KvDesc {
  int src_shard = 0, dst_shard = 0;
  std::uint64_t src_off = 0, dst_off = 0, bytes = 0;
};

// Where each (page, layer) unit of request `req` sits in a shard's pool, in
// units: contiguous per request (page-major, the stage's layers in order),
// or a seeded permutation of the pool's slots when fragmented. `side` 0 is
// prefill, 1 decode (each side its own permutation).
class KvPool {
 public:
  KvPool(int requests, int pages, int layers, bool fragment, std::uint64_t seed);
  std::uint64_t slot(int req, int page, int layer) const;
  std::uint64_t slots() const { return static_cast<std::uint64_t>(map_.size()); }

 private:
  int pages_, layers_;
  std::vector<std::uint64_t> map_;  // identity when not fragmented
};

// The descriptors of request `req` from prefill to decode. Homogeneous
// (same TP, or MLA): shard d of decode takes shard d % tp's units whole;
// heterogeneous: each overlap of head slices, K and V apart, per layer.
// A sliding layer moves only its last pages (window / page_tokens, rounded up).
std::vector<KvDesc> request_descs(const KvModel& m, const KvPlan& p, int isl, int req,
                                  const KvPool& src, const KvPool& dst);

struct KvRequestShape {
  std::uint64_t bytes = 0;
  std::uint64_t descs = 0;
  std::uint64_t largest = 0, smallest = 0;  // descriptor bytes
};
KvRequestShape shape_of(const std::vector<KvDesc>& d);

}  // namespace xb
