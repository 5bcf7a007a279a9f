// The shape of an engine client run, decided before anything connects: the
// mode and lane names, the lane a run takes, its block sizes, how -t
// divides among lanes and servers (fan-out), the --connect list and the
// --nic check.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "family/engine/engine_bench.hpp"
#include "family/parse.hpp"

namespace xb {

using engine::Op;

const char* to_string(EngineMode m) {
  constexpr const char* names[] = {"h2h", "h2d", "d2h", "d2d"};
  return names[static_cast<int>(m)];
}

std::vector<Bytes> engine_blocks(const EngineClientConfig& cfg) {
  if (cfg.loops < 1 || cfg.block_steps < 1 || cfg.batch < 1 || cfg.warmup < 0)
    throw UsageError("--loops, --block-steps and --batch must be at least 1, -w at least 0");
  if (cfg.block > cfg.total)
    throw UsageError(
        fmt::format("-k {} is larger than -t {}", format_size(cfg.block), format_size(cfg.total)));
  std::vector<Bytes> out;
  for (int i = 0; i < cfg.block_steps; ++i) {
    const Bytes bs = cfg.block << i;
    if (bs > cfg.total)
      throw UsageError(fmt::format("--block-steps {}: block {} exceeds -t {}", cfg.block_steps,
                                   format_size(bs), format_size(cfg.total)));
    if (cfg.total % bs != 0)
      throw UsageError(fmt::format("-t {} is not a multiple of the block size {}",
                                   format_size(cfg.total), format_size(bs)));
    out.push_back(bs);
  }
  return out;
}

std::string engine_digest(const EngineClientConfig& c) {
  return fmt::format(
      "{} {}{} t={} k={} steps={} loops={} {}",
      c.ops.size() == 2      ? "read,write"
      : c.ops[0] == Op::read ? "read"
                             : "write",
      to_string(c.mode),
      c.lane == EngineLane::automatic ? "" : fmt::format(" lane={}", to_string(c.lane)), c.total,
      c.block, c.block_steps, c.loops,
      c.async ? fmt::format("async batch {}", c.batch) : std::string("sync"));
}

const char* to_string(EngineLane l) {
  switch (l) {
    case EngineLane::ucx:
      return "ucx";
    case EngineLane::staged:
      return "staged";
    case EngineLane::ipc:
      return "ipc";
    case EngineLane::automatic:
      break;
  }
  return "auto";
}

EngineLane choose_lane(EngineLane forced, const LaneFacts& f) {
  const bool ipc_ok = f.server_ipc && f.same_node && f.can_import;
  const bool registrable = !f.client_device || f.device_registrable;
  if (forced == EngineLane::ipc && !ipc_ok)
    throw UsageError(
        !f.server_ipc ? std::string("--lane ipc: the server's region has no IPC handle (a host "
                                    "region, or a backend without device IPC)")
        : !f.same_node
            ? std::string("--lane ipc: the server runs on another node")
            : fmt::format("--lane ipc: the {} backend cannot map IPC handles", f.backend));
  if (!f.server_rkey && !ipc_ok && forced != EngineLane::ipc)
    throw UsageError(fmt::format(
        "the server's region is device memory that UCX {} cannot register: only CUDA IPC on the "
        "server's node reaches it (run the client there with --backend cuda)",
        engine::ucx_version()));
  if (forced == EngineLane::ucx && !registrable)
    throw UsageError(
        fmt::format("--lane ucx: this UCX ({}) cannot register {} device memory; use --lane staged",
                    engine::ucx_version(), f.backend));
  if (forced == EngineLane::staged && !f.client_device)
    throw UsageError("--lane staged stages device memory: the mode's client side is host memory");
  if (forced != EngineLane::automatic) return forced;
  if (ipc_ok) return EngineLane::ipc;
  return registrable ? EngineLane::ucx : EngineLane::staged;
}

std::vector<std::pair<Bytes, Bytes>> stage_chunks(Bytes length, Bytes chunk) {
  std::vector<std::pair<Bytes, Bytes>> out;
  if (chunk == 0) return out;
  for (Bytes off = 0; off < length; off += chunk)
    out.emplace_back(off, std::min(chunk, length - off));
  return out;
}

bool device_memory_registrable(const Backend& b) {
  if (b.name() == "host") return true;  // NUMA-bound host memory
  if (b.name() == "cuda") return engine::ucx_supports_memory("cuda");
  return false;
}

Bytes engine_part_length(const EngineClientConfig& cfg, std::size_t servers) {
  const auto blocks = engine_blocks(cfg);
  if (cfg.lanes < 1 || cfg.lanes > kEngineMaxLanes)
    throw UsageError(fmt::format("--lanes {}: give 1 to {}", cfg.lanes, kEngineMaxLanes));
  const Bytes parts = static_cast<Bytes>(cfg.lanes) * std::max<std::size_t>(servers, 1);
  if (parts == 1) return cfg.total;
  const Bytes largest = blocks.back();
  if (cfg.total / largest < parts)
    throw UsageError(fmt::format(
        "{} lane{} x {} server{} = {} parts, but -t {} holds only {} block{} of {}: each part "
        "needs at least one (a larger -t, a smaller -k or fewer --block-steps)",
        cfg.lanes, cfg.lanes == 1 ? "" : "s", servers, servers == 1 ? "" : "s", parts,
        format_size(cfg.total), cfg.total / largest, cfg.total / largest == 1 ? "" : "s",
        format_size(largest)));
  const Bytes part = cfg.total / parts;
  if (cfg.total % parts != 0 || part % largest != 0)
    throw UsageError(fmt::format(
        "-t {} does not split into {} equal parts ({} lanes x {} servers) of whole {} blocks",
        format_size(cfg.total), parts, cfg.lanes, servers, format_size(largest)));
  return part;
}

void check_engine_nic(const std::string& nic) {
  namespace fs = std::filesystem;
  const std::string dev = nic.substr(0, nic.find(':'));
  std::error_code ec;
  if (!dev.empty() && dev.find('/') == std::string::npos &&
      (fs::exists("/sys/class/net/" + dev, ec) || fs::exists("/sys/class/infiniband/" + dev, ec)))
    return;
  throw UsageError(fmt::format(
      "--nic {}: no such network or RDMA device here (/sys/class/net, /sys/class/infiniband)",
      nic));
}

std::vector<std::pair<std::string, int>> parse_engine_servers(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& item : option_list("--connect", text, "10.0.0.1:20000,10.0.0.2:20000")) {
    const auto ep = engine::parse_endpoint(item, "--connect");
    for (const auto& seen : out)
      if (seen == ep)
        throw UsageError(
            fmt::format("--connect: {}:{} is given twice (a server once; --lanes "
                        "gives it more lanes)",
                        ep.first, ep.second));
    out.push_back(ep);
  }
  return out;
}

}  // namespace xb
