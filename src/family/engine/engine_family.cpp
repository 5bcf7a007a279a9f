// `xferbench engine serve|client|selftest`.
#include "family/engine/engine_family.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>

#include "backend/select/select.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/sysinfo.hpp"
#include "core/tcp.hpp"
#include "core/timer.hpp"
#include "family/agree.hpp"
#include "family/cycles.hpp"
#include "family/engine/engine_args.hpp"
#include "family/host_pages.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "runtime/runtime.hpp"

namespace xb {
namespace {

struct ServeArgs {
  std::string listen = "127.0.0.1:20000", size = "1G", token_file;
  int clients = 1;
  double accept_wait = 60;
  std::string mem = "host", backend = "auto";
  int device = 0;
  bool huge = false;  // --host-mem huge
};

void log_line(const std::string& s) { std::fprintf(stderr, "engine: %s\n", s.c_str()); }

// The run's output, begun: a bad -o fails before anything connects, and
// each finished record is in the file at once.
std::unique_ptr<Output> begin_engine(const Family& f, const RunOptions& opts,
                                     const Backend& backend, Params params) {
  auto out = std::make_unique<Output>(opts);
  out->begin(f, {"engine", env_of(backend), std::move(params), {}, {}});
  return out;
}

int emit_engine(const Family& f, const RunOptions& opts, const Backend& backend, EngineRun run,
                Params params, Output& out) {
  Report report{"engine", env_of(backend), std::move(params), std::move(run.records),
                std::move(run.summary)};
  note_host_pages(backend, report);
  return report_once(f, std::move(report), opts, out);
}

int run_client(const Family& f, const ClientArgs& a) {
  EngineClientConfig cfg = to_config(a);
  cfg.nic_counters = true;
  const auto endpoints = parse_engine_servers(a.connect);
  // --nic a,b to two servers without --lanes: a NIC per server, one lane each.
  if (a.lanes.empty() && endpoints.size() > 1 && cfg.nics.size() == endpoints.size() &&
      cfg.devices.size() <= 1)
    cfg.lanes = 1;
  // --lanes x servers against -t, before connecting; each server's slot must hold its lanes
  const Bytes per_server =
      engine_part_length(cfg, endpoints.size()) * static_cast<Bytes>(cfg.lanes);
  if (a.err_mode == "auto") {
    cfg.peer_errors = false;
    for (const auto& ep : endpoints)
      cfg.peer_errors = cfg.peer_errors || auto_peer_errors(ep.first);
  }
  const std::string token = engine::load_token(a.token_file);
  if (token.empty()) throw UsageError("no token: give --token-file FILE or set XFERBENCH_TOKEN");
  const RunOptions& opts = a.run;
  auto backend = engine_backend(opts.backend);
  if (client_on_device(cfg.mode)) check_devices(*backend, cfg);
  check_engine_memory(engine_client_host_bytes(cfg, *backend),
                      fmt::format("-t {}", format_size(cfg.total)));
  auto out = begin_engine(f, opts, *backend, params_of(a, cfg));
  const auto t0 = Clock::now();
  std::vector<std::unique_ptr<engine::ServerLink>> links;
  std::vector<EngineServer> servers;
  for (const auto& [host, port] : endpoints) {
    links.push_back(std::make_unique<engine::ServerLink>(
        host, port, token, engine_digest(cfg), server_on_device(cfg.mode) ? "device" : "host",
        per_server, a.connect_timeout, 10));
    servers.push_back({links.back().get(),
                       endpoints.size() > 1 ? fmt::format("{}:{}", host, port) : std::string()});
  }
  const double connect_ms = elapsed_us(t0, Clock::now()) / 1e3;
  EngineRun run;
  try {
    run = run_engine_client(servers, cfg, connect_ms, *backend);
  } catch (const Interrupted&) {  // stopped: the servers hear a goodbye, not a lost client
    for (auto& l : links) l->bye();
    throw;
  }
  for (auto& l : links) l->bye();
  return emit_engine(f, opts, *backend, std::move(run), params_of(a, cfg), *out);
}

int run_serve(const ServeArgs& a) {
  engine::ServerConfig cfg;
  std::tie(cfg.host, cfg.port) = engine::parse_endpoint(a.listen, "--listen");
  cfg.size = parse_size(a.size, "--size");
  cfg.clients = a.clients;
  cfg.accept_wait_s = a.accept_wait;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Buffer> region;
  if (a.mem == "device" || a.huge) backend = engine_backend(a.backend);
  if (a.huge) {
    if (const Support s = backend->use_huge_pages(); !s.ok)
      throw UsageError("--host-mem huge: " + s.reason);
  }
  if (a.mem == "device") {
    region = engine_server_region(*backend, a.device, cfg.size, "--device", cfg);
  } else if (a.huge) {
    region = engine_huge_region(*backend, cfg);
  }
  cfg.token = engine::load_token(a.token_file);
  if (cfg.token.empty()) {
    cfg.token = engine::make_token();
    if (a.token_file.empty()) {
      log_line("token (give it to clients with XFERBENCH_TOKEN): " + cfg.token);
    } else {
      engine::write_token(a.token_file, cfg.token);
      log_line("wrote a new token to " + a.token_file);
    }
  }
  cfg.log = log_line;
  const engine::ServerSummary s = engine::serve(cfg);
  return s.failed > 0 ? 1 : 0;
}

// Server and client in one process on a free loopback port.
int run_selftest(const Family& f, const ClientArgs& a) {
  EngineClientConfig cfg = to_config(a);
  if (a.err_mode == "auto") cfg.peer_errors = auto_peer_errors("127.0.0.1");
  const RunOptions& opts = a.run;
  auto backend = engine_backend(opts.backend);
  if (client_on_device(cfg.mode)) check_devices(*backend, cfg);
  engine_part_length(cfg, 1);
  auto out = begin_engine(f, opts, *backend, params_of(a, cfg));
  // A window is an async depth: the selftest runs that alone.
  EngineRun all =
      engine_selftest(cfg, *backend, a.server_device,
                      cfg.window > 0 ? std::vector<bool>{true} : std::vector<bool>{false, true});
  return emit_engine(f, opts, *backend, std::move(all), params_of(a, cfg), *out);
}

class EngineFamily final : public Family {
 public:
  EngineFamily() {
    schema_.add(engine_field::mode, FieldRole::key, "h2h, h2d, d2h, d2d: client and server memory")
        .add(engine_field::lane, FieldRole::info,
             "ucx, staged or ipc: how the client's memory meets the server's region")
        .add(engine_field::block, FieldRole::key, "bytes per request")
        .add(engine_field::requests, FieldRole::info, "requests per loop")
        .add(engine_field::lat_of, FieldRole::info, "what the latencies time: request or batch")
        .add(engine_field::lat_p50_us, FieldRole::metric, "latency median, us")
        .add(engine_field::lat_p99_us, FieldRole::metric, "latency p99, us")
        .add(engine_field::lat_max_us, FieldRole::metric, "latency max, us")
        .add(engine_field::batch, FieldRole::key, "async: requests per batch")
        .add(engine_field::submit_us, FieldRole::metric, "async: posting one batch, mean us")
        .add(engine_field::wait_us, FieldRole::metric, "async: waiting for one batch, mean us")
        .add(engine_field::window, FieldRole::info,
             "--window: requests in flight (the async batch depth it set)")
        .add(engine_field::msg_rate, FieldRole::metric,
             "--window: requests per second, requests of a loop / median loop time")
        .add(engine_field::server, FieldRole::key,
             "lanes or several servers: the server (host:port, empty with only one; all: the total "
             "over servers)")
        .add(engine_field::lane_id, FieldRole::key,
             "lanes or several servers: the lane (-1: the server's only lane, or the sum of its "
             "lanes)")
        .add(engine_field::nic, FieldRole::info,
             "the lane's NIC: --nic's (UCX_NET_DEVICES); client without --nic: the NIC whose "
             "counters moved at least half of the lane's bytes")
        .add(engine_field::nic_tx_bytes, FieldRole::info,
             "client: bytes the lane's NIC sent over the timed loops (host-wide counters)")
        .add(engine_field::nic_rx_bytes, FieldRole::info,
             "client: bytes the lane's NIC received over the timed loops (host-wide counters)")
        .add(engine_field::wire_gbps, FieldRole::metric,
             "client: the larger of nic_tx_bytes and nic_rx_bytes / the timed loops' time, GB/s")
        .add(engine_field::nic_errors, FieldRole::info,
             "client: the lane's NIC's error counters that grew (\"\": none), name +count")
        .add(engine_field::nic_warning, FieldRole::info,
             "client: WARN, the lane's bytes went through another NIC than --nic's")
        .add(engine_field::client, FieldRole::key,
             "fanin: the client's rank (-1: the server's total)")
        .add(engine_field::client_host, FieldRole::info, "fanin: the client's host")
        .add(engine_field::share, FieldRole::metric,
             "fanin: the client's GB/s over the clients' sum")
        .add(engine_field::fairness, FieldRole::metric,
             "fanin: Jain's index of the clients' GB/s (1: all equal, 1/N: one takes all)");
  }
  std::string name() const override { return "engine"; }
  std::string summary() const override { return "transfer engine on UCX: serve, client, selftest"; }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override {
    for (const char* op : {"read", "write"})
      r.add({fmt::format("engine.{}", op), "engine",
             fmt::format("one-sided {} of a server's registered region over UCX", op),
             [](const Capabilities& c) {
               return c.backend == "host" || c.backend == "cuda"
                          ? Support::yes()
                          : Support::no(
                                "this version's engine reaches host memory, the host "
                                "backend's NUMA nodes and CUDA memory (ucx, staged or "
                                "ipc) only");
             }});
  }
  std::string table_note(const Report& r) const override {
    const bool windowed = std::any_of(r.results.begin(), r.results.end(), [](const Record& x) {
      return x.get(engine_field::window).has_value();
    });
    const bool parts = std::any_of(r.results.begin(), r.results.end(), [](const Record& x) {
      return x.get(engine_field::server).has_value();
    });
    const bool wire = std::any_of(r.results.begin(), r.results.end(), [](const Record& x) {
      return x.get(engine_field::wire_gbps).has_value();
    });
    return engine_note() +
           (windowed ? "--window N: N requests in flight (async batches of N); Mmsg/s = requests "
                       "of a loop / median loop time, in millions\n"
                     : "") +
           (parts ? "lanes and servers: -t split evenly among them, each lane on its own thread "
                    "and UCX worker, every loop started together; sum (a server's lanes) and all "
                    "(every server) = their bytes / the span from the first start to the last "
                    "end of each loop\n"
                  : "") +
           (wire ? "Wire GB/s = the bytes the lane's NIC counted (the larger of sent and "
                   "received; the host's counters, so other traffic on that NIC counts too) / "
                   "the timed loops' time\n"
                 : "");
  }
  std::string tables(const Report& r) const override { return engine_tables(r); }

