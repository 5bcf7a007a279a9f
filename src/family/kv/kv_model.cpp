#include "family/kv/kv_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.hpp"
#include "core/pattern.hpp"

namespace xb {
namespace {

// Whether layer `l` slides (keeps only its window): every (layers /
// window_layers)-th layer from the first, as gpt-oss alternates them.
bool slides(const KvModel& m, int l) {
  return m.window > 0 && m.window_layers > 0 && l % std::max(1, m.layers / m.window_layers) == 0;
}

}  // namespace

int kv_first_page(const KvModel& m, int l, int isl, int page_tokens) {
  if (!slides(m, l)) return 0;
  return std::max(0, isl - m.window) / page_tokens;
}

const std::vector<KvModel>& kv_model_presets() {
  // Each from the model's config.json on Hugging Face (num_hidden_layers,
  // num_key_value_heads, head_dim or hidden_size / num_attention_heads,
  // torch_dtype; DeepSeek: kv_lora_rank + qk_rope_head_dim, the latent
  // vLLM caches; gpt-oss: sliding_window and layer_types).
  static const std::vector<KvModel> presets = {
      {"llama-3.1-8b", 32, 8, 128, 0, 2, 0, 0,
       "meta-llama/Llama-3.1-8B: 32 layers, 8 KV heads, 4096 / 32 = 128, bf16"},
      {"llama-3.1-70b", 80, 8, 128, 0, 2, 0, 0,
       "meta-llama/Llama-3.1-70B: 80 layers, 8 KV heads, 8192 / 64 = 128, bf16"},
      {"qwen3-32b", 64, 8, 128, 0, 2, 0, 0,
       "Qwen/Qwen3-32B: 64 layers, 8 KV heads, head_dim 128, bf16"},
      {"deepseek-v3", 61, 0, 0, 576, 2, 0, 0,
       "deepseek-ai/DeepSeek-V3: 61 layers, MLA latent kv_lora_rank 512 + qk_rope_head_dim 64 = "
       "576, not split by TP, bf16 (fp8 with --kv-dtype fp8)"},
      {"gpt-oss-120b", 36, 8, 64, 0, 2, 128, 18,
       "openai/gpt-oss-120b: 36 layers, 8 KV heads, head_dim 64, bf16; sliding_window 128 on "
       "every other layer (layer_types)"},
  };
  return presets;
}

std::vector<KvModel> kv_models_from_json(const std::string& text, const std::string& what) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: not JSON: {}", what, e.what()));
  }
  if (!doc.is_array()) throw UsageError(fmt::format("{}: expected a list of models", what));
  std::vector<KvModel> out;
  for (const auto& o : doc) {
    KvModel m;
    try {
      m.name = o.at("name").get<std::string>();
      m.layers = o.at("layers").get<int>();
      m.kv_heads = o.value("kv_heads", 0);
      m.head_dim = o.value("head_dim", 0);
      m.latent = o.value("latent", 0);
      m.dtype_bytes = kv_dtype_bytes(o.value("dtype", std::string("bf16")));
      m.window = o.value("window", 0);
      m.window_layers = o.value("window_layers", 0);
      m.source = o.value("source", what);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(fmt::format("{}: a model: {}", what, e.what()));
    }
    const bool gqa = m.kv_heads > 0 && m.head_dim > 0 && m.latent == 0;
    const bool mla = m.latent > 0 && m.kv_heads == 0;
    if (m.name.empty() || m.layers < 1 || m.layers > 10000 || !(gqa || mla) || m.kv_heads > 4096 ||
        m.head_dim > 65536 || m.latent > 1 << 20 || m.window < 0 || m.window_layers < 0 ||
        m.window_layers > m.layers)
      throw UsageError(fmt::format(
          "{}: model '{}': needs a name, layers 1..10000, and kv_heads with head_dim (GQA) or "
          "latent (MLA), window and window_layers within the layers",
          what, m.name));
    out.push_back(m);
  }
  return out;
}

KvModel find_kv_model(const std::vector<KvModel>& models, const std::string& name) {
  for (auto it = models.rbegin(); it != models.rend(); ++it)  // a file's entry wins
    if (it->name == name) return *it;
  std::string names;
  for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.name;
  throw UsageError(fmt::format("--model {}: not a model ({}; or --model-file)", name, names));
}

int kv_dtype_bytes(const std::string& dtype) {
  if (dtype == "fp8") return 1;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp32") return 4;
  throw UsageError(fmt::format("KV dtype '{}': fp8, bf16, fp16 or fp32", dtype));
}

HeadSlice head_slice(const KvModel& m, int tp, int shard) {
  if (m.latent > 0) return {0, 1};  // MLA: every shard the whole latent
  if (tp >= m.kv_heads) return {shard * m.kv_heads / tp, 1};
  const int per = m.kv_heads / tp;
  return {shard * per, per};
}

int stage_layers(const KvModel& m, const KvPlan& p) { return (m.layers + p.pp - 1) / p.pp; }

std::uint64_t unit_bytes(const KvModel& m, int tp, int page_tokens) {
  const auto t = static_cast<std::uint64_t>(page_tokens);
  const auto b = static_cast<std::uint64_t>(m.dtype_bytes);
  if (m.latent > 0) return static_cast<std::uint64_t>(m.latent) * t * b;
  const auto heads = static_cast<std::uint64_t>(head_slice(m, tp, 0).count);
  return 2 * heads * static_cast<std::uint64_t>(m.head_dim) * t * b;
}

