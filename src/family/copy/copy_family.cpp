// `xferbench copy`: options -> CopyConfig -> records -> report.
#include "family/copy/copy_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "core/error.hpp"
#include "family/backend_choice.hpp"
#include "family/copy/copy_bench.hpp"
#include "family/cycles.hpp"
#include "family/host_pages.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "family/parse.hpp"

namespace xb {
namespace {

std::vector<std::string> parse_types(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& t : option_set("-t", s, "h2d,d2h or another list of patterns")) {
    if (!find_pattern(t))
      throw UsageError(fmt::format("-t: unknown copy pattern '{}' ({})", t, pattern_names()));
    out.push_back(t);
  }
  if (out.empty()) throw UsageError("-t needs at least one of " + pattern_names());
  return out;
}

std::vector<P2pOp> parse_p2p_ops(const std::string& s) {
  std::vector<P2pOp> out;
  for (const auto& t : option_set("--p2p-op", s, "read, write or read,write")) {
    if (t != "read" && t != "write")
      throw UsageError(fmt::format("--p2p-op: '{}' is not read or write", t));
    const P2pOp op = t == "read" ? P2pOp::read : P2pOp::write;
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  }
  if (out.empty()) throw UsageError("--p2p-op needs read, write or read,write");
  return out;
}

// "-t" help: every pattern with what it measures.
std::string types_help() {
  std::string out = "comma list of patterns:";
  for (const auto& p : copy_patterns()) out += fmt::format("\n  {:<12} {}", p.key, p.help);
  return out;
}

std::vector<Method> parse_methods(const std::string& m) {
  if (m == "dma") return {Method::dma};
  if (m == "core") return {Method::core};
  return {Method::dma, Method::core};
}

class CopyFamily final : public Family {
 public:
  CopyFamily() {
    schema_
        .add(copy_field::threads, FieldRole::key,
             "cores (host) or thread blocks (cuda) of a --threads list run")
        .add(copy_field::link, FieldRole::info, "between two devices: the link joining them")
        .add(copy_field::counted, FieldRole::info,
             "d2d with --d2d-count read+write: its GB/s count read plus written bytes");
  }
  std::string name() const override { return "copy"; }
  std::string summary() const override {
    return "h2d, d2h, d2d, p2p and concurrent copy patterns by dma engine or by cores";
  }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override { register_copy(r); }
  std::string tables(const Report& r) const override { return copy_tables(r); }
  // The copier options must suit the backend (--tile 0 is a GPU's direct
  // kernel). A method the backend lacks is waived when another was asked
  // for too, and passes the backend over when it is the only one.
  Support fits(Backend& b, Runtime*) const override {
    for (Method m : cfg_.methods) {
      if (Support has = b.method_support(m); !has.ok) {
        if (cfg_.methods.size() == 1) return has;
        continue;
      }
      if (Support s = b.copier_fits(m, cfg_.copier); !s.ok) return s;
    }
    return Support::yes();
  }

