// `xferbench kv`: KV-cache block put/get among ranks.
#include "family/kv/kv_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "family/cycles.hpp"
#include "family/engine/engine_family.hpp"
#include "family/host_pages.hpp"
#include "family/kv/kv_bench.hpp"
#include "family/kv/kv_handoff.hpp"
#include "family/kv/kv_model.hpp"
#include "family/nic_fields.hpp"
#include "family/options.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

class KvFamily final : public Family {
 public:
  KvFamily() {
    schema_.add(kv_field::blocks, FieldRole::key, "blocks per round")
        .add(kv_field::block_bytes, FieldRole::info, "bytes per block");
    add_nic_fields(schema_, "the rank's (put: rank 0's)");
    schema_.add(kv_field::model, FieldRole::key, "--model: the model whose KV moves")
        .add(kv_field::tp, FieldRole::key, "--model: prefill tensor parallelism")
        .add(kv_field::decode_tp, FieldRole::key, "--model: decode tensor parallelism")
        .add(kv_field::isl, FieldRole::key, "--model: prompt tokens per request")
        .add(kv_field::page_tokens, FieldRole::key, "--model: tokens per KV page")
        .add(kv_field::layout, FieldRole::key,
             "--model: block (a descriptor per page across layers) or layer (per page and layer)")
        .add(kv_field::fragment, FieldRole::key, "--model: seeded random pools (--fragment)")
        .add(kv_field::burst, FieldRole::key, "--model: requests handed off at once")
        .add(kv_field::descs, FieldRole::info, "--model: descriptors per request, all shards")
        .add(kv_field::desc_bytes, FieldRole::info, "--model: the largest descriptor, bytes")
        .add(kv_field::request_bytes, FieldRole::info, "--model: KV bytes of one request")
        .add(kv_field::handoff_p50_us, FieldRole::metric,
             "--model: a request's handoff, from the burst's start to its last byte, median over "
             "requests and rounds, us")
        .add(kv_field::handoff_p99_us, FieldRole::info, "--model: the same, p99")
        .add(kv_field::handoff_max_us, FieldRole::info, "--model: the same, max")
        .add(kv_field::rank_gbps, FieldRole::info,
             "--model: the burst's bytes / its time / the ranks that move them, GB/s")
        .add(kv_field::ceiling_ratio, FieldRole::info,
             "--model: the same bytes as one descriptor per rank pair (the wire ceiling): its "
             "time / the handoff's (1 = the wire's speed)")
        .add(kv_field::prefill_share, FieldRole::info,
             "--model --prefill-tps: the handoff's median over the prefill's time (isl / tps)")
        .add(kv_field::wrong_bytes, FieldRole::info,
             "--model: bytes of the decode shards that differ from the prefill's");
  }
  std::string name() const override { return "kv"; }
  std::string summary() const override {
    return "KV-cache block put/get among ranks over the UCX engine";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    r.add({"kv.get", "kv", "every rank reads its blocks from the others", host_memory_only});
    r.add({"kv.put", "kv", "rank 0 writes blocks to every peer", host_memory_only});
  }
  std::string table_note(const Report& r) const override {
    if (find_field(r.params, "model")) return kv_handoff_note();
    std::string note = engine_note();
    if (const FieldValue* v = find_field(r.params, "mem");
        v && std::holds_alternative<std::string>(*v) && std::get<std::string>(*v) == "device")
      note += "each rank's own blocks in device memory: put = D2RH, get = RH2D (HIXL's names)\n";
    return note;
  }
  std::string tables(const Report& r) const override { return kv_tables(r); }

