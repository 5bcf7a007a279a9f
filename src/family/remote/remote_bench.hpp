#pragma once
// `xferbench remote`: one rank reads (get) or writes (put) a peer rank's
// window, either with its own core, synchronously, staging every tile
// through a small local buffer (pto-isa's TGET example: TGET via UB), or by handing the
// transfer to the asynchronous engine and waiting (TGET_ASYNC via SDMA).
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The fields remote adds to its records.
namespace remote_field {
inline constexpr FieldKey<double> cycles{"cycles"};  // counter cycles per transfer
inline constexpr FieldKey<std::string> transport{"transport"};
inline constexpr FieldKey<std::int64_t> threads{"threads"};  // of a --threads list run
// --window runs only: messages in flight per iteration, and messages per
// second on the median iteration (window / median time).
inline constexpr FieldKey<std::int64_t> window{"window"};
inline constexpr FieldKey<double> msg_rate{"msg_rate"};
}  // namespace remote_field

enum class RemoteOp { get, put };
const char* to_string(RemoteOp op);

struct RemoteConfig {
  std::vector<RemoteOp> ops{RemoteOp::get};
  std::vector<Method> methods{Method::dma, Method::core};
  std::vector<Bytes> sizes;  // default 4K..4M x4 (as pto-isa's TGET example)
  std::optional<int> iters;  // default: scaled with size
  std::optional<int> warmup;
  std::optional<Transport> transport;  // default: shm on one host, else rma
  int root = 0;                        // the rank that issues transfers
  std::optional<int> peer;             // default (root + 1) % ranks
  bool check = true;
  // --check every: each timed transfer alone, checked after it (its records
  // get the rate of wrong ones); else the last.
  bool check_every = false;
  CopierOptions copier{1, 64 * 1024};  // engine workers; core staging tile
  // --threads as a list: one sweep per value, each record with a `threads`
  // field; empty: copier.threads alone, no field.
  std::vector<int> thread_counts;
  // --window N: each timed iteration issues N transfers of the size back to
  // back (slot i at offset i * size of both sides), then completes them all;
  // records carry bytes = N * size, `window` and `msg_rate`. 0: one transfer
  // per iteration, no window fields (the default).
  int window = 0;
  // --host-mem huge: the issuer's buffers on huge pages (the window itself
  // is the MPI library's memory); waived where the system has none.
  bool huge_pages = false;
  // Test seam: called on the receiving rank with the received bytes after
  // timing, before verification (tests corrupt them to prove the check).
  std::function<void(std::span<std::byte>)> before_verify;
};

// Many iterations at 4 KiB and fewer at 4 MiB, as pto-isa's TGET example runs them.
int scaled_iters(Bytes n);

// Transfers per iteration: the window, or 1 without --window.
inline Bytes remote_slots(const RemoteConfig& cfg) {
  return cfg.window > 0 ? static_cast<Bytes>(cfg.window) : 1;
}
// The size of one message of a record: bytes / window (bytes without one).
Bytes remote_message_size(const Record& r);

// A one-line text of every option that must match across ranks.
std::string remote_digest(const RemoteConfig& cfg);

// Collective. Throws UsageError on every rank (same message) for a peer or
// root out of range, options that differ between ranks, or a window larger
// than available memory.
void validate_remote(Runtime& rt, const RemoteConfig& cfg);

struct RemoteResult {
  std::vector<Record> records;  // the issuing rank's, on every rank
  Params summary;               // crossover per op, cycle counter
};

// Why remote does not run on a backend without device IPC other than the
// host (its records are waived there).
std::string remote_unsupported(const std::string& backend);

// Collective; every rank must call it.
RemoteResult run_remote(Runtime& rt, Backend& backend, const RemoteConfig& cfg);

// "dma overtakes core from 16 KiB" (or which method wins everywhere) for
// the records of one op, by message size.
std::string crossover_text(const std::vector<Record>& records, const std::string& op);

}  // namespace xb
