// The engine family's client-side arguments: --err-mode auto, --lanes /
// --nic / --device lists, the run's configuration, its params and the
// options that declare it.
#include "family/engine/engine_args.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "backend/select/select.hpp"
#include "core/error.hpp"
#include "family/host_pages.hpp"
#include "family/parse.hpp"

namespace xb {
namespace {

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

}  // namespace

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

EngineClientConfig to_config(const ClientArgs& a) {
  EngineClientConfig c;
  c.ops.clear();
  for (const auto& op : option_set("--op", a.ops, "read, write or read,write")) {
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
  c.check = check_mode(a.run) != CheckMode::none;
  c.check_every = check_mode(a.run) == CheckMode::every;
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
                   .check = "skip verification",
                   .check_every = true});
}

// The run's output, begun: a bad -o fails before anything connects, and

void check_devices(const Backend& b, const EngineClientConfig& cfg) {
  check_engine_device(b, cfg.device, "--device");
  for (const int d : cfg.devices) check_engine_device(b, d, "--device");
}

}  // namespace xb
