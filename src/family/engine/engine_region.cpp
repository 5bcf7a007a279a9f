// The server side of the engine family's runs: the server's region in
// device memory (serve, fanin, selftest), and the selftest, which serves
// one in this process and runs the client against it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/engine/engine_bench.hpp"

namespace xb {

void check_engine_memory(Bytes need, const std::string& what) {
  if (std::string why = memory_shortfall(what, need, " of host memory"); !why.empty())
    throw UsageError(why);
}

Bytes engine_client_host_bytes(const EngineClientConfig& cfg, const Backend& b) {
  return !client_on_device(cfg.mode) || b.name() == "host" ? cfg.total : 0;
}

void check_engine_device(const Backend& b, int device, const char* option) {
  const auto n = static_cast<int>(b.devices().size());
  if (device < 0 || device >= n)
    throw UsageError(fmt::format("{} {}: the {} backend has {} device{} (0..{})", option, device,
                                 b.name(), n, n == 1 ? "" : "s", n - 1));
}

// The server's region on `device` of `b`: NUMA-bound memory on the host
// backend. Other backends' device memory is not host-addressable, and the
// server fills and checks its region through host access.
std::unique_ptr<Buffer> engine_server_region(Backend& b, int device, Bytes size, const char* option,
                                             engine::ServerConfig& sc) {
  check_engine_device(b, device, option);
  if (b.name() != "host" && b.name() != "cuda")
    throw UsageError(
        fmt::format("a server region in {} device memory is not in this version", b.name()));
  const Bytes free = b.free_memory(MemKind::device, device);
  if (free && size > free)
    throw UsageError(fmt::format("the region ({}) is larger than device {}'s free memory ({})",
                                 format_capacity(size), device, format_capacity(free)));
  auto region = b.allocate(MemKind::device, device, size);
  sc.memory = static_cast<std::byte*>(region->data());
  sc.kind = "device";
  sc.kind_note = engine_device_note(b, device);
  if (b.name() == "host") return region;  // NUMA-bound host memory: the server's own pointer
  // GPU memory: exported for IPC clients, registered with UCX only where
  // the UCX in use takes it, filled and checked through the backend.
  sc.registrable = engine::ucx_supports_memory("cuda");
  try {
    sc.ipc = b.export_buffer(*region);
  } catch (const NotSupported&) {
  }
  if (!sc.registrable && sc.ipc.empty())
    throw UsageError(
        fmt::format("{} device memory can be neither registered with UCX {} nor "
                    "exported for IPC here",
                    b.name(), engine::ucx_version()));
  Buffer* buf = region.get();
  static constexpr Bytes kChunk = 16ULL << 20;
  sc.fill = [&b, buf](std::uint64_t off, std::uint64_t len) {
    std::vector<std::byte> v;
    for (Bytes done = 0; done < len; done += kChunk) {
      v.resize(std::min(kChunk, len - done));
      fill_pattern(std::span(v), engine::kServerSeed, off + done);
      b.write(*buf, off + done, v);
    }
  };
  sc.check = [&b, buf](std::uint64_t off, std::uint64_t len, std::uint64_t seed,
                       std::uint64_t pattern_off) -> std::int64_t {
    std::vector<std::byte> v;
    for (Bytes done = 0; done < len; done += kChunk) {
      v.resize(std::min(kChunk, len - done));
      b.read(*buf, off + done, v);
      if (const auto bad = find_mismatch(std::span<const std::byte>(v), seed, pattern_off + done))
        return static_cast<std::int64_t>(done + *bad);
    }
    return -1;
  };
  return region;
}

std::unique_ptr<Buffer> engine_huge_region(Backend& b, engine::ServerConfig& sc) {
  auto region = b.allocate(MemKind::pageable, -1, sc.size);
  sc.memory = static_cast<std::byte*>(region->data());
  sc.kind_note = "host memory on huge pages";
  return region;
}

std::string engine_device_note(const Backend& b, int device) {
  return fmt::format("device memory of {} device {} ({})", b.name(), device,
                     b.devices()[static_cast<std::size_t>(device)].name);
}

EngineRun engine_selftest(EngineClientConfig cfg, Backend& be, int server_device,
                          const std::vector<bool>& asyncs) {
  engine::ServerConfig sc;
  sc.port = 0;
  sc.size = std::max<Bytes>(cfg.total, 1ULL << 20);
  const Bytes server_host = !server_on_device(cfg.mode) || be.name() == "host" ? sc.size : 0;
  check_engine_memory(
      server_host + engine_client_host_bytes(cfg, be),
      fmt::format("-t {} (the server's region and the client's memory)", format_size(cfg.total)));
  std::unique_ptr<Buffer> region;
  if (server_on_device(cfg.mode)) {
    region = engine_server_region(be, server_device, sc.size, "--server-device", sc);
  } else if (cfg.huge_pages && be.use_huge_pages().ok) {  // else the client's records say why
    region = engine_huge_region(be, sc);
  }
  sc.token = engine::make_token();
  sc.accept_wait_s = 30;
  std::promise<int> port;
  sc.on_listening = [&](int p) { port.set_value(p); };
  sc.log = [](const std::string&) {};
  auto server = std::async(std::launch::async, [&] { return engine::serve(sc); });
  auto ready = port.get_future();
  if (ready.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    server.get();  // rethrows the server's error
    throw RuntimeError("selftest server did not start");
  }
  EngineRun all;
  std::exception_ptr stopped;
  {
    const auto t0 = Clock::now();
    engine::ServerLink link("127.0.0.1", ready.get(), sc.token, "selftest", sc.kind, cfg.total, 10,
                            10);
    const double connect_ms = elapsed_us(t0, Clock::now()) / 1e3;
    try {
      for (bool async : asyncs) {
        cfg.async = async;
        EngineRun run = run_engine_client(link, cfg, connect_ms, be);
        for (auto& r : run.records) all.records.push_back(std::move(r));
        all.summary = std::move(run.summary);
      }
    } catch (const Interrupted&) {  // stopped: the server still ends, then the run
      stopped = std::current_exception();
    }
    link.bye();
  }
  server.get();
  if (stopped) std::rethrow_exception(stopped);
  return all;
}

}  // namespace xb
