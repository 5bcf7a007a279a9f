#pragma once
// `xferbench engine client` / `selftest`: HIXL-style throughput of one-sided
// reads and writes against an engine server's slot: total size per loop,
// block sizes block*2^i, sync requests or async batches.
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "engine/bootstrap.hpp"
#include "engine/ucx.hpp"

namespace xb {

// The fields engine adds to its records.
namespace engine_field {
inline constexpr FieldKey<std::string> mode{"mode"};
inline constexpr FieldKey<std::string> lane{"lane"};
inline constexpr FieldKey<std::int64_t> block{"block"};
inline constexpr FieldKey<std::int64_t> requests{"requests"};
inline constexpr FieldKey<std::string> lat_of{"lat_of"};
inline constexpr FieldKey<double> lat_p50_us{"lat_p50_us"};
inline constexpr FieldKey<double> lat_p99_us{"lat_p99_us"};
inline constexpr FieldKey<double> lat_max_us{"lat_max_us"};
inline constexpr FieldKey<std::int64_t> batch{"batch"};
inline constexpr FieldKey<double> submit_us{"submit_us"};
inline constexpr FieldKey<double> wait_us{"wait_us"};
// --window runs only: requests in flight (the async batch depth), and
// requests per second of a loop on the median loop (requests / median time).
inline constexpr FieldKey<std::int64_t> window{"window"};
inline constexpr FieldKey<double> msg_rate{"msg_rate"};
}  // namespace engine_field

// The first letter: the client's local memory; the last: the server's
// region (h host, d device: cudaMalloc on cuda, memory bound to the NUMA
// node that is the device on the host backend).
enum class EngineMode { h2h, h2d, d2h, d2d };
const char* to_string(EngineMode m);
inline bool client_on_device(EngineMode m) { return m == EngineMode::d2h || m == EngineMode::d2d; }
inline bool server_on_device(EngineMode m) { return m == EngineMode::h2d || m == EngineMode::d2d; }

// How the client's memory meets UCX: `ucx` registers it (host memory, and
// device memory a UCX can register), `staged` moves it through two pinned
// bounce buffers of --stage-chunk, device -> host -> UCX (writes) and
// UCX -> host -> device (reads), the copy of one chunk overlapping the
// transfer of the other.
// `ipc`: the server's region is device memory on this node, exported with
// an IPC handle; the client maps it and copies with the copy engine.
enum class EngineLane { automatic, ucx, staged, ipc };
const char* to_string(EngineLane l);
// What decides the lane.
struct LaneFacts {
  bool client_device = false;       // the mode's client side is device memory
  bool device_registrable = false;  // UCX registers the client backend's device memory
  bool server_rkey = true;          // the server's region is registered with UCX
  bool server_ipc = false;          // ... and exported with an IPC handle
  bool same_node = false;           // the server runs on this node
  bool can_import = false;          // the client's backend maps IPC handles (cuda)
  std::string backend = "host";
};
// The lane a run takes: `forced` unless automatic; automatic: ipc where the
// server exports its region and this client can map it on the same node,
// else ucx where UCX can register the client's memory, else staged. Throws
// UsageError for a lane that cannot work, with the reason.
EngineLane choose_lane(EngineLane forced, const LaneFacts& f);
// The chunks (offset, length) of [0, length) in pieces of `chunk`, the last
// one partial. Pure.
std::vector<std::pair<Bytes, Bytes>> stage_chunks(Bytes length, Bytes chunk);
// Whether UCX can register this backend's device memory: host (NUMA-bound
// host memory), cuda with a CUDA-enabled UCX.
bool device_memory_registrable(const Backend& b);

struct EngineClientConfig {
  std::vector<engine::Op> ops{engine::Op::read};
  EngineMode mode = EngineMode::h2h;
  int device = 0;                     // the client's device, for d2h and d2d
  EngineLane lane = EngineLane::automatic;
  Bytes stage_chunk = 1ULL << 20;     // --stage-chunk
  Bytes total = 64ULL << 20;  // -t per loop
  Bytes block = 64ULL << 10;  // -k
  int block_steps = 1;        // block * 2^i, i < steps
  int loops = 5;
  int warmup = 1;
  bool async = false;
  int batch = 16;
  // --window N: the async batch depth (async, batch N), and records with
  // window and msg_rate; 0: no window fields (the default).
  int window = 0;
  bool check = true;
  double timeout_s = 30;     // per request
  bool peer_errors = false;  // UCX peer error mode (excludes shared memory on UCX 1.13)
};

// Block sizes of the run. Throws UsageError for -k > -t, -t not a multiple
// of a block, zero loops/steps/batch.
std::vector<Bytes> engine_blocks(const EngineClientConfig& cfg);
std::string engine_digest(const EngineClientConfig& cfg);

struct EngineRun {
  std::vector<Record> records;
  Params summary;  // ucx_version, transports, connect_ms, register_ms
};

// Runs every op and block size against the server behind `link`; the
// client's memory comes from `backend` (device memory for d2h and d2d).
EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend);

// Throws UsageError unless `device` is one of b's devices (`option` names it).
void check_engine_device(const Backend& b, int device, const char* option);
// A server region of `size` bytes in device memory of `device`, set up in
// `sc`: the host backend's NUMA-bound memory as it is; GPU memory exported
// for IPC clients, registered with UCX where the UCX takes it, filled and
// checked through the backend. `b` and the returned buffer must outlive
// the server. Throws UsageError with the reason.
std::unique_ptr<Buffer> engine_server_region(Backend& b, int device, Bytes size, const char* option,
                                             engine::ServerConfig& sc);
// "device memory of host device 0 (NUMA node 0 (...))".
std::string engine_device_note(const Backend& b, int device);
// Server and client in one process on a free loopback port: one client
// run per value of `asyncs` (sync and async by default), records in order.
EngineRun engine_selftest(EngineClientConfig cfg, Backend& be, int server_device,
                          const std::vector<bool>& asyncs = {false, true});

}  // namespace xb
