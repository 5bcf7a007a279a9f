#pragma once
// `xferbench engine client` / `selftest`: HIXL-style throughput of one-sided
// reads and writes against an engine server's slot: total size per loop,
// block sizes block*2^i, sync requests or async batches.
//
// This header is the engine benchmark's face; behind it: engine_lanes.cpp
// (the shape of a run: modes, lanes, blocks, how -t divides among lanes and
// servers, --connect and --nic), engine_client.cpp (run_engine_client: its
// parts, steps and records), engine_records.cpp (a part's record, sums over
// parts, fan-in's total), engine_region.cpp (the server's region in device
// memory, the selftest) and engine_local.hpp (one class per lane kind).
#include <functional>
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
// Runs of more than one part (--lanes, several --connect servers): the
// server of a record ("host:port", "" with only one, "all" for the total
// over servers), its lane (-1: the server's only lane, or the sum of its
// lanes) and the lane's NIC (--nic).
inline constexpr FieldKey<std::string> server{"server"};
inline constexpr FieldKey<std::int64_t> lane_id{"lane_id"};
inline constexpr FieldKey<std::string> nic{"nic"};
// engine client, a lane whose NIC has counters (core/nic_counters): what
// that NIC sent and received over the step's timed loops (the host's
// counters: everything on that NIC counts), those bytes over the loops'
// time, its error counters that grew ("" none), and a WARN where the
// lane's bytes went through another NIC than --nic's.
inline constexpr FieldKey<std::int64_t> nic_tx_bytes{"nic_tx_bytes"};
inline constexpr FieldKey<std::int64_t> nic_rx_bytes{"nic_rx_bytes"};
inline constexpr FieldKey<double> wire_gbps{"wire_gbps"};
inline constexpr FieldKey<std::string> nic_errors{"nic_errors"};
inline constexpr FieldKey<std::string> nic_warning{"nic_warning"};
// Fan-in (engine fanin): the client (its rank; -1: the server's total), its
// share of the total GB/s, and Jain's fairness index over the clients.
inline constexpr FieldKey<std::int64_t> client{"client"};
inline constexpr FieldKey<std::string> client_host{"client_host"};
inline constexpr FieldKey<double> share{"share"};
inline constexpr FieldKey<double> fairness{"fairness"};
}  // namespace engine_field

inline constexpr int kEngineMaxLanes = 64;

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
  int device = 0;  // the client's device, for d2h and d2d
  EngineLane lane = EngineLane::automatic;
  Bytes stage_chunk = 1ULL << 20;  // --stage-chunk
  Bytes total = 64ULL << 20;       // -t per loop
  Bytes block = 64ULL << 10;       // -k
  int block_steps = 1;             // block * 2^i, i < steps
  int loops = 5;
  int warmup = 1;
  bool async = false;
  int batch = 16;
  // --window N: the async batch depth (async, batch N), and records with
  // window and msg_rate; 0: no window fields (the default).
  int window = 0;
  bool check = true;
  // --check every: each timed loop checked after it (reads poisoned before
  // it), outside its time; its records get the rate of wrong loops.
  bool check_every = false;
  double timeout_s = 30;     // per request
  bool peer_errors = false;  // UCX peer error mode (excludes shared memory on UCX 1.13)
  // --host-mem huge: the client's host memory (and the selftest server's
  // region) from the backend's huge pages, registered with UCX, instead of
  // UCX's own allocation; waived where the system has none.
  bool huge_pages = false;
  // --lanes: lanes to each server, each on its own UCX context, worker,
  // endpoint and thread; -t is split evenly over lanes x servers.
  int lanes = 1;
  // --nic: lane i's UCX_NET_DEVICES (cycled; with one lane to each of
  // several servers, server i's); empty: UCX's choice.
  std::vector<std::string> nics;
  std::vector<int> devices;  // --device 0,1: lane i's device (cycled); empty: `device`
  // engine client: the NICs' counters read before and after each part's
  // timed loops, and the lane's NIC's deltas in its records.
  bool nic_counters = false;
  // Called before every loop (warm-up and timed) of a one-part run, on the
  // calling thread: fan-in's ranks start each loop together.
  std::function<void()> before_loop;
  // Between steps instead of the process's stop point (fan-in: collective).
  std::function<void()> stop_point;
  // After each step, with that step's records and their loop times (fan-in
  // gathers and journals them there, so a stopped run keeps every step done).
  std::function<void(const std::vector<Record>&, const std::vector<std::vector<double>>&)>
      after_step;
  bool journal = true;  // each record to the run's sink as it is made (record_done)
};