  void add_options(CLI::App& app) override {
    app.add_option_function<std::string>(
           "-t,--type", [this](const std::string& s) { cfg_.cases = parse_types(s); }, types_help())
        ->type_name("LIST")
        ->default_str("h2d,d2h,d2d");
    app.add_option("-d,--device", cfg_.device,
                   "only this device (h2d/d2h/d2d; the one of all_to_one/one_to_all)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--src", cfg_.src, "p2p source device (with --dst)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--dst", cfg_.dst, "p2p destination device (with --src)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--bidir", cfg_.bidir,
                 "h2d/d2h, p2p, all_to_host/host_to_all: also both directions at once (each "
                 "direction and the total)");
    app.add_option_function<std::string>(
           "--p2p-op", [this](const std::string& s) { cfg_.p2p_ops = parse_p2p_ops(s); },
           "p2p, all_to_one, one_to_all: write (the source pushes), read (the destination "
           "pulls), or read,write (both, read records end in _read)")
        ->type_name("OP[,OP]")
        ->default_str("write");
    app.add_option_function<std::string>(
           "--method", [this](const std::string& m) { cfg_.methods = parse_methods(m); },
           "dma (copy engine), core (cores via staging tile), both")
        ->check(CLI::IsMember({"dma", "core", "both"}))
        ->default_str("both");
    app.add_option_function<std::string>(
           "--d2d-count", [this](const std::string& c) { cfg_.d2d_read_write = c == "read+write"; },
           "d2d's GB/s: bytes moved once (nvbandwidth), or read+write: the bytes read plus "
           "the bytes written, as ascend-dmi's d2d counts (twice the figure)")
        ->check(CLI::IsMember({"once", "read+write"}))
        ->default_str("once");
    add_size_options(app, sizes_, "2", "32M", "2");
    app.add_option_function<std::string>(
           "--threads", [this](const std::string& t) { threads_ = parse_thread_counts(t, 65535); },
           "host: cores/workers one copy is split over (default 1); cuda: thread blocks of each "
           "copy's core kernel (default 2 per SM, shared among copies that run at once on one "
           "GPU). A list (1,2,4) or sweep (powers of two up to the "
           "device's cores) runs each, one record per value")
        ->type_name("N|LIST|sweep");
    app.add_option_function<std::string>(
           "--tile", [this](const std::string& t) { cfg_.copier.tile = parse_tile(t); },
           "staging tile of the core method (cuda: shared memory per block, 0 = direct "
           "loads/stores)")
        ->type_name("SIZE")
        ->default_str("64K");
    app.add_option_function<std::string>(
           "--host-mem",
           [this](const std::string& m) {
             cfg_.host_mem = m == "pageable" ? MemKind::pageable : MemKind::pinned;
             cfg_.huge_pages = m == "huge";
           },
           std::string("host side of h2d/d2h: pinned, pageable, or ") + kHugeHelp +
               " (pinned; on the host backend every buffer)")
        ->check(CLI::IsMember({"pinned", "pageable", "huge"}))
        ->default_str("pinned");
    add_run_options(app, run_,
                    {.iters = "timed iterations (default 5 sweep, 40 fixed, 20 p2p)",
                     .warmup = "warm-up iterations, discarded (default 5)",
                     .check = "skip verification of the copied bytes",
                     .check_every = true,
                     .monitor = true});
    app.footer(R"(Sizes: 4096, 4K = 4KiB = 4096, 4KB = 4000, M, G (KB/MB/GB are 1000-based).
GB/s counts the bytes moved once (like nvbandwidth), 1 GB/s = 1e9 B/s.
Examples:
  xferbench copy                                  default: h2d,d2h,d2d, 2 B..32 MiB x2, dma and core
  xferbench copy -t d2d -s 256M --threads 2 --format json -o d2d.json
  xferbench copy -b 2 -e 1G -n 200 --format jsonl -o long.jsonl   each record on disk as it ends;
                                                  Ctrl-C keeps them (exit 130)
  xferbench copy -t p2p --bidir                   N x N matrices (XFERBENCH_HOST_DEVICES=4 on one node)
  xferbench copy -t p2p --p2p-op read,write       the same matrix pushed by the source, pulled by
                                                  the destination
  xferbench copy -t all_to_host,host_to_all -s 64M
                                                  every device at once: each device and the sum
  xferbench copy -t h2d --bidir -d 0              h2d and d2h at once: each direction and total
  xferbench copy -t h2d -b 4K -e 64M -f 4 --method core -w 5 -n 20
  xferbench copy -t d2d --d2d-count read+write    d2d counted as ascend-dmi counts it
  xferbench copy -t d2d -s 1M --check every -n 2000
                                                  each iteration checked: how many were wrong, the
                                                  rate's 95 % interval and the first wrong byte
  xferbench copy --backend cuda -s 1G --tile 0    GPU: copy engines vs direct SM copy kernels)");
  }

  int run(const Invocation&) override {
    finish_config();
    ChosenBackend chosen = choose_backend(*this, run_.backend, nullptr);
    Backend& backend = *chosen.backend;
    p2p_default_of(backend.name());
    apply_thread_counts(threads_, backend, cfg_.copier, cfg_.thread_counts);
    if (const Support s = use_host_pages(backend, cfg_.huge_pages); !s.ok)
      cfg_.waive_all = s.reason;
    validate_copy(backend, cfg_);
    Output out(run_);
    Registry registry;
    register_copy(registry);
    Report report{"copy", env_of(backend), params(), {}, {}};
    if (!cfg_.thread_counts.empty())
      report.params.emplace_back("thread_counts", join_numbers(cfg_.thread_counts));
    report.env.backend_note = chosen.note;
    out.begin(*this, report);
    report.results = run_cycles(
        run_, nullptr, [&] { return run_copy(backend, registry, cfg_, progress_for(run_)); });
    note_host_pages(backend, report);
    return report_once(*this, std::move(report), run_, out);
  }