int pages_of(int isl, int page_tokens) { return (isl + page_tokens - 1) / page_tokens; }

KvPool::KvPool(int requests, int pages, int layers, bool fragment, std::uint64_t seed)
    : pages_(pages), layers_(layers) {
  map_.resize(static_cast<std::size_t>(requests) * static_cast<std::size_t>(pages) *
              static_cast<std::size_t>(layers));
  std::iota(map_.begin(), map_.end(), std::uint64_t{0});
  if (!fragment) return;
  std::uint64_t state = seed;  // Fisher-Yates with splitmix64: a pure function of the seed
  for (std::size_t i = map_.size(); i > 1; --i) std::swap(map_[i - 1], map_[splitmix64(state) % i]);
}

std::uint64_t KvPool::slot(int req, int page, int layer) const {
  return map_[(static_cast<std::size_t>(req) * static_cast<std::size_t>(pages_) +
               static_cast<std::size_t>(page)) *
                  static_cast<std::size_t>(layers_) +
              static_cast<std::size_t>(layer)];
}

std::vector<KvDesc> request_descs(const KvModel& m, const KvPlan& p, int isl, int req,
                                  const KvPool& src, const KvPool& dst) {
  std::vector<KvDesc> out;
  const int pages = pages_of(isl, p.page_tokens);
  const int stage = stage_layers(m, p);
  const std::uint64_t su = unit_bytes(m, p.tp, p.page_tokens);
  const std::uint64_t du = unit_bytes(m, p.decode_tp, p.page_tokens);
  const bool same = m.latent > 0 || p.tp == p.decode_tp;
  // A descriptor extends the last one when both sides continue it, on the
  // same page and pipeline stage (never in the layer layout).
  int last_page = -1, last_stage = -1;
  auto add = [&](const KvDesc& d, int page, int layer) {
    const bool fresh = out.empty() || page != last_page || layer / stage != last_stage;
    last_page = page;
    last_stage = layer / stage;
    if (!fresh && !p.layer_layout) {
      KvDesc& l = out.back();
      if (l.src_shard == d.src_shard && l.dst_shard == d.dst_shard &&
          l.src_off + l.bytes == d.src_off && l.dst_off + l.bytes == d.dst_off) {
        l.bytes += d.bytes;
        return;
      }
    }
    out.push_back(d);
  };
  // With more prefill shards than heads, a head has several holders: decode
  // shard ds takes it from holder ds modulo their number.
  auto taker_of = [&](int ps, int ds) {
    if (p.tp <= m.kv_heads) return true;
    std::vector<int> holders;
    for (int q = 0; q < p.tp; ++q)
      if (head_slice(m, p.tp, q).first == head_slice(m, p.tp, ps).first) holders.push_back(q);
    return holders[static_cast<std::size_t>(ds) % holders.size()] == ps;
  };
  for (int ds = 0; ds < p.decode_tp; ++ds) {
    const HeadSlice want = head_slice(m, p.decode_tp, ds);
    for (int page = 0; page < pages; ++page)
      for (int l = 0; l < m.layers; ++l) {
        if (page < kv_first_page(m, l, isl, p.page_tokens)) continue;  // outside a sliding window
        const std::uint64_t s_unit = src.slot(req, page, l) * su;
        const std::uint64_t d_unit = dst.slot(req, page, l) * du;
        if (same) {
          add({ds % p.tp, ds, s_unit, d_unit, su}, page, l);
          continue;
        }
        // Each prefill shard whose heads overlap this decode shard's, K and V apart.
        const auto chunk = static_cast<std::uint64_t>(p.page_tokens) *
                           static_cast<std::uint64_t>(m.head_dim) *
                           static_cast<std::uint64_t>(m.dtype_bytes);  // one head's page
        for (int ps = 0; ps < p.tp; ++ps) {
          const HeadSlice have = head_slice(m, p.tp, ps);
          const int lo = std::max(have.first, want.first);
          const int hi = std::min(have.first + have.count, want.first + want.count);
          if (lo >= hi) continue;
          if (!taker_of(ps, ds)) continue;
          const auto n = static_cast<std::uint64_t>(hi - lo);
          const auto s_at = static_cast<std::uint64_t>(lo - have.first) * chunk;
          const auto d_at = static_cast<std::uint64_t>(lo - want.first) * chunk;
          const std::uint64_t s_half = su / 2, d_half = du / 2;  // K, then V
          for (std::uint64_t kv = 0; kv < 2; ++kv)
            out.push_back(
                {ps, ds, s_unit + kv * s_half + s_at, d_unit + kv * d_half + d_at, n * chunk});
        }
      }
  }
  return out;
}

KvRequestShape shape_of(const std::vector<KvDesc>& d) {
  KvRequestShape s;
  s.descs = d.size();
  for (const KvDesc& x : d) {
    s.bytes += x.bytes;
    s.largest = std::max(s.largest, x.bytes);
    s.smallest = s.smallest == 0 ? x.bytes : std::min(s.smallest, x.bytes);
  }
  return s;
}

}  // namespace xb
