// `mpiexec -n N xferbench engine fanin`: rank 0 serves, every rank is its
// client; each step's records gathered and journaled by rank 0 as it ends.
#include <fmt/format.h>

#include <future>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/sysinfo.hpp"
#include "core/tcp.hpp"
#include "core/timer.hpp"
#include "family/agree.hpp"
#include "family/cycles.hpp"
#include "family/engine/engine_args.hpp"
#include "family/host_pages.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"
#include "runtime/runtime.hpp"

namespace xb {
namespace {

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

}  // namespace

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
    std::vector<std::vector<Record>> per_rank;  // each rank's records of this step, decoded once
    std::vector<std::vector<std::vector<double>>> per_rank_loops;
    for (std::size_t i = 0; i < wires.size(); ++i) {
      per_rank.push_back(records_from_wire(wires[i]));
      if (per_rank.back().size() != step.size())
        throw RuntimeError("fan-in: the clients ran different steps");
      per_rank_loops.push_back(loops_from_text(loops[i], step.size()));
    }
    for (std::size_t k = 0; k < step.size(); ++k) {
      std::vector<Record> clients;
      std::vector<std::vector<double>> times;
      for (std::size_t i = 0; i < per_rank.size(); ++i) {
        clients.push_back(std::move(per_rank[i][k]));
        clients.back().set(engine_field::client_host, hosts[i]);
        times.push_back(std::move(per_rank_loops[i][k]));
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

}  // namespace xb
