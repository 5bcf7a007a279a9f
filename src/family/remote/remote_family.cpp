// `xferbench remote`: options -> RemoteConfig, ranks, records -> report.
#include "family/remote/remote_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "family/cycles.hpp"
#include "family/host_pages.hpp"
#include "family/options.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "family/remote/remote_bench.hpp"
#include "family/remote/remote_windows.hpp"

namespace xb {
namespace {

std::vector<RemoteOp> parse_ops(const std::string& text) {
  std::vector<RemoteOp> ops;
  for (const auto& op : option_set("--op", text, "get, put or get,put")) {
    if (op == "get")
      ops.push_back(RemoteOp::get);
    else if (op == "put")
      ops.push_back(RemoteOp::put);
    else
      throw UsageError(fmt::format("--op: unknown operation '{}' (get, put)", op));
  }
  if (ops.empty()) throw UsageError("--op needs get, put or both");
  return ops;
}

class RemoteFamily final : public Family {
 public:
  RemoteFamily() {
    schema_
        .add(remote_field::cycles, FieldRole::metric,
             "device counter cycles per transfer (with --window: per N messages)")
        .add(remote_field::transport, FieldRole::key, "shm, rma (host windows) or ipc")
        .add(remote_field::threads, FieldRole::key,
             "dma workers (host) or core blocks (cuda) of a --threads list run")
        .add(remote_field::window, FieldRole::key,
             "--window: messages in flight per iteration (bytes = window x message size)")
        .add(remote_field::msg_rate, FieldRole::metric,
             "--window: messages per second, window / median iteration time");
  }
  std::string name() const override { return "remote"; }
  std::string summary() const override {
    return "one rank gets/puts a peer rank's window: core (staged) vs dma (engine)";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    for (const char* op : {"get", "put"})
      r.add({fmt::format("remote.{}", op), "remote",
             fmt::format("{} a peer rank's window: core (staged) vs dma (engine)", op),
             [](const Capabilities& c) {
               if (c.device_ipc || c.backend == "host") return Support::yes();
               return Support::no(remote_unsupported(c.backend));
             }});
  }
  std::string tables(const Report& r) const override { return remote_tables(r); }
  Support fits(Backend& b, Runtime* rt) const override { return windows_fit(rt, b, cfg_); }

  void add_options(CLI::App& app) override {
    app.add_option_function<std::string>(
           "--op", [this](const std::string& s) { cfg_.ops = parse_ops(s); },
           "comma list of get, put")
        ->default_str("get");
    app.add_option_function<std::string>(
           "--method",
           [this](const std::string& m) {
             cfg_.methods = m == "dma"    ? std::vector<Method>{Method::dma}
                            : m == "core" ? std::vector<Method>{Method::core}
                                          : std::vector<Method>{Method::dma, Method::core};
           },
           "core (own core via staging tile), dma (async engine), both")
        ->check(CLI::IsMember({"dma", "core", "both"}))
        ->default_str("both");
    add_size_options(app, sizes_, "4K", "4M", "4");
    app.add_option_function<std::string>(
           "--transport",
           [this](const std::string& t) {
             cfg_.transport = t == "shm" ? Transport::shm : Transport::rma;
           },
           "shm (one host, load/store) or rma (MPI one-sided); default shm on one host")
        ->check(CLI::IsMember({"shm", "rma"}));
    app.add_option("--root", cfg_.root, "the rank that issues transfers")->default_str("0");
    app.add_option("--peer", cfg_.peer, "the rank whose window is read/written (default root+1)");
    app.add_option_function<std::string>(
           "--tile", [this](const std::string& t) { cfg_.copier.tile = parse_tile(t); },
           "core: staging tile size (cuda: shared memory, 0 = direct)")
        ->type_name("SIZE")
        ->default_str("64K");
    app.add_option_function<std::string>(
           "--threads", [this](const std::string& t) { threads_ = parse_thread_counts(t, 65535); },
           "host: dma engine workers (default 1); cuda: core thread blocks (default 2 per SM). A "
           "list (1,2,4) or sweep (powers of two up to the device's cores) runs each")
        ->type_name("N|LIST|sweep");
    app.add_option_function<std::string>(
           "--window", [this](const std::string& w) { cfg_.window = parse_window(w); },
           "message rate: N transfers of the size in flight per iteration (issued back to back, "
           "then completed together; osu_mbw_mr's window); records add window and msg_rate. "
           "Host windows only")
        ->type_name("N");
    add_huge_pages_option(app, cfg_.huge_pages);
    add_run_options(app, run_,
                    {.iters = "timed transfers per size (default: scaled, 1000 at 4K .. 64 at 4M)",
                     .warmup = "warm-up transfers (default: iters/10)",
                     .check = "skip verification of the received bytes",
                     .check_every = true,
                     .ranks = true,
                     .monitor = true});
    app.footer(
        R"(Ranks come from the MPI launcher (mpiexec, mpirun, srun; --ranks N starts the one this
xferbench is built with); rank 0 reports, the others stay silent.
Examples:
  mpiexec -n 2 xferbench remote                     get, 4K..4M x4, both methods
  xferbench remote --ranks 2 --op get,put -b 4K -e 64M -f 2 --format json -o r.json
  mpirun --hostfile hosts -n 2 xferbench remote --transport rma   two hosts (MPICH: mpiexec -f hosts)
  mpiexec -n 2 xferbench remote --backend host --window 64 -b 8 -e 4K   message rate)");
  }

