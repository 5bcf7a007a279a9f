#pragma once
// `xferbench engine client` / `selftest`: HIXL-style throughput of one-sided
// reads and writes against an engine server's slot: total size per loop,
// block sizes block*2^i, sync requests or async batches.
#include <string>
#include <vector>

#include "core/record.hpp"
#include "engine/bootstrap.hpp"
#include "engine/ucx.hpp"

namespace xb {

// The fields engine adds to its records.
namespace engine_field {
inline constexpr FieldKey<std::string> mode{"mode"};
inline constexpr FieldKey<std::int64_t> block{"block"};
inline constexpr FieldKey<std::int64_t> requests{"requests"};
inline constexpr FieldKey<std::string> lat_of{"lat_of"};
inline constexpr FieldKey<double> lat_p50_us{"lat_p50_us"};
inline constexpr FieldKey<double> lat_p99_us{"lat_p99_us"};
inline constexpr FieldKey<double> lat_max_us{"lat_max_us"};
inline constexpr FieldKey<std::int64_t> batch{"batch"};
inline constexpr FieldKey<double> submit_us{"submit_us"};
inline constexpr FieldKey<double> wait_us{"wait_us"};
}  // namespace engine_field

enum class EngineMode { h2h, h2d, d2h, d2d };
const char* to_string(EngineMode m);

struct EngineClientConfig {
  std::vector<engine::Op> ops{engine::Op::read};
  EngineMode mode = EngineMode::h2h;
  Bytes total = 64ULL << 20;  // -t per loop
  Bytes block = 64ULL << 10;  // -k
  int block_steps = 1;        // block * 2^i, i < steps
  int loops = 5;
  int warmup = 1;
  bool async = false;
  int batch = 16;
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

// Runs every op and block size against the server behind `link`.
EngineRun run_engine_client(engine::ServerLink& link, const EngineClientConfig& cfg,
                            double connect_ms);

}  // namespace xb
