#pragma once
// What the fake HCCL and the tests reach inside the fake AscendCL
// (tests/fake_cann/fake_acl.cpp): streams that run their work on a worker
// thread, and the record of rules broken without an error a caller sees.
#include <cstddef>

extern "C" {

// The NPU `stream` belongs to; -1 when it is not a live stream.
int fake_acl_stream_device(void* stream);
// The calling thread's current NPU; -1 before its first aclrtSetDevice.
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
void fake_acl_clear_rules();

}  // extern "C"
