// A fake AscendCL runtime for tests, built as libascendcl.so (with
// fake_acl_stream.cpp, its streams and events, and fake_acl_record.cpp; the
// state they share is in fake_acl_internal.hpp): the entry points the Ascend
// backend opens, implemented on host memory, as strict as the real runtime
// where the real one has a rule (docs/backends.md, Ascend section lists
// them; error codes are the real ones unless a comment says otherwise):
// - a current NPU per thread (aclrtSetDevice); streams and events belong to
//   the NPU current when they were made, and recording, copying on or
//   destroying a stream of another NPU than the current one answers 107003
//   ACL_ERROR_RT_STREAM_CONTEXT; memory, streams, events, page-locked host
//   memory, the synchronous aclrtMemcpy (even host to host) and stream
//   synchronization need a current NPU (107002);
// - NPUs are reference-counted per process: each aclrtSetDevice(d) adds one
//   reference, each aclrtResetDevice(d) removes one, aclrtResetDeviceForce(d)
//   all; at 0 the NPU is released and every thread whose current NPU it was
//   has none;
// - work completes asynchronously: each stream has a worker thread that runs
//   its copies (and the fake HCCL's collectives) FAKE_ASCEND_LATENCY_US
//   (default 50) after they were queued, each copy then lasting bytes /
//   FAKE_ASCEND_GBPS; events are stamped when the worker reaches them, so a
//   missing synchronize reads stale data;
// - a stream destroyed with work still queued, an event destroyed while its
//   record is pending, memory freed while queued work uses it, any reset of
//   an NPU (aclrtResetDevice, aclrtResetDeviceForce) with streams or events
//   of it alive, aclFinalize with an NPU still referenced ("aclFinalize
//   before aclrtResetDevice(d): NPU<d> still referenced (<k> aclrtSetDevice
//   calls not reset)") or with streams alive, and streams never destroyed
//   are broken rules: counted and printed at exit ("fake ascend: rule
//   broken: ...");
// - advice, counted apart and printed at exit ("fake ascend: advice: ..."):
//   a copy between two NPUs on memory of either side allocated without a
//   _P2P policy (Huawei recommends it; the runtime does not refuse it);
// - peer access per ordered pair: a copy between two NPUs needs access
//   enabled from the NPU that runs it to the other;
// - async copies: page-locked memory from aclrtMallocHost, 64-byte aligned
//   addresses, no host-to-host (207000 ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
// - aclrtSynchronizeStreamWithTimeout / aclrtSynchronizeEventWithTimeout:
//   -1 waits forever, else at most the timeout in ms, then 507046 / 507047
//   with the work left queued.
// Knobs: FAKE_ASCEND_DEVICES (default 2), FAKE_ASCEND_HBM (bytes per NPU,
// default 4 GiB), FAKE_ASCEND_LATENCY_US, FAKE_ASCEND_NO_PEER=0-1,2-3 (pairs
// without a peer path), FAKE_ACL_FAIL=<entry point> (that call returns
// 507000; with FAKE_ACL_FAIL_AFTER=k, only after its first k calls), and in
// fake_acl_record.cpp FAKE_ASCEND_GBPS (copy durations), FAKE_ACL_SUBMIT_US
// (the host's cost of aclrtMemcpyAsync), FAKE_ASCEND_TOPO (what
// aclrtGetDevicesTopo answers). Test exports (fake_runtime.hpp): the rules
// broken, the advice, the copy log. Built with -DFAKE_ACL_OMIT_ELAPSED it
// lacks aclrtEventElapsedTime; with -DFAKE_ACL_OLD it is an older CANN's,
// without aclrtGetDevicesTopo, aclrtResetDeviceForce,
// aclrtSynchronizeStreamWithTimeout and aclrtSynchronizeEventWithTimeout.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_acl_internal.hpp"
#include "fake_runtime.hpp"