 private:
  // Fixed mode (-s), explicit sweep (-b/-e/-f/-i), or ascend-dmi's defaults:
  // step mode 2 B..32 MiB x2 with 5 iterations, p2p one fixed size (64 MiB
  // with 20; p2p_default_of gives the ascend backend ascend-dmi's own).
  void finish_config() {
    if (cfg_.src.has_value() != cfg_.dst.has_value())
      throw UsageError("--src and --dst go together");
    cfg_.sizes = sizes_of(sizes_, 2, 32ULL << 20, 2.0);
    if (sizes_.fixed()) {
      cfg_.p2p_sizes = cfg_.sizes;
      cfg_.iters = cfg_.p2p_iters = run_.iters_or(40);
    } else if (sizes_.sweep_given()) {
      cfg_.p2p_sizes = cfg_.sizes;
      cfg_.iters = cfg_.p2p_iters = run_.iters_or(5);
    } else {
      cfg_.iters = run_.iters_or(5);
      cfg_.p2p_sizes = {64ULL << 20};
      cfg_.p2p_iters = run_.iters_or(20);
    }
    cfg_.warmup = run_.warmup_or(5);
    const CheckMode mode = check_mode(run_);
    cfg_.check = mode != CheckMode::none;
    cfg_.check_every = mode == CheckMode::every;
  }

  // p2p's default where a backend's own tool has another: ascend-dmi --bw
  // -t p2p moves 256 MiB 40 times on Atlas A2/A3 (512 MiB from devices 0
  // and 8: -s 512M --src 0 for that row).
  void p2p_default_of(const std::string& backend) {
    struct P2pDefault {
      const char* backend;
      Bytes bytes;
      int iters;
    };
    static constexpr P2pDefault kDefaults[] = {{"ascend", 256ULL << 20, 40}};
    if (sizes_.fixed() || sizes_.sweep_given()) return;
    for (const auto& d : kDefaults)
      if (backend == d.backend) {
        cfg_.p2p_sizes = {d.bytes};
        cfg_.p2p_iters = run_.iters_or(d.iters);
      }
  }

  Params params() const {
    std::string types, methods;
    for (const auto& c : cfg_.cases) types += (types.empty() ? "" : ",") + c;
    std::string ops;
    for (P2pOp op : cfg_.p2p_ops) ops += (ops.empty() ? "" : ",") + std::string(to_string(op));
    methods = cfg_.methods.size() == 2 ? "both" : to_string(cfg_.methods.front());
    return {{"type", types},
            {"method", methods},
            {"device", std::int64_t{cfg_.device.value_or(-1)}},
            {"src", std::int64_t{cfg_.src.value_or(-1)}},
            {"dst", std::int64_t{cfg_.dst.value_or(-1)}},
            {"bidir", cfg_.bidir},
            {"p2p_op", ops},
            {"sizes", join_numbers(cfg_.sizes)},
            {"p2p_sizes", join_numbers(cfg_.p2p_sizes)},
            {"warmup", std::int64_t{cfg_.warmup}},
            {"iters", std::int64_t{cfg_.iters}},
            {"p2p_iters", std::int64_t{cfg_.p2p_iters}},
            {"threads", std::int64_t{cfg_.copier.threads}},
            {"tile", static_cast<std::int64_t>(cfg_.copier.tile)},
            {"host_mem", std::string(cfg_.huge_pages                      ? "huge"
                                     : cfg_.host_mem == MemKind::pageable ? "pageable"
                                                                          : "pinned")},
            {"check", cfg_.check},
            {"d2d_count", std::string(cfg_.d2d_read_write ? "read+write" : "once")}};
  }

  CopyConfig cfg_;
  ThreadCounts threads_;
  SizeArgs sizes_;
  RunOptions run_;
  RecordSchema schema_{"copy"};
};

}  // namespace

std::unique_ptr<Family> make_copy_family() { return std::make_unique<CopyFamily>(); }

}  // namespace xb
