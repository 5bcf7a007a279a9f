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
#include "family/engine/engine_bench.hpp"
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

struct ClientArgs {
  RunOptions run;
  std::string connect = "127.0.0.1:20000", token_file, ops = "read", mode = "h2h", total = "64M",
              block = "64K";
  int steps = 1, loops = 5;
  std::optional<int> batch;  // --batch, default 16
  int window = 0;            // --window, 0: not given
  bool async = false;
  double connect_timeout = 10, timeout = 30;
  std::string err_mode = "auto";
  std::string device = "0";  // one device, or a list: a lane each
  int server_device = 0;
  std::string lane = "auto", stage_chunk = "1M";
  std::string lanes, nic;  // --lanes N, --nic a,b ("": not given)
  bool huge = false;       // --host-mem huge
};

void log_line(const std::string& s) { std::fprintf(stderr, "engine: %s\n", s.c_str()); }

// --err-mode auto: UCX's peer error mode wherever shared memory cannot be
// used anyway (another host, or UCX_TLS without a shared-memory transport):
// then a dying client cannot take the server's UCX endpoints down with it.
// On one host with shared memory, no error mode, so UCX may pick it.
bool auto_peer_errors(const std::string& host) {
  const bool local =
      host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  if (!local) return true;
  const char* tls = std::getenv("UCX_TLS");
  if (!tls || !*tls) return false;
  const std::string t = tls;
  for (const char* shm : {"shm", "posix", "sysv", "cma", "xpmem", "knem", "all"})
    if (t.find(shm) != std::string::npos) return false;
  return true;
}

// --lanes, --nic and a --device list: the lanes and what each uses. A list
// sets the lane count where --lanes is not given, and must match it where
// it is.
void apply_lanes(const ClientArgs& a, EngineClientConfig& c) {
  c.devices.clear();
  c.devices = parse_index_list("--device", a.device, "0 or 0,1");
  c.device = c.devices[0];
  if (c.devices.size() == 1) c.devices.clear();
  c.nics.clear();
  if (!a.nic.empty())
    for (const auto& n : option_list("--nic", a.nic, "mlx5_0,mlx5_1")) {
      check_engine_nic(n);
      c.nics.push_back(n);
    }
  std::optional<int> lanes;
  if (!a.lanes.empty()) {
    if (a.lanes.find(',') != std::string::npos)
      throw UsageError(fmt::format("--lanes '{}': one count, not a list (give 2)", a.lanes));
    lanes = parse_count_list("--lanes", a.lanes, kEngineMaxLanes, "2")[0];
  }
  for (const auto& [what, n] : {std::pair<const char*, std::size_t>{"--nic", c.nics.size()},
                                {"--device", c.devices.size()}}) {
    if (n <= 1) continue;
    if (lanes && *lanes != static_cast<int>(n))
      throw UsageError(
          fmt::format("{} lists {} for --lanes {}: give one per lane", what, n, *lanes));
    lanes = static_cast<int>(n);
  }
  c.lanes = lanes.value_or(1);
}

EngineClientConfig to_config(const ClientArgs& a) {
  EngineClientConfig c;
  c.ops.clear();
  for (const auto& op : option_list("--op", a.ops, "read, write or read,write")) {
    if (op == "read")
      c.ops.push_back(engine::Op::read);
    else if (op == "write")
      c.ops.push_back(engine::Op::write);
    else
      throw UsageError(fmt::format("--op: unknown operation '{}' (read, write)", op));
  }
  if (c.ops.empty()) throw UsageError("--op needs read, write or both");
  const char* modes[] = {"h2h", "h2d", "d2h", "d2d"};
  for (int i = 0; i < 4; ++i)
    if (a.mode == modes[i]) c.mode = static_cast<EngineMode>(i);
  c.total = parse_size(a.total, "-t size");
  c.block = parse_size(a.block, "-k size");
  c.block_steps = a.steps;
  c.loops = a.run.iters_or(a.loops);
  c.warmup = a.run.warmup_or(1);
  c.async = a.async;
  c.huge_pages = a.huge;
  c.batch = a.batch.value_or(16);
  if (a.window > 0) {  // the engine pipelines already: a window is an async batch of N
    if (a.batch && *a.batch != a.window)
      throw UsageError(fmt::format(
          "--window {} is the async batch depth; --batch {} says otherwise (give one of them)",
          a.window, *a.batch));
    c.async = true;
    c.batch = a.window;
    c.window = a.window;
  }
  c.check = !a.run.no_check;
  c.timeout_s = a.timeout;
  c.peer_errors = a.err_mode == "peer";  // "auto" is resolved once the server's host is known
  apply_lanes(a, c);
  c.lane = a.lane == "ucx"      ? EngineLane::ucx
           : a.lane == "staged" ? EngineLane::staged
           : a.lane == "ipc"    ? EngineLane::ipc
                                : EngineLane::automatic;
  c.stage_chunk = parse_size(a.stage_chunk, "--stage-chunk");
  if (c.stage_chunk == 0) throw UsageError("--stage-chunk must be at least 1 byte");
  engine_blocks(c);  // validates
  return c;
}

