// `xferbench kv`: KV-cache block put/get among ranks.
#include "family/kv/kv_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "family/cycles.hpp"
#include "family/engine/engine_family.hpp"
#include "family/host_pages.hpp"
#include "family/kv/kv_bench.hpp"
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
    std::string note = engine_note();
    if (const FieldValue* v = find_field(r.params, "mem");
        v && std::holds_alternative<std::string>(*v) && std::get<std::string>(*v) == "device")
      note += "each rank's own blocks in device memory: put = D2RH, get = RH2D (HIXL's names)\n";
    return note;
  }
  std::string tables(const Report& r) const override { return kv_tables(r); }

  void add_options(CLI::App& app) override {
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
    add_run_options(app, run_,
                    {.iters = "timed rounds (default 5)",
                     .warmup = "warm-up rounds (default 1)",
                     .check = "skip verification",
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
    cfg_.blocks = each_once(parse_count_list("--blocks", blocks_, 100000, "16,32,48,64"));
    cfg_.iters = run_.iters_or(5);
    cfg_.warmup = run_.warmup_or(1);
    cfg_.check = !run_.no_check;
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
  KvConfig cfg_;
  std::string blocks_ = "16,32,48,64";
  RunOptions run_;
  RecordSchema schema_{"kv"};
};

}  // namespace

std::unique_ptr<Family> make_kv_family() { return std::make_unique<KvFamily>(); }

}  // namespace xb