  int run(const Invocation& inv) override {
    cfg_.sizes = sizes_of(sizes_, 4096, 4ULL << 20, 4.0);
    if (const int n = run_.iters_or(0); n > 0) cfg_.iters = n;  // -n, or --check-iters
    if (run_.warmup >= 0) cfg_.warmup = run_.warmup;
    cfg_.check = check_mode(run_) != CheckMode::none;
    cfg_.check_every = check_mode(run_) == CheckMode::every;
    Ranked r = start_ranked(*this, run_, inv, [&](Runtime& rt, Backend& b) {
      apply_thread_counts(threads_, b, cfg_.copier, cfg_.thread_counts);
      validate_remote(rt, cfg_);
    });
    r.begin(*this, "remote", params());
    RemoteResult res;
    res.records = run_cycles(run_, r.rt.get(), [&] {
      RemoteResult one = run_remote(*r.rt, *r.backend, cfg_);
      res.summary = std::move(one.summary);  // the last cycle's
      return std::move(one.records);
    });
    Report report{"remote", {}, params(), std::move(res.records), std::move(res.summary)};
    note_host_pages(*r.backend, report);
    return r.report(*this, std::move(report), run_);
  }

 private:
  Params params() const {
    std::string ops, method;
    for (RemoteOp op : cfg_.ops) ops += (ops.empty() ? "" : ",") + std::string(to_string(op));
    method = cfg_.methods.size() == 2 ? "both" : to_string(cfg_.methods.front());
    Params p = {{"op", ops},
                {"method", method},
                {"sizes", join_numbers(cfg_.sizes)},
                {"iters", std::int64_t{cfg_.iters.value_or(0)}},
                {"warmup", std::int64_t{cfg_.warmup.value_or(-1)}},
                {"transport", std::string(cfg_.transport ? to_string(*cfg_.transport) : "auto")},
                {"root", std::int64_t{cfg_.root}},
                {"peer", std::int64_t{cfg_.peer.value_or(-1)}},
                {"threads", std::int64_t{cfg_.copier.threads}},
                {"tile", static_cast<std::int64_t>(cfg_.copier.tile)},
                {"check", cfg_.check}};
    if (cfg_.huge_pages) p.emplace_back("host_mem", std::string("huge"));
    if (cfg_.window > 0) p.emplace_back("window", std::int64_t{cfg_.window});
    return p;
  }

  RemoteConfig cfg_;
  ThreadCounts threads_;
  SizeArgs sizes_;
  RunOptions run_;
  RecordSchema schema_{"remote"};
};

}  // namespace

std::unique_ptr<Family> make_remote_family() { return std::make_unique<RemoteFamily>(); }

}  // namespace xb