// The backend whose memory a side uses: `auto` is the host backend (the
// engine is a host-network tool; its "device" there is a NUMA node).
std::unique_ptr<Backend> engine_backend(const std::string& name) {
  return make_backend(name == "auto" ? "host" : name);
}

Params params_of(const ClientArgs& a, const EngineClientConfig& c) {
  Params p = {{"connect", a.connect},
              {"op", a.ops},
              {"mode", a.mode},
              {"total", static_cast<std::int64_t>(c.total)},
              {"block", static_cast<std::int64_t>(c.block)},
              {"block_steps", static_cast<std::int64_t>(c.block_steps)},
              {"loops", static_cast<std::int64_t>(c.loops)},
              {"warmup", static_cast<std::int64_t>(c.warmup)},
              {"async", c.async},
              {"batch", static_cast<std::int64_t>(c.batch)},
              {"check", c.check},
              {"device", a.device},
              {"lanes", static_cast<std::int64_t>(c.lanes)},
              {"lane", a.lane},
              {"stage_chunk", static_cast<std::int64_t>(c.stage_chunk)}};
  if (c.window > 0) p.emplace_back("window", static_cast<std::int64_t>(c.window));
  if (!a.nic.empty()) p.emplace_back("nic", a.nic);
  if (c.huge_pages) p.emplace_back("host_mem", std::string("huge"));
  return p;
}

void add_client_options(CLI::App& app, ClientArgs& a, bool with_connect) {
  if (with_connect) {
    app.add_option("--connect", a.connect,
                   "server HOST:PORT, or a list of servers reached at once (fan-out: -t split "
                   "among them; a record per server and the total)")
        ->default_str("127.0.0.1:20000");
    app.add_option("--token-file", a.token_file, "shared token (or XFERBENCH_TOKEN)");
    positive_seconds(app.add_option("--connect-timeout", a.connect_timeout,
                                    "seconds to reach the server and have its answer"))
        ->default_str("10");
  }
  app.add_option("--op", a.ops, "read, write, or read,write")->default_str("read");
  app.add_option("--mode", a.mode,
                 "h2h, h2d, d2h, d2d: the client's memory, then the server's region (h host, d "
                 "device: a NUMA node on the host backend, cudaMalloc on cuda)")
      ->check(CLI::IsMember({"h2h", "h2d", "d2h", "d2d"}))
      ->default_str("h2h");
  app.add_option("--device", a.device,
                 "the client's device (d2h, d2d); a list (0,1) gives each lane its own")
      ->default_str("0");
  app.add_option("--lanes", a.lanes,
                 "lanes to each server, each with its own UCX context, worker, endpoint and "
                 "thread; -t split among them; a record per lane and their sum")
      ->type_name("N")
      ->default_str("1");
  app.add_option("--nic", a.nic,
                 "a NIC per lane (UCX_NET_DEVICES of that lane's context): mlx5_0:1,mlx5_1:1 or "
                 "eth0,eth1; sets --lanes")
      ->type_name("LIST");
  if (!with_connect)
    app.add_option("--server-device", a.server_device, "the server's device (h2d, d2d)")
        ->default_str("0");
  app.add_option("--lane", a.lane,
                 "auto, ucx (UCX registers the client's memory), staged (device memory through "
                 "pinned bounce buffers) or ipc (the server's device region mapped on its node, "
                 "copy engine)")
      ->check(CLI::IsMember({"auto", "ucx", "staged", "ipc"}))
      ->default_str("auto");
  app.add_option("--stage-chunk", a.stage_chunk, "bytes per bounce buffer of the staged lane")
      ->type_name("SIZE")
      ->default_str("1M");
  app.add_option("-t,--total-size", a.total, "bytes moved per loop")->type_name("SIZE");
  app.add_option("-k,--block-size", a.block, "bytes per request")
      ->type_name("SIZE")
      ->default_str("64K");
  app.add_option("--block-steps", a.steps, "block sizes block*2^i, i < steps")
      ->default_str(std::to_string(a.steps));
  app.add_flag("--async", a.async, "post requests in batches, then wait");
  app.add_option("--batch", a.batch, "requests per async batch")->default_str("16");
  app.add_option_function<std::string>(
         "--window", [&a](const std::string& w) { a.window = parse_window(w); },
         "message rate: N requests in flight (async, batches of N: the engine's pipeline depth); "
         "records add window and msg_rate (requests per second)")
      ->type_name("N");
  positive_seconds(app.add_option("--timeout", a.timeout, "seconds one request may take"))
      ->default_str("30");
  add_huge_pages_option(app, a.huge);
  app.add_option("--err-mode", a.err_mode,
                 "auto (default: peer wherever shared memory cannot be used), none, or peer: UCX "
                 "peer failure handling (UCX 1.13: no shared-memory transports then)")
      ->check(CLI::IsMember({"auto", "none", "peer"}))
      ->default_str("auto");
  add_run_options(app, a.run,
                  {.iters = fmt::format("timed loops (default {})", a.loops),
                   .iters_name = "-n,--loops",
                   .warmup = "warm-up loops, discarded (default 1)",
                   .check = "skip verification"});
}

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

