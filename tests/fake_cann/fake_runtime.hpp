#pragma once
// What the fake HCCL and the tests reach inside the fake AscendCL
// (tests/fake_cann/fake_acl.cpp, fake_acl_stream.cpp, fake_acl_record.cpp):
// streams that run their work on a worker thread, the record of rules broken
// without an error a caller sees, the advice not followed, and the log of
// copies.
#include <cstddef>
#include <cstdint>

extern "C" {

// The NPU `stream` belongs to; -1 when it is not a live stream.
int fake_acl_stream_device(void* stream);
// The calling thread's current NPU; -1 before its first aclrtSetDevice, and
// after a reset released that NPU (its last reference gone).
int fake_acl_current_device();
// Queues `run(arg)` on `stream`, after the work queued before it; `run`
// returns 0 or the error aclrtSynchronizeStream will report. `buffers` are
// the runtime allocations the work touches (freed early: a broken rule).
// Returns 0 or an ACL error code (then `run` is not called).
int fake_acl_enqueue(void* stream, int (*run)(void* arg), void* arg, const void* const* buffers,
                     std::size_t n_buffers);
// A rule broken without an error code reaching the caller (a stream
// destroyed with work queued, ...): counted, printed at exit as
// "fake ascend: rule broken: <what> (xN)".
void fake_acl_rule_broken(const char* what);
// How many rules were broken so far; the first message into buf[0..n).
int fake_acl_rules_broken(char* buf, std::size_t n);
// Clears the rules broken and the advice.
void fake_acl_clear_rules();
// Advice: what Huawei recommends and the real runtime does not refuse (an
// inter-NPU copy on memory without the _P2P policy), counted apart from the
// rules and printed at exit as "fake ascend: advice: <what> (xN)". How many
// so far; the first message into buf[0..n).
int fake_acl_advice(char* buf, std::size_t n);

// Every copy (aclrtMemcpy, aclrtMemcpyAsync), as (start_us, end_us, bytes)
// triples: microseconds on std::chrono::steady_clock since its epoch. An
// async copy is timed on its stream's worker from the start of the copy to
// the end of its duration (FAKE_ASCEND_GBPS), a synchronous one on the
// caller. Writes up to max_copies triples into out (may be null), oldest
// first; returns how many copies were logged since the last clear (only
// the first 65536 are kept).
int fake_acl_copy_log(double* out, int max_copies);
void fake_acl_copy_log_clear();

// For the fake's own libraries: whether this call of `fn` is to fail. The
// environment variable `fail_env` names the entry point that fails; with
// `after_env`=k set, that entry point's first k calls (counted from when
// it is named) succeed and the later ones fail. 1: fail, 0: run.
int fake_injected(const char* fail_env, const char* after_env, const char* fn);

}  // extern "C"

// Between the fake AscendCL's own files: its runtime (fake_acl.cpp,
// fake_acl_stream.cpp) and its record (fake_acl_record.cpp).
namespace fake_acl_internal {
// Counts advice not followed (fake_acl_advice).
void advise(const char* what);
// Prints the rules broken and the advice (at exit).
void print_record();
// FAKE_ASCEND_GBPS: how long a copy of `bytes` takes, in nanoseconds (0: no
// duration, when the knob is unset or 0).
std::int64_t copy_ns(std::size_t bytes);
// FAKE_ACL_SUBMIT_US: the host's cost of one aclrtMemcpyAsync, in microseconds.
std::int64_t submit_us();
// Logs one copy (steady_clock times since its epoch, in nanoseconds).
void log_copy(std::int64_t start_ns, std::int64_t end_ns, std::size_t bytes);
// FAKE_ASCEND_TOPO: the aclrtGetDevicesTopo value of the pair (a, b); a bad
// knob is reported on stderr and aborts.
std::uint64_t topology(int a, int b);
}  // namespace fake_acl_internal