  void add_options(CLI::App& app) override {
    app.require_subcommand(1);
    serve_app_ = app.add_subcommand("serve", "export a registered region to clients");
    serve_app_->add_option("--listen", serve_.listen, "HOST:PORT (loopback unless told otherwise)")
        ->default_str("127.0.0.1:20000");
    serve_app_->add_option("--size", serve_.size, "region size, split into one slot per client")
        ->default_str("1G");
    serve_app_->add_option("--clients", serve_.clients, "clients to serve before exiting")
        ->check(CLI::Range(1, 4096))
        ->default_str("1");
    serve_app_->add_option("--token-file", serve_.token_file,
                           "shared token; created if missing (or XFERBENCH_TOKEN)");
    positive_seconds(serve_app_->add_option("--accept-wait", serve_.accept_wait,
                                            "seconds to wait for all clients"))
        ->default_str("60");
    serve_app_
        ->add_option("--mem", serve_.mem,
                     "the region's memory: host, or device (--device of --backend; the "
                     "host backend's devices are its NUMA nodes)")
        ->check(CLI::IsMember({"host", "device"}))
        ->default_str("host");
    serve_app_->add_option("--device", serve_.device, "the device of --mem device")
        ->default_str("0");
    serve_app_->add_option("--backend", serve_.backend, "whose device memory (auto: host)")
        ->default_str("auto");
    add_huge_pages_option(*serve_app_, serve_.huge);
    serve_app_->footer(R"(Examples:
  xferbench engine serve --listen 127.0.0.1:20000 --size 1G --token-file tok
  xferbench engine serve --listen 0.0.0.0:20000 --size 4G --clients 4 --token-file tok
  xferbench engine serve --mem device --device 1 --size 1G --token-file tok
  xferbench engine serve --size 1G --host-mem huge --token-file tok   region on huge pages
Clients: xferbench engine client --connect HOST:20000 --token-file tok)");
    client_app_ =
        app.add_subcommand("client", "read/write the server's region and report throughput");
    add_client_options(*client_app_, client_, true);
    client_app_->footer(R"(Examples:
  xferbench engine client --connect 10.0.0.2:20000 --token-file tok -t 256M -k 1M --op read,write
  xferbench engine client --connect 10.0.0.2:20000 --token-file tok -t 1G -k 64K --block-steps 8 --async
  xferbench engine client --connect 10.0.0.2:20000,10.0.0.3:20000 --token-file tok -t 512M -k 1M
  xferbench engine client --connect 10.0.0.2:20000 --token-file tok --nic mlx5_0:1,mlx5_1:1 -t 1G -k 1M
A server for it: xferbench engine serve --listen 0.0.0.0:20000 --size 1G --token-file tok)");
    fanin_app_ = app.add_subcommand(
        "fanin", "under mpiexec: rank 0 serves, every rank reads/writes it at once (incast)");
    fanin_.total = "16M";
    fanin_.block = "1M";
    add_client_options(*fanin_app_, fanin_, false);
    fanin_app_->footer(R"(Examples:
  mpiexec -n 4 xferbench engine fanin -t 64M -k 1M --op read,write
  srun -N 4 xferbench engine fanin --listen 10.0.0.1 -t 64M -k 1M    10.0.0.1: rank 0's node)");
    fanin_app_->add_option("--listen", fanin_listen_,
                           "rank 0's address the clients reach (default 127.0.0.1: one host)");
    CLI::App* self = app.add_subcommand("selftest", "server and client in one process (loopback)");
    self_.total = "16M";
    self_.ops = "read,write";
    self_.steps = 5;
    self_.loops = 3;
    add_client_options(*self, self_, false);
    self->footer(R"(Examples:
  xferbench engine selftest
  xferbench engine selftest --lanes 2 -t 64M -k 1M --block-steps 1
  xferbench engine selftest --mode d2d --device 0 --server-device 0)");
    app.footer(R"(Examples:
  xferbench engine serve --listen 127.0.0.1:20000 --size 2G --clients 2 --token-file tok
  xferbench engine client --connect 127.0.0.1:20000 --token-file tok --op read --mode h2h -t 1G -k 64K --block-steps 8 --loops 5 --async --batch 16
  xferbench engine selftest
  xferbench engine selftest --lanes 2 -t 64M -k 1M --block-steps 1
  xferbench engine client --connect 10.0.0.2:20000 --token-file tok --nic mlx5_0:1,mlx5_1:1 -t 1G -k 1M --async
  xferbench engine client --connect 10.0.0.2:20000,10.0.0.3:20000,10.0.0.4:20000 --token-file tok -t 768M -k 1M
  mpiexec -n 4 xferbench engine fanin -t 64M -k 1M --op read,write
  xferbench engine selftest --mode d2d --device 0 --server-device 0
  xferbench engine serve --mem device --device 1 --size 1G --token-file tok
  xferbench engine client --connect 127.0.0.1:20000 --token-file tok --mode d2d --lane staged --stage-chunk 4M)");
  }

  int run(const Invocation& inv) override {
    if (serve_app_->parsed()) return run_serve(serve_);
    if (client_app_->parsed()) return run_client(*this, client_);
    if (fanin_app_->parsed()) return run_fanin(*this, fanin_, fanin_listen_, inv);
    return run_selftest(*this, self_);
  }

 private:
  ServeArgs serve_;
  ClientArgs client_, self_, fanin_;
  std::string fanin_listen_;
  CLI::App* serve_app_ = nullptr;
  CLI::App* fanin_app_ = nullptr;
  CLI::App* client_app_ = nullptr;
  RecordSchema schema_{"engine"};
};

}  // namespace

std::string engine_note() {
  return "GB/s = bytes of a loop (kv: a round) / its time, decimal (1e9 B/s); median over the "
         "timed loops\n";
}

std::unique_ptr<Family> make_engine_family() { return std::make_unique<EngineFamily>(); }

}  // namespace xb