void check_devices(const Backend& b, const EngineClientConfig& cfg) {
  check_engine_device(b, cfg.device, "--device");
  for (const int d : cfg.devices) check_engine_device(b, d, "--device");
}

int run_client(const Family& f, const ClientArgs& a) {
  EngineClientConfig cfg = to_config(a);
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

// Loop times of records, on the wire between ranks: "1.5,2.25;;3" (a
// record without a figure has none).
std::string loops_to_text(const std::vector<std::vector<double>>& loops) {
  std::string s;
  for (std::size_t i = 0; i < loops.size(); ++i) {
    if (i) s += ';';
    for (std::size_t k = 0; k < loops[i].size(); ++k)
      s += fmt::format("{}{}", k ? "," : "", loops[i][k]);
  }
  return s;
}

std::vector<std::vector<double>> loops_from_text(const std::string& s, std::size_t records) {
  std::vector<std::vector<double>> out(records);
  std::size_t i = 0, start = 0;
  while (i < records && start <= s.size()) {
    const std::size_t end = std::min(s.find(';', start), s.size());
    for (const auto& v : split_list(s.substr(start, end - start)))
      out[i].push_back(std::strtod(v.c_str(), nullptr));
    ++i;
    start = end + 1;
  }
  return out;
}

// `mpiexec -n N xferbench engine fanin`: rank 0 serves, every rank (rank 0
// too) is a client of it; each loop starts together on every rank; rank 0
// reports each client, its share and the server's total with Jain's index.
int run_fanin(const Family& f, ClientArgs a, const std::string& listen, const Invocation& inv) {
  EngineClientConfig cfg = to_config(a);
  if (cfg.lanes > 1)
    throw UsageError("engine fanin: one lane per client (each rank is a client: run more ranks)");
  if (a.run.backend == "auto") a.run.backend = "host";  // the engine is a host-network tool
  Ranked r = start_ranked(f, a.run, inv, [&](Runtime& rt, Backend& be) {
    if (client_on_device(cfg.mode)) check_devices(be, cfg);
    // rank 0's region (a slot of -t per client) and this host's clients' memory
    const auto here = static_cast<Bytes>(rt.single_host() ? rt.size() : 1);
    check_engine_memory(
        cfg.total * static_cast<Bytes>(rt.root() || rt.single_host() ? rt.size() : 0) +
            engine_client_host_bytes(cfg, be) * here,
        fmt::format("-t {} x {} clients", format_size(cfg.total), rt.size()));
    if (!listen.empty() && !tcp_resolves(listen))
      throw UsageError(fmt::format("--listen: cannot resolve '{}'", listen));
    if (!rt.single_host() && listen.empty())
      throw UsageError(
          "engine fanin across hosts: give --listen ADDRESS, rank 0's address that "
          "the other hosts reach");
  });
  Runtime& rt = *r.rt;
  const std::string host = listen.empty() ? "127.0.0.1" : listen;
  if (a.err_mode == "auto") cfg.peer_errors = auto_peer_errors(rt.single_host() ? host : "remote");
  cfg.journal = false;  // rank 0 journals the fan-in records
  cfg.before_loop = [&rt] { rt.barrier(Runtime::Wait::idle); };
  cfg.stop_point = [&rt] { stop_point(&rt); };
  r.begin(f, "engine", params_of(a, cfg));

  // Rank 0's server: a slot of -t per client.
  engine::ServerConfig sc;
  sc.host = host;
  sc.port = 0;
  sc.clients = rt.size();
  sc.size = (cfg.total + 4095) / 4096 * 4096 * static_cast<Bytes>(rt.size());
  sc.accept_wait_s = 60;
  std::unique_ptr<Buffer> region;
  std::future<engine::ServerSummary> server;
  std::promise<int> port;
  std::string where;
  agree_or_throw(rt, [&] {
    if (!rt.root()) return;
    if (server_on_device(cfg.mode))
      region = engine_server_region(*r.backend, a.server_device, sc.size, "--server-device", sc);
    else if (cfg.huge_pages && r.backend->use_huge_pages().ok)  // else the records say why
      region = engine_huge_region(*r.backend, sc);
    sc.token = engine::make_token();
    sc.on_listening = [&](int p) { port.set_value(p); };
    auto ready = port.get_future();
    server = std::async(std::launch::async, [&] { return engine::serve(sc); });
    if (ready.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      server.get();  // the server's error
      throw RuntimeError("the fan-in server did not start");
    }
    where = fmt::format("{} {}", ready.get(), sc.token);
  });
  where = rt.broadcast_text(where, 0);
  const int server_port = std::stoi(where.substr(0, where.find(' ')));
  const std::string token = where.substr(where.find(' ') + 1);

  std::unique_ptr<engine::ServerLink> link;
  double connect_ms = 0;
  agree_or_throw(rt, [&] {
    const auto t0 = Clock::now();
    link = std::make_unique<engine::ServerLink>(host, server_port, token, engine_digest(cfg),
                                                server_on_device(cfg.mode) ? "device" : "host",
                                                cfg.total, 10, 10);
    connect_ms = elapsed_us(t0, Clock::now()) / 1e3;
  });
  // Each step's records, gathered and journaled by rank 0 as the step ends:
  // a stopped run keeps every step done.
  const auto hosts = rt.allgather(host_name());
  std::vector<Record> out;
  cfg.after_step = [&](const std::vector<Record>& step,
                       const std::vector<std::vector<double>>& step_loops) {
    const auto wires = rt.allgather(records_to_wire(step));
    const auto loops = rt.allgather(loops_to_text(step_loops));
    if (!rt.root()) return;
    for (std::size_t k = 0; k < step.size(); ++k) {
      std::vector<Record> clients;
      std::vector<std::vector<double>> times;
      for (std::size_t i = 0; i < wires.size(); ++i) {
        std::vector<Record> theirs = records_from_wire(wires[i]);
        if (theirs.size() != step.size())
          throw RuntimeError("fan-in: the clients ran different steps");
        clients.push_back(std::move(theirs[k]));
        clients.back().set(engine_field::client_host, hosts[i]);
        times.push_back(loops_from_text(loops[i], step.size())[k]);
      }
      for (Record& rec : fanin_records(std::move(clients), times)) {
        record_done(rec);
        out.push_back(std::move(rec));
      }
    }
  };
  EngineRun run;
  try {
    run = run_engine_client(*link, cfg, connect_ms, *r.backend);
  } catch (const Interrupted&) {
    link->bye();
    throw;
  }
  link->bye();
  if (rt.root()) server.get();
  Params summary = std::move(run.summary);
  summary.emplace_back("clients", static_cast<std::int64_t>(rt.size()));
  Report report{"engine", {}, params_of(a, cfg), std::move(out), std::move(summary)};
  note_host_pages(*r.backend, report);
  return r.report(f, std::move(report), a.run);
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
        .add(engine_field::nic, FieldRole::info, "--nic: the lane's NIC (UCX_NET_DEVICES)")
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
    return engine_note() +
           (windowed ? "--window N: N requests in flight (async batches of N); Mmsg/s = requests "
                       "of a loop / median loop time, in millions\n"
                     : "") +
           (parts ? "lanes and servers: -t split evenly among them, each lane on its own thread "
                    "and UCX worker, every loop started together; sum (a server's lanes) and all "
                    "(every server) = their bytes / the span from the first start to the last "
                    "end of each loop\n"
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