namespace fake_acl_rt {

// Never destroyed: leaked streams' workers may still wait on its mutex at exit.
State& st() {
  static State* s = new State;
  return *s;
}

namespace {
// Initial-exec TLS: no dynamic TLS blocks in this dlopen'd library, whose
// handling crashes LeakSanitizer's tracer at exit in some memory layouts
// ("Tracer caught signal 11") under the ASan build.
__attribute__((tls_model("initial-exec"))) thread_local int current_set = -1;
__attribute__((tls_model("initial-exec"))) thread_local std::uint64_t current_release = 0;
__attribute__((tls_model("initial-exec"))) thread_local std::string last_error;
}  // namespace

// The calling thread's current NPU: the one it set last, unless released since.
int cur() {
  if (current_set < 0) return -1;
  return st().released[current_set].load() == current_release ? current_set : -1;
}

int fail(int code, const std::string& why) {
  last_error = why;
  return code;
}

// The record of rules broken and advice is fake_acl_record.cpp's.
void broke(const std::string& what) { fake_acl_rule_broken(what.c_str()); }

namespace {
void advise(const std::string& what) { fake_acl_internal::advise(what.c_str()); }

// ACL_MEM_MALLOC_HUGE_FIRST_P2P, HUGE_ONLY_P2P, NORMAL_ONLY_P2P (3..5) and
// HUGE1G_ONLY_P2P (7), from acl_rt.h's aclrtMemMallocPolicy.
bool p2p_policy(int policy) { return (policy >= 3 && policy <= 5) || policy == 7; }

// At exit: every broken rule and advice, and the streams never destroyed.
struct Reporter {
  ~Reporter() {
    auto& s = st();
    std::lock_guard lock(s.mu);
    std::map<int, int> leaked;
    for (const FakeStream* f : s.streams) ++leaked[f->device];
    for (const auto& [device, n] : leaked)
      broke("stream" + std::string(n == 1 ? "" : "s") + " of NPU" + std::to_string(device) +
            " never destroyed (aclrtDestroyStream) x" + std::to_string(n));
    fake_acl_internal::print_record();
  }
} reporter;

int devices() {
  int physical = 2;
  if (const char* v = std::getenv("FAKE_ASCEND_DEVICES")) physical = std::atoi(v);
  if (const char* vis = std::getenv("ASCEND_RT_VISIBLE_DEVICES")) {
    int n = 0;
    for (const char* c = vis; *c; ++c)
      if (*c != ',' && (c == vis || c[-1] == ',')) ++n;
    physical = n < physical ? n : physical;
  }
  return physical < kMaxDevices ? physical : kMaxDevices;
}

std::size_t hbm() {
  const char* v = std::getenv("FAKE_ASCEND_HBM");
  return v ? std::strtoull(v, nullptr, 10) : (4ULL << 30);
}

// FAKE_ASCEND_NO_PEER=0-1,2-3: these pairs (both ways) have no peer path.
bool peer_path(int a, int b) {
  const char* v = std::getenv("FAKE_ASCEND_NO_PEER");
  if (!v) return true;
  const std::string want1 = std::to_string(a) + "-" + std::to_string(b);
  const std::string want2 = std::to_string(b) + "-" + std::to_string(a);
  std::string cur;
  for (const char* c = v;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (cur == want1 || cur == want2 || cur == "all") return false;
      cur.clear();
      if (!*c) return true;
    } else {
      cur += *c;
    }
  }
}

// FAKE_ACL_FAIL names `fn` (and its first FAKE_ACL_FAIL_AFTER calls are over).
bool injected(const char* fn) { return fake_injected("FAKE_ACL_FAIL", "FAKE_ACL_FAIL_AFTER", fn); }
}  // namespace

// Returns an error code for calls that must not run now, else 0.
int enter(const char* fn, bool needs_init) {
  if (injected(fn)) return fail(kInjected, std::string(fn) + ": injected failure");
  if (needs_init && !st().initialized) return fail(kUninitialized, "aclInit was not called");
  return kOk;
}

// The allocation holding [p, p+n) and its start, or nullptr. st().mu held.
const Alloc* find(const void* p, std::size_t n, const char** start) {
  auto& s = st();
  const auto* c = static_cast<const char*>(p);
  auto it = s.allocs.upper_bound(c);
  if (it == s.allocs.begin()) return nullptr;
  --it;
  if (c < it->first || c + n > it->first + it->second.size) return nullptr;
  if (start) *start = it->first;
  return &it->second;
}