  void add_options(CLI::App& app) override {
    app_ = &app;
    app.add_option_function<std::string>(
           "--block-bytes",
           [this](const std::string& s) { cfg_.block_bytes = parse_size(s, "--block-bytes"); },
           "bytes per KV block (default 61 x (128K + 16K) = 8784 KiB)")
        ->type_name("SIZE");
    app.add_option("--blocks", blocks_, "blocks per round, comma list")->default_str("16,32,48,64");
    app.add_option_function<std::string>(
           "--mem", [this](const std::string& m) { cfg_.device_mem = m == "device"; },
           "each rank's own blocks: host, or device (D2RH put, RH2D get, as in HIXL's KV "
           "benchmark; on the host backend the device is the rank's NUMA node)")
        ->check(CLI::IsMember({"host", "device"}))
        ->default_str("host");
    add_huge_pages_option(app, cfg_.huge_pages);
    app.add_option("--model", model_,
                   "the prefill -> decode handoff of a model's KV cache: " + model_names() +
                       " (or one of --model-file)");
    app.add_option("--model-file", model_file_,
                   "a JSON list of models: name, layers, kv_heads and head_dim (GQA) or latent "
                   "(MLA), dtype, window, window_layers");
    app.add_option("--kv-dtype", kv_dtype_,
                   "the KV cache's type: fp8, bf16, fp16, fp32 "
                   "(default: the model's)");
    app.add_option("--tp", hand_.plan.tp, "prefill tensor parallelism")
        ->check(CLI::Range(1, 1024))
        ->default_str("1");
    app.add_option("--decode-tp", decode_tp_, "decode tensor parallelism (default: --tp)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--pp", hand_.plan.pp, "prefill pipeline stages: a descriptor never spans two")
        ->check(CLI::Range(1, 1024))
        ->default_str("1");
    app.add_option("--isl", isl_, "prompt tokens per request, comma list")->default_str("8192");
    app.add_option("--page-tokens", hand_.plan.page_tokens, "tokens per KV page")
        ->check(CLI::Range(1, 1 << 20))
        ->default_str("16");
    app.add_option(
           "--layout", layout_,
           "block (one descriptor per page across its layers) or layer (per page and layer)")
        ->check(CLI::IsMember({"block", "layer"}))
        ->default_str("block");
    app.add_option("--burst", bursts_, "requests handed off at once, comma list")->default_str("1");
    app.add_option("--op", op_, "pull (decode reads), push (prefill writes), or both")
        ->check(CLI::IsMember({"pull", "push", "both"}))
        ->default_str("pull");
    app.add_flag("--fragment", hand_.plan.fragment,
                 "seeded random pools: every page's layer units scattered, descriptors packed "
                 "where they touch");
    app.add_option("--prefill-ranks", hand_.prefill_ranks,
                   "ranks of the prefill instance (default: half; the others decode)")
        ->check(CLI::Range(1, 4095));
    app.add_option("--prefill-tps", hand_.prefill_tps,
                   "the prefill's tokens per second: the handoff as a share of its time")
        ->check(CLI::PositiveNumber);
    add_run_options(app, run_,
                    {.iters = "timed rounds (default 5)",
                     .warmup = "warm-up rounds (default 1)",
                     .check = "skip verification",
                     .check_every = true,
                     .ranks = true,
                     .monitor = true});
    app.footer(
        R"(Get: every rank reads its blocks from the other ranks (spread round-robin); Put: rank 0
writes the blocks to every peer. GB/s = bytes of the round / round time (per rank for get).
Examples:
  mpiexec -n 4 xferbench kv
  xferbench kv --ranks 3 --block-bytes 1M --blocks 8,16 --format json -o kv.json
  mpiexec -n 2 xferbench kv --mem device --block-bytes 1M --blocks 8)");
  }

  int run(const Invocation& inv) override {
    if (!model_.empty() || !model_file_.empty()) return run_model(inv);
    for (const char* mode :
         {"--kv-dtype", "--tp", "--decode-tp", "--pp", "--isl", "--page-tokens", "--layout",
          "--burst", "--op", "--fragment", "--prefill-ranks", "--prefill-tps"})
      if (app_->count(mode) > 0)
        throw UsageError(fmt::format("{} shapes a model's handoff: it needs --model", mode));
    cfg_.blocks = each_once(parse_count_list("--blocks", blocks_, 100000, "16,32,48,64"));
    cfg_.iters = run_.iters_or(5);
    cfg_.warmup = run_.warmup_or(1);
    if (check_mode(run_) == CheckMode::every)
      throw UsageError(
          "--check every checks each round of --model's handoff; HIXL's blocks are checked once");
    cfg_.check = !run_.no_check && check_mode(run_) != CheckMode::none;
    const RunOptions opts = host_only(run_, "kv");
    Ranked r =
        start_ranked(*this, opts, inv, [&](Runtime& rt, Backend&) { validate_kv(rt, cfg_); });
    Params params = {{"block_bytes", static_cast<std::int64_t>(cfg_.block_bytes)},
                     {"mem", std::string(cfg_.device_mem ? "device" : "host")},
                     {"blocks", blocks_},
                     {"iters", std::int64_t{cfg_.iters}},
                     {"warmup", std::int64_t{cfg_.warmup}},
                     {"check", cfg_.check}};
    if (cfg_.huge_pages) params.emplace_back("host_mem", std::string("huge"));
    r.begin(*this, "kv", params);
    std::vector<Record> recs =
        run_cycles(opts, r.rt.get(), [&] { return run_kv(*r.rt, cfg_, *r.backend); });
    Report report{"kv", {}, params, std::move(recs), {}};
    note_host_pages(*r.backend, report);
    return r.report(*this, std::move(report), opts);
  }