// Block sizes of the run. Throws UsageError for -k > -t, -t not a multiple
// of a block, zero loops/steps/batch.
std::vector<Bytes> engine_blocks(const EngineClientConfig& cfg);
std::string engine_digest(const EngineClientConfig& cfg);

// Bytes each part (a lane to one server) moves per loop: -t split evenly
// over lanes x servers, whole blocks of every block size each. Throws
// UsageError for --lanes out of 1..kEngineMaxLanes, more parts than blocks,
// or an uneven split.
Bytes engine_part_length(const EngineClientConfig& cfg, std::size_t servers);

// One server of a client run and its name in records ("host:port"; "" for
// a run's only server, whose records carry no server field).
struct EngineServer {
  engine::ServerLink* link = nullptr;
  std::string name;
};

struct EngineRun {
  std::vector<Record> records;
  std::vector<std::vector<double>> loops_us;  // each record's loop times (none where it failed)
  Params summary;                             // ucx_version, transports, connect_ms, register_ms
};

// Runs every op and block size against the server behind `link`; the
// client's memory comes from `backend` (device memory for d2h and d2d).
EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend);
// The same against several servers at once (fan-out), each with
// cfg.lanes lanes: a record per part, per server (the sum of its lanes) and
// the total. A part whose server is lost fails (its records `failed` with
// the reason, from then on); the others finish.
EngineRun run_engine_client(const std::vector<EngineServer>& servers, const EngineClientConfig& cfg,
                            double connect_ms, Backend& backend);

// Fan-in: N clients of one server ran the same step at once, each loop
// started together. `clients[i]` is client i's record, `loops_us[i]` its
// loop times. Returns each client's record with `client` = i and `share`
// (its GB/s over the clients' sum), then the server's total (`client` -1):
// their bytes over each loop's slowest client, and Jain's fairness index of
// the clients' GB/s. A failed client fails the total, with its reason.
std::vector<Record> fanin_records(std::vector<Record> clients,
                                  const std::vector<std::vector<double>>& loops_us);
// Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n
// when one takes everything. Pure.
double jain_index(const std::vector<double>& x);

// A lane's NIC must exist here: a network interface (/sys/class/net) or an
// RDMA device, with or without its port ("mlx5_0:1", /sys/class/infiniband).
// Throws UsageError naming it.
void check_engine_nic(const std::string& nic);
// --connect: one server HOST:PORT or a list (fan-out); an empty item or the
// same server twice is a UsageError.
std::vector<std::pair<std::string, int>> parse_engine_servers(const std::string& text);

// Throws UsageError when `need` bytes of host memory (what: "-t 100 GiB
// ...") exceed what this host has available (MemAvailable); on the host
// backend, device memory is host memory too.
void check_engine_memory(Bytes need, const std::string& what);
// The host memory a client's own buffers take: -t, unless they are device
// memory of a backend other than host.
Bytes engine_client_host_bytes(const EngineClientConfig& cfg, const Backend& b);

// Throws UsageError unless `device` is one of b's devices (`option` names it).
void check_engine_device(const Backend& b, int device, const char* option);
// A server region of `size` bytes in device memory of `device`, set up in
// `sc`: the host backend's NUMA-bound memory as it is; GPU memory exported
// for IPC clients, registered with UCX where the UCX takes it, filled and
// checked through the backend. `b` and the returned buffer must outlive
// the server. Throws UsageError with the reason.
std::unique_ptr<Buffer> engine_server_region(Backend& b, int device, Bytes size, const char* option,
                                             engine::ServerConfig& sc);
// The server's host region on huge pages (--host-mem huge, after
// Backend::use_huge_pages succeeded): `sc.size` bytes of the backend's,
// set as sc.memory; the buffer must outlive the server.
std::unique_ptr<Buffer> engine_huge_region(Backend& b, engine::ServerConfig& sc);
// "device memory of host device 0 (NUMA node 0 (...))".
std::string engine_device_note(const Backend& b, int device);
// Server and client in one process on a free loopback port: one client
// run per value of `asyncs` (sync and async by default), records in order.
EngineRun engine_selftest(EngineClientConfig cfg, Backend& be, int server_device,
                          const std::vector<bool>& asyncs = {false, true});

}  // namespace xb