std::int64_t since_epoch(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

namespace {

// A copy's arguments; for copies between two NPUs, the peer access from the
// NPU that runs it (`runner`, -1 for a synchronous copy: the current one).
// Returns the allocation starts it touches. st().mu held.
int check_copy(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind,
               bool async, int runner, std::vector<const char*>* touched) {
  if (!dst || !src) return fail(kInvalidParam, "null pointer");
  if (count > dst_max) return fail(kInvalidParam, "count is larger than destMax");
  if (kind < 0 || kind > 3) return fail(kInvalidParam, "unknown aclrtMemcpyKind");
  const char *s0 = nullptr, *d0 = nullptr;
  const Alloc* s = find(src, count, &s0);
  const Alloc* d = find(dst, count, &d0);
  const bool src_dev = s && s->device >= 0, dst_dev = d && d->device >= 0;
  const bool want_src_dev = kind == 2 || kind == 3, want_dst_dev = kind == 1 || kind == 3;
  if (src_dev != want_src_dev || dst_dev != want_dst_dev)
    return fail(kInvalidParam, "pointers do not match the copy kind");
  if (async) {
    if (kind == 0)
      return fail(kRtNotSupported, "aclrtMemcpyAsync: host-to-host copies are not supported");
    if ((!want_src_dev && !s) || (!want_dst_dev && !d))
      return fail(kInvalidParam, "async copies need host memory from aclrtMallocHost");
    if (reinterpret_cast<std::uintptr_t>(src) % 64 || reinterpret_cast<std::uintptr_t>(dst) % 64)
      return fail(kInvalidParam, "aclrtMemcpyAsync: src and dst must be 64-byte aligned");
  }
  if (kind == 3 && s->device != d->device) {
    // The real runtime's code for this case is not documented: 100000 here.
    const int by = runner >= 0 ? runner : cur();
    const int other = by == s->device ? d->device : s->device;
    if ((by != s->device && by != d->device) || !st().peers_on.count({by, other}))
      return fail(kInvalidParam, "copy between NPU" + std::to_string(s->device) + " and NPU" +
                                     std::to_string(d->device) + " on NPU" + std::to_string(by) +
                                     " without peer access (aclrtDeviceEnablePeerAccess)");
    if (!p2p_policy(s->policy) || !p2p_policy(d->policy))
      advise("inter-NPU copy on memory allocated without ACL_MEM_MALLOC_HUGE_FIRST_P2P");
  }
  if (touched) {
    if (s0) touched->push_back(s0);
    if (d0) touched->push_back(d0);
  }
  return kOk;
}

// Waits until no queued work touches the allocation at p (freeing it early
// is a broken rule). st().mu held through `lock`.
void wait_unused(std::unique_lock<std::mutex>& lock, const char* p, const char* fn) {
  auto& s = st();
  if (!s.in_use.count(p)) return;
  broke(std::string(fn) + " of memory that queued work still uses (no synchronize first)");
  s.cv.wait(lock, [&] { return !s.in_use.count(p); });
}

// Removes `drop` references to `device` (all: -1); at 0 the NPU is released
// and no thread has it current any more. Every reset call with streams or
// events of the NPU alive is a broken rule.
int reset(std::int32_t device, int drop, const char* fn) {
  if (int e = enter(fn)) return e;
  if (device < 0 || device >= devices()) return fail(kInvalidDevice, "no such device");
  std::lock_guard lock(st().mu);
  auto& s = st();
  int streams = 0, events = 0;
  for (const FakeStream* f : s.streams) streams += f->device == device;
  for (const FakeEvent* e : s.events) events += e->device == device;
  if (streams || events)
    broke(std::string(fn) + "(" + std::to_string(device) + ") with " + std::to_string(streams) +
          " streams and " + std::to_string(events) + " events of it alive");
  auto it = s.refs.find(device);
  if (it == s.refs.end()) return kOk;  // not referenced: nothing to release
  it->second = drop < 0 ? 0 : it->second - drop;
  if (it->second <= 0) {
    s.refs.erase(it);
    s.released[device].fetch_add(1);
  }
  return kOk;
}

}  // namespace
}  // namespace fake_acl_rt

using namespace fake_acl_rt;