 private:
  static std::string model_names() {
    std::string s;
    for (const KvModel& m : kv_model_presets()) s += (s.empty() ? "" : ", ") + m.name;
    return s;
  }

  // --model: the handoff of a model's KV (kv_handoff.hpp).
  int run_model(const Invocation& inv) {
    if (model_.empty()) throw UsageError("--model-file names models: choose one with --model");
    for (const char* hixl : {"--block-bytes", "--blocks", "--mem", "--host-mem"})
      if (app_->count(hixl) > 0)
        throw UsageError(fmt::format(
            "{} is for HIXL's fixed blocks, --model lays out the model's pages itself", hixl));
    std::vector<KvModel> models = kv_model_presets();
    if (!model_file_.empty()) {
      std::ifstream in(model_file_);
      if (!in) throw UsageError(fmt::format("--model-file {}: cannot read it", model_file_));
      std::stringstream text;
      text << in.rdbuf();
      const auto extra = kv_models_from_json(text.str(), "--model-file " + model_file_);
      models.insert(models.end(), extra.begin(), extra.end());
    }
    hand_.model = find_kv_model(models, model_);
    if (!kv_dtype_.empty()) hand_.model.dtype_bytes = kv_dtype_bytes(kv_dtype_);
    hand_.plan.decode_tp = decode_tp_ > 0 ? decode_tp_ : hand_.plan.tp;
    hand_.plan.layer_layout = layout_ == "layer";
    hand_.isl = each_once(parse_count_list("--isl", isl_, 1 << 24, "8192 or 1024,8192"));
    hand_.bursts = each_once(parse_count_list("--burst", bursts_, 4096, "1,8"));
    hand_.push = op_ == "both" ? std::vector<bool>{false, true} : std::vector<bool>{op_ == "push"};
    hand_.iters = run_.iters_or(5);
    hand_.warmup = run_.warmup_or(1);
    hand_.check = check_mode(run_) != CheckMode::none;
    hand_.check_every = check_mode(run_) == CheckMode::every;
    if (const char* c = std::getenv("XFERBENCH_TEST_KV_CORRUPT"); c && *c) {
      if (std::string(c) != "1")
        throw UsageError(fmt::format("XFERBENCH_TEST_KV_CORRUPT={}: 1 or unset (a test knob)", c));
      hand_.corrupt = true;
    }
    const RunOptions opts = host_only(run_, "kv");
    Ranked r =
        start_ranked(*this, opts, inv, [&](Runtime& rt, Backend&) { validate_handoff(rt, hand_); });
    Params params = {{"model", hand_.model.name},
                     {"model_source", hand_.model.source},
                     {"tp", std::int64_t{hand_.plan.tp}},
                     {"decode_tp", std::int64_t{hand_.plan.decode_tp}},
                     {"pp", std::int64_t{hand_.plan.pp}},
                     {"isl", isl_},
                     {"page_tokens", std::int64_t{hand_.plan.page_tokens}},
                     {"layout", layout_},
                     {"burst", bursts_},
                     {"op", op_},
                     {"fragment", hand_.plan.fragment},
                     {"iters", std::int64_t{hand_.iters}},
                     {"warmup", std::int64_t{hand_.warmup}},
                     {"check", hand_.check}};
    r.begin(*this, "kv", params);
    std::vector<Record> recs =
        run_cycles(opts, r.rt.get(), [&] { return run_handoff(*r.rt, hand_); });
    return r.report(*this, {"kv", {}, params, std::move(recs), {}}, opts);
  }

  KvConfig cfg_;
  KvHandoffConfig hand_;
  std::string model_, model_file_, kv_dtype_, isl_ = "8192", layout_ = "block", bursts_ = "1",
                                              op_ = "pull";
  int decode_tp_ = 0;
  CLI::App* app_ = nullptr;
  std::string blocks_ = "16,32,48,64";
  RunOptions run_;
  RecordSchema schema_{"kv"};
};

}  // namespace

std::unique_ptr<Family> make_kv_family() { return std::make_unique<KvFamily>(); }

}  // namespace xb