extern "C" {

int fake_acl_current_device() { return cur(); }

int aclInit(const char*) {
  if (int e = enter("aclInit", false)) return e;
  std::lock_guard lock(st().mu);
  if (st().initialized) return fail(kRepeatInit, "aclInit called twice");
  st().initialized = true;
  st().used.assign(static_cast<std::size_t>(devices()), 0);
  return kOk;
}

int aclFinalize() {
  if (injected("aclFinalize")) return fail(kInjected, "aclFinalize: injected failure");
  std::lock_guard lock(st().mu);
  auto& s = st();
  if (!s.initialized)
    return s.finalized ? fail(kRepeatFinalize, "aclFinalize called twice")
                       : fail(kUninitialized, "aclInit was not called");
  for (const auto& [d, k] : s.refs)
    broke("aclFinalize before aclrtResetDevice(" + std::to_string(d) + "): NPU" +
          std::to_string(d) + " still referenced (" + std::to_string(k) +
          " aclrtSetDevice calls not reset)");
  if (!s.streams.empty()) broke("aclFinalize with streams alive");
  for (const auto& [d, k] : s.refs) s.released[d].fetch_add(1);  // every NPU is let go
  s.refs.clear();
  s.initialized = false;
  s.finalized = true;
  return kOk;
}

int aclrtGetDeviceCount(std::uint32_t* count) {
  if (int e = enter("aclrtGetDeviceCount")) return e;
  if (!count) return fail(kInvalidParam, "null count");
  *count = static_cast<std::uint32_t>(devices());
  return kOk;
}

int aclrtSetDevice(std::int32_t device) {
  if (int e = enter("aclrtSetDevice")) return e;
  if (device < 0 || device >= devices()) return fail(kInvalidDevice, "no such device");
  std::lock_guard lock(st().mu);
  ++st().refs[device];
  current_set = device;
  current_release = st().released[device].load();
  return kOk;
}

int aclrtResetDevice(std::int32_t device) { return reset(device, 1, "aclrtResetDevice"); }

#ifndef FAKE_ACL_OLD
int aclrtResetDeviceForce(std::int32_t device) {
  return reset(device, -1, "aclrtResetDeviceForce");
}
#endif

int aclrtMalloc(void** ptr, std::size_t size, int policy) {
  if (int e = enter("aclrtMalloc")) return e;
  // aclrtMemMallocPolicy 0..7, optionally with ACL_MEM_MALLOC_{LOW,HIGH}_BAND_WIDTH.
  const int base = policy & ~0x1100;
  if (!ptr || size == 0 || base < 0 || base > 7) return fail(kInvalidParam, "bad argument");
  const int current = cur();
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  std::lock_guard lock(st().mu);
  auto& used = st().used[static_cast<std::size_t>(current)];
  if (used + size > hbm()) return fail(kOutOfMemory, "out of device memory");
  void* p = std::aligned_alloc(512, (size + 511) / 512 * 512);
  if (!p) return fail(kOutOfMemory, "out of host memory");
  used += size;
  st().allocs[static_cast<const char*>(p)] = {size, current, base};
  *ptr = p;
  return kOk;
}

int aclrtFree(void* ptr) {
  if (int e = enter("aclrtFree")) return e;
  std::unique_lock lock(st().mu);
  auto it = st().allocs.find(static_cast<const char*>(ptr));
  if (it == st().allocs.end() || it->second.device < 0)
    return fail(kInvalidParam, "not device memory from aclrtMalloc");
  wait_unused(lock, it->first, "aclrtFree");
  st().used[static_cast<std::size_t>(it->second.device)] -= it->second.size;
  st().allocs.erase(it);
  std::free(ptr);
  return kOk;
}

int aclrtMallocHost(void** ptr, std::size_t size) {
  if (int e = enter("aclrtMallocHost")) return e;
  if (!ptr || size == 0) return fail(kInvalidParam, "bad argument");
  if (cur() < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (!p) return fail(kOutOfMemory, "out of host memory");
  std::lock_guard lock(st().mu);
  st().allocs[static_cast<const char*>(p)] = {size, -1};
  *ptr = p;
  return kOk;
}

int aclrtFreeHost(void* ptr) {
  if (int e = enter("aclrtFreeHost")) return e;
  std::unique_lock lock(st().mu);
  auto it = st().allocs.find(static_cast<const char*>(ptr));
  if (it == st().allocs.end() || it->second.device >= 0)
    return fail(kInvalidParam, "not host memory from aclrtMallocHost");
  wait_unused(lock, it->first, "aclrtFreeHost");
  st().allocs.erase(it);
  std::free(ptr);
  return kOk;
}

// Synchronous: runs on the calling thread, ordered with no stream (a copy
// queued on a stream and not synchronized may still be running), and
// blocks it for the copy's duration.
int aclrtMemcpy(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind) {
  if (int e = enter("aclrtMemcpy")) return e;
  if (cur() < 0) return fail(kNoContext, "aclrtMemcpy: no device set (aclrtSetDevice)");
  {
    std::lock_guard lock(st().mu);
    if (int e = check_copy(dst, dst_max, src, count, kind, false, -1, nullptr)) return e;
  }
  const auto start = Clock::now();
  std::memmove(dst, src, count);
  std::this_thread::sleep_until(start +
                                std::chrono::nanoseconds(fake_acl_internal::copy_ns(count)));
  fake_acl_internal::log_copy(since_epoch(start), since_epoch(Clock::now()), count);
  return kOk;
}

int aclrtMemcpyAsync(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind,
                     void* stream) {
  if (int e = enter("aclrtMemcpyAsync")) return e;
  // The host's cost of a submission, spent before the task is queued.
  if (const std::int64_t us = fake_acl_internal::submit_us(); us > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  std::lock_guard lock(st().mu);
  FakeStream* f = nullptr;
  if (int e = check_stream(stream, &f, "aclrtMemcpyAsync")) return e;
  Task t;
  if (int e = check_copy(dst, dst_max, src, count, kind, true, f->device, &t.buffers)) return e;
  t.run = [dst, src, count] {
    std::memmove(dst, src, count);
    return kOk;
  };
  t.copy = true;
  t.bytes = count;
  t.busy = std::chrono::nanoseconds(fake_acl_internal::copy_ns(count));
  push(f, std::move(t));
  return kOk;
}

int aclrtGetMemInfo(int attr, std::size_t* free, std::size_t* total) {
  if (int e = enter("aclrtGetMemInfo")) return e;
  if (!free || !total || attr < 0 || attr > 11) return fail(kInvalidParam, "bad argument");
  const int current = cur();
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  // aclrtMemAttr: the HBM kinds (1, 4, 5, 8..11) have the NPU's memory; this
  // NPU has no DDR (0, 2, 3, 6, 7), which reads 0 as on the real part.
  const bool is_hbm = attr == 1 || attr == 4 || attr == 5 || attr >= 8;
  std::lock_guard lock(st().mu);
  *total = is_hbm ? hbm() : 0;
  *free = is_hbm ? hbm() - st().used[static_cast<std::size_t>(current)] : 0;
  return kOk;
}
#ifndef FAKE_ACL_OLD
// Needs aclInit, no current NPU.
int aclrtGetDevicesTopo(std::uint32_t device, std::uint32_t other, std::uint64_t* value) {
  if (int e = enter("aclrtGetDevicesTopo")) return e;
  const auto n = static_cast<std::uint32_t>(devices());
  if (!value || device >= n || other >= n || device == other)
    return fail(kInvalidParam, "aclrtGetDevicesTopo: bad device pair");
  *value = fake_acl_internal::topology(static_cast<int>(device), static_cast<int>(other));
  return kOk;
}
#endif

int aclrtDeviceCanAccessPeer(std::int32_t* can, std::int32_t device, std::int32_t peer) {
  if (int e = enter("aclrtDeviceCanAccessPeer")) return e;
  if (!can || device == peer || device < 0 || peer < 0 || device >= devices() || peer >= devices())
    return fail(kInvalidParam, "bad device pair");
  *can = peer_path(device, peer) ? 1 : 0;
  return kOk;
}

// One direction: from the current NPU to `peer`.
int aclrtDeviceEnablePeerAccess(std::int32_t peer, std::uint32_t flags) {
  if (int e = enter("aclrtDeviceEnablePeerAccess")) return e;
  if (flags != 0) return fail(kFeatureUnsupported, "flags must be 0");
  const int current = cur();
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  if (peer < 0 || peer >= devices() || peer == current) return fail(kInvalidParam, "bad peer");
  if (!peer_path(current, peer)) return fail(kRtNotSupported, "no peer path between the NPUs");
  std::lock_guard lock(st().mu);
  st().peers_on.insert({current, peer});
  return kOk;
}

const char* aclrtGetSocName() { return "Ascend910B3"; }
const char* aclGetRecentErrMsg() { return last_error.c_str(); }

}  // extern "C"
