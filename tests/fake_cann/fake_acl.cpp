// A fake AscendCL runtime for tests, built as libascendcl.so: the entry
// points the Ascend backend opens, implemented on host memory, as strict as
// the real runtime where the real one has a rule (docs/backends.md, Ascend
// section lists them; error codes are the real ones unless a comment says
// otherwise):
// - a current NPU per thread (aclrtSetDevice); streams and events belong to
//   the NPU current when they were made, and recording, copying on or
//   destroying a stream of another NPU than the current one answers 107003
//   ACL_ERROR_RT_STREAM_CONTEXT; memory, streams, events and page-locked
//   host memory need a current NPU (107002);
// - work completes asynchronously: each stream has a worker thread that runs
//   its copies (and the fake HCCL's collectives) FAKE_ASCEND_LATENCY_US
//   (default 50) after they were queued; events are stamped when the worker
//   reaches them, so a missing synchronize reads stale data;
// - a stream destroyed with work still queued, an event destroyed while its
//   record is pending, memory freed while queued work uses it,
//   aclrtResetDevice with streams alive, aclFinalize before every NPU was
//   reset, and streams never destroyed are broken rules: counted and printed
//   at exit ("fake ascend: rule broken: ...");
// - peer access per ordered pair: a copy between two NPUs needs access
//   enabled from the NPU that runs it to the other;
// - async copies: page-locked memory from aclrtMallocHost, 64-byte aligned
//   addresses, no host-to-host (207000 ACL_ERROR_RT_FEATURE_NOT_SUPPORT).
// Knobs: FAKE_ASCEND_DEVICES (default 2), FAKE_ASCEND_HBM (bytes per NPU,
// default 4 GiB), FAKE_ASCEND_LATENCY_US, FAKE_ASCEND_NO_PEER=0-1,2-3 (pairs
// without a peer path), FAKE_ACL_FAIL=<entry point> (that call returns
// 507000). Built with -DFAKE_ACL_OMIT_ELAPSED it lacks aclrtEventElapsedTime.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_runtime.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kOk = 0;
constexpr int kInvalidParam = 100000;        // ACL_ERROR_INVALID_PARAM
constexpr int kUninitialized = 100001;       // ACL_ERROR_UNINITIALIZE
constexpr int kRepeatInit = 100002;          // ACL_ERROR_REPEAT_INITIALIZE
constexpr int kRepeatFinalize = 100037;      // ACL_ERROR_REPEAT_FINALIZE
constexpr int kFeatureUnsupported = 200006;  // ACL_ERROR_FEATURE_UNSUPPORTED
constexpr int kInvalidDevice = 107001;       // ACL_ERROR_RT_INVALID_DEVICEID
constexpr int kNoContext = 107002;           // ACL_ERROR_RT_CONTEXT_NULL
constexpr int kStreamContext = 107003;       // ACL_ERROR_RT_STREAM_CONTEXT
constexpr int kRtNotSupported = 207000;      // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
constexpr int kOutOfMemory = 207001;         // ACL_ERROR_RT_MEMORY_ALLOCATION
constexpr int kInjected = 507000;            // ACL_ERROR_RT_INTERNAL_ERROR

struct Alloc {
  std::size_t size;
  int device;  // -1: page-locked host memory
};

struct FakeEvent {
  int device;
  std::uint64_t recorded = 0;  // how many times recorded
  std::uint64_t done = 0;      // the latest record the stream has reached
  int pending = 0;             // records queued, not reached
  Clock::time_point when{};
};

struct Task {
  std::function<int()> run;    // may be empty (an event mark)
  FakeEvent* event = nullptr;  // stamped when reached
  std::uint64_t record = 0;
  std::vector<const char*> buffers;  // allocation starts the work touches
  Clock::time_point due;
};

struct FakeStream {
  int device;
  std::deque<Task> queue;  // the front is running
  bool stop = false;
  int error = 0;
  std::string error_text;
  std::thread worker;
};

struct State {
  std::mutex mu;
  std::condition_variable cv;  // any task finished
  bool initialized = false, finalized = false;
  std::map<const char*, Alloc, std::less<>> allocs;  // by start address
  std::multiset<const char*> in_use;                 // allocations queued work touches
  std::vector<std::size_t> used;
  std::set<FakeStream*> streams;
  std::set<FakeEvent*> events;
  std::set<int> opened;                    // NPUs set and not reset
  std::set<std::pair<int, int>> peers_on;  // (current, peer) access enabled
  std::map<std::string, int> broken;       // rule -> times
  std::string first_broken;
};
// Never destroyed: leaked streams' workers may still wait on its mutex at exit.
State& st() {
  static State* s = new State;
  return *s;
}
// Initial-exec TLS: no dynamic TLS blocks in this dlopen'd library, whose
// handling crashes LeakSanitizer's tracer at exit in some memory layouts
// ("Tracer caught signal 11") under the ASan build.
__attribute__((tls_model("initial-exec"))) thread_local int current = -1;
__attribute__((tls_model("initial-exec"))) thread_local std::string last_error;

int fail(int code, const std::string& why) {
  last_error = why;
  return code;
}

void broke(const std::string& what) {  // st().mu held
  auto& s = st();
  if (s.broken.empty()) s.first_broken = what;
  ++s.broken[what];
}

// At exit: every broken rule, and the streams never destroyed.
struct Reporter {
  ~Reporter() {
    auto& s = st();
    std::lock_guard lock(s.mu);
    std::map<int, int> leaked;
    for (const FakeStream* f : s.streams) ++leaked[f->device];
    for (const auto& [device, n] : leaked)
      broke("stream" + std::string(n == 1 ? "" : "s") + " of NPU" + std::to_string(device) +
            " never destroyed (aclrtDestroyStream) x" + std::to_string(n));
    for (const auto& [what, n] : s.broken)
      std::fprintf(stderr, "fake ascend: rule broken: %s (x%d)\n", what.c_str(), n);
  }
} reporter;

int devices() {
  int physical = 2;
  if (const char* v = std::getenv("FAKE_ASCEND_DEVICES")) physical = std::atoi(v);
  if (const char* vis = std::getenv("ASCEND_RT_VISIBLE_DEVICES")) {
    int n = 0;
    for (const char* c = vis; *c; ++c)
      if (*c != ',' && (c == vis || c[-1] == ',')) ++n;
    return n < physical ? n : physical;
  }
  return physical;
}

std::size_t hbm() {
  const char* v = std::getenv("FAKE_ASCEND_HBM");
  return v ? std::strtoull(v, nullptr, 10) : (4ULL << 30);
}

std::chrono::microseconds latency() {
  const char* v = std::getenv("FAKE_ASCEND_LATENCY_US");
  return std::chrono::microseconds(v ? std::strtoll(v, nullptr, 10) : 50);
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

// Returns an error code for calls that must not run now, else 0.
int enter(const char* fn, bool needs_init = true) {
  if (const char* f = std::getenv("FAKE_ACL_FAIL"); f && std::strcmp(f, fn) == 0)
    return fail(kInjected, std::string(fn) + ": injected failure");
  if (needs_init && !st().initialized) return fail(kUninitialized, "aclInit was not called");
  return kOk;
}

// The allocation holding [p, p+n) and its start, or nullptr. st().mu held.
const Alloc* find(const void* p, std::size_t n, const char** start = nullptr) {
  auto& s = st();
  const auto* c = static_cast<const char*>(p);
  auto it = s.allocs.upper_bound(c);
  if (it == s.allocs.begin()) return nullptr;
  --it;
  if (c < it->first || c + n > it->first + it->second.size) return nullptr;
  if (start) *start = it->first;
  return &it->second;
}

FakeStream* live_stream(void* p) {  // st().mu held
  auto* f = static_cast<FakeStream*>(p);
  return st().streams.count(f) ? f : nullptr;
}

void work(FakeStream* f) {
  auto& s = st();
  std::unique_lock lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return f->stop || !f->queue.empty(); });
    if (f->queue.empty()) return;
    Task& t = f->queue.front();
    lock.unlock();
    std::this_thread::sleep_until(t.due);
    const int r = t.run ? t.run() : kOk;
    const auto now = Clock::now();
    lock.lock();
    if (r != kOk && f->error == kOk) {  // reported by the next synchronize
      f->error = kInjected;
      f->error_text = "work queued on the stream failed (its error " + std::to_string(r) + ")";
    }
    if (t.event) {
      --t.event->pending;
      if (t.record > t.event->done) {
        t.event->done = t.record;
        t.event->when = now;
      }
    }
    for (const char* b : t.buffers) s.in_use.erase(s.in_use.find(b));
    f->queue.pop_front();
    s.cv.notify_all();
  }
}

// Queues a task on a live stream. st().mu held.
void push(FakeStream* f, Task t) {
  t.due = Clock::now() + latency();
  for (const char* b : t.buffers) st().in_use.insert(b);
  f->queue.push_back(std::move(t));
  st().cv.notify_all();
}

// The stream must belong to the current NPU (the real runtime's rule for
// work issued on a stream). st().mu held.
int check_stream(void* stream, FakeStream** out, const char* fn) {
  if (!stream) return fail(kInvalidParam, "null stream");
  FakeStream* f = live_stream(stream);
  if (!f) return fail(kInvalidParam, std::string(fn) + ": not a live stream");
  if (f->device != current)
    return fail(kStreamContext, std::string(fn) + ": stream of NPU" + std::to_string(f->device) +
                                    " used while NPU" + std::to_string(current) +
                                    " is current (stream not in current context)");
  *out = f;
  return kOk;
}

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
    const int by = runner >= 0 ? runner : current;
    const int other = by == s->device ? d->device : s->device;
    if ((by != s->device && by != d->device) || !st().peers_on.count({by, other}))
      return fail(kInvalidParam, "copy between NPU" + std::to_string(s->device) + " and NPU" +
                                     std::to_string(d->device) + " on NPU" + std::to_string(by) +
                                     " without peer access (aclrtDeviceEnablePeerAccess)");
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

}  // namespace

extern "C" {

int fake_acl_stream_device(void* stream) {
  std::lock_guard lock(st().mu);
  const FakeStream* f = live_stream(stream);
  return f ? f->device : -1;
}

int fake_acl_current_device() { return current; }

int fake_acl_enqueue(void* stream, int (*run)(void*), void* arg, const void* const* buffers,
                     std::size_t n_buffers) {
  std::lock_guard lock(st().mu);
  // A library's work runs in the stream's own context: any live stream.
  FakeStream* f = live_stream(stream);
  if (!f) return fail(kInvalidParam, "enqueue: not a live stream");
  Task t;
  t.run = [run, arg] { return run(arg); };
  for (std::size_t i = 0; i < n_buffers; ++i) {
    const char* start = nullptr;
    if (buffers[i] && find(buffers[i], 1, &start)) t.buffers.push_back(start);
  }
  push(f, std::move(t));
  return kOk;
}

void fake_acl_rule_broken(const char* what) {
  std::lock_guard lock(st().mu);
  broke(what);
}

int fake_acl_rules_broken(char* buf, std::size_t n) {
  std::lock_guard lock(st().mu);
  if (buf && n) std::snprintf(buf, n, "%s", st().first_broken.c_str());
  int total = 0;
  for (const auto& [what, k] : st().broken) total += k;
  return total;
}

void fake_acl_clear_rules() {
  std::lock_guard lock(st().mu);
  st().broken.clear();
  st().first_broken.clear();
}

int aclInit(const char*) {
  if (int e = enter("aclInit", false)) return e;
  std::lock_guard lock(st().mu);
  if (st().initialized) return fail(kRepeatInit, "aclInit called twice");
  st().initialized = true;
  st().used.assign(static_cast<std::size_t>(devices()), 0);
  return kOk;
}

int aclFinalize() {
  if (const char* f = std::getenv("FAKE_ACL_FAIL"); f && std::strcmp(f, "aclFinalize") == 0)
    return fail(kInjected, "aclFinalize: injected failure");
  std::lock_guard lock(st().mu);
  auto& s = st();
  if (!s.initialized)
    return s.finalized ? fail(kRepeatFinalize, "aclFinalize called twice")
                       : fail(kUninitialized, "aclInit was not called");
  for (int d : s.opened) broke("aclFinalize before aclrtResetDevice(" + std::to_string(d) + ")");
  if (!s.streams.empty()) broke("aclFinalize with streams alive");
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
  st().opened.insert(device);
  current = device;
  return kOk;
}

int aclrtResetDevice(std::int32_t device) {
  if (int e = enter("aclrtResetDevice")) return e;
  if (device < 0 || device >= devices()) return fail(kInvalidDevice, "no such device");
  std::lock_guard lock(st().mu);
  auto& s = st();
  int streams = 0, events = 0;
  for (const FakeStream* f : s.streams) streams += f->device == device;
  for (const FakeEvent* e : s.events) events += e->device == device;
  if (streams || events)
    broke("aclrtResetDevice(" + std::to_string(device) + ") with " + std::to_string(streams) +
          " streams and " + std::to_string(events) + " events of it alive");
  s.opened.erase(device);
  if (current == device) current = -1;
  return kOk;
}

int aclrtMalloc(void** ptr, std::size_t size, int policy) {
  if (int e = enter("aclrtMalloc")) return e;
  // aclrtMemMallocPolicy 0..7, optionally with ACL_MEM_MALLOC_{LOW,HIGH}_BAND_WIDTH.
  const int base = policy & ~0x1100;
  if (!ptr || size == 0 || base < 0 || base > 7) return fail(kInvalidParam, "bad argument");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  std::lock_guard lock(st().mu);
  auto& used = st().used[static_cast<std::size_t>(current)];
  if (used + size > hbm()) return fail(kOutOfMemory, "out of device memory");
  void* p = std::aligned_alloc(512, (size + 511) / 512 * 512);
  if (!p) return fail(kOutOfMemory, "out of host memory");
  used += size;
  st().allocs[static_cast<const char*>(p)] = {size, current};
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
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
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
// queued on a stream and not synchronized may still be running).
int aclrtMemcpy(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind) {
  if (int e = enter("aclrtMemcpy")) return e;
  {
    std::lock_guard lock(st().mu);
    if (int e = check_copy(dst, dst_max, src, count, kind, false, -1, nullptr)) return e;
  }
  std::memmove(dst, src, count);
  return kOk;
}

int aclrtMemcpyAsync(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind,
                     void* stream) {
  if (int e = enter("aclrtMemcpyAsync")) return e;
  std::lock_guard lock(st().mu);
  FakeStream* f = nullptr;
  if (int e = check_stream(stream, &f, "aclrtMemcpyAsync")) return e;
  Task t;
  if (int e = check_copy(dst, dst_max, src, count, kind, true, f->device, &t.buffers)) return e;
  t.run = [dst, src, count] {
    std::memmove(dst, src, count);
    return kOk;
  };
  push(f, std::move(t));
  return kOk;
}

int aclrtGetMemInfo(int attr, std::size_t* free, std::size_t* total) {
  if (int e = enter("aclrtGetMemInfo")) return e;
  if (!free || !total || attr < 0 || attr > 11) return fail(kInvalidParam, "bad argument");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  // aclrtMemAttr: the HBM kinds (1, 4, 5, 8..11) have the NPU's memory; this
  // NPU has no DDR (0, 2, 3, 6, 7), which reads 0 as on the real part.
  const bool is_hbm = attr == 1 || attr == 4 || attr == 5 || attr >= 8;
  std::lock_guard lock(st().mu);
  *total = is_hbm ? hbm() : 0;
  *free = is_hbm ? hbm() - st().used[static_cast<std::size_t>(current)] : 0;
  return kOk;
}

int aclrtCreateStream(void** stream) {
  if (int e = enter("aclrtCreateStream")) return e;
  if (!stream) return fail(kInvalidParam, "null stream");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  auto* f = new FakeStream{};
  f->device = current;
  {
    std::lock_guard lock(st().mu);
    st().streams.insert(f);
  }
  f->worker = std::thread(work, f);
  *stream = f;
  return kOk;
}

int aclrtDestroyStream(void* stream) {
  if (int e = enter("aclrtDestroyStream")) return e;
  std::unique_lock lock(st().mu);
  FakeStream* f = nullptr;
  if (int e = check_stream(stream, &f, "aclrtDestroyStream")) {
    if (e == kStreamContext) broke("aclrtDestroyStream from another NPU than the stream's");
    return e;
  }
  if (!f->queue.empty()) {
    broke("aclrtDestroyStream with work still queued (no aclrtSynchronizeStream first)");
    st().cv.wait(lock, [&] { return f->queue.empty(); });
  }
  st().streams.erase(f);
  f->stop = true;
  st().cv.notify_all();
  lock.unlock();
  f->worker.join();
  delete f;
  return kOk;
}

// Waits for the stream's work; returns (and clears) the first error of it.
// The stream may belong to another NPU (the runtime switches to it).
int aclrtSynchronizeStream(void* stream) {
  if (int e = enter("aclrtSynchronizeStream")) return e;
  std::unique_lock lock(st().mu);
  FakeStream* f = live_stream(stream);
  if (!f) return fail(kInvalidParam, "not a live stream");
  st().cv.wait(lock, [&] { return f->queue.empty(); });
  const int e = f->error;
  f->error = kOk;
  return e ? fail(e, f->error_text) : kOk;
}

int aclrtCreateEvent(void** event) {
  if (int e = enter("aclrtCreateEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  auto* ev = new FakeEvent{current};
  std::lock_guard lock(st().mu);
  st().events.insert(ev);
  *event = ev;
  return kOk;
}

int aclrtDestroyEvent(void* event) {
  if (int e = enter("aclrtDestroyEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  std::unique_lock lock(st().mu);
  auto* ev = static_cast<FakeEvent*>(event);
  if (!st().events.count(ev)) return fail(kInvalidParam, "not a live event");
  if (ev->pending) {
    broke("aclrtDestroyEvent while its record is still queued");
    st().cv.wait(lock, [&] { return ev->pending == 0; });
  }
  st().events.erase(ev);
  delete ev;
  return kOk;
}

int aclrtRecordEvent(void* event, void* stream) {
  if (int e = enter("aclrtRecordEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  std::lock_guard lock(st().mu);
  FakeStream* f = nullptr;
  if (int e = check_stream(stream, &f, "aclrtRecordEvent")) return e;
  auto* ev = static_cast<FakeEvent*>(event);
  if (!st().events.count(ev)) return fail(kInvalidParam, "not a live event");
  if (ev->device != f->device)
    return fail(kInvalidParam, "event and stream belong to different devices");
  Task t;
  t.event = ev;
  t.record = ++ev->recorded;
  ++ev->pending;
  push(f, std::move(t));
  return kOk;
}

int aclrtSynchronizeEvent(void* event) {
  if (int e = enter("aclrtSynchronizeEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  std::unique_lock lock(st().mu);
  auto* ev = static_cast<FakeEvent*>(event);
  if (!st().events.count(ev)) return fail(kInvalidParam, "not a live event");
  st().cv.wait(lock, [&] { return ev->done == ev->recorded; });
  return kOk;
}

int aclrtQueryEventStatus(void* event, int* status) {
  if (int e = enter("aclrtQueryEventStatus")) return e;
  if (!event || !status) return fail(kInvalidParam, "null argument");
  std::lock_guard lock(st().mu);
  auto* ev = static_cast<FakeEvent*>(event);
  if (!st().events.count(ev)) return fail(kInvalidParam, "not a live event");
  *status = ev->recorded && ev->done == ev->recorded ? 1 : 0;
  return kOk;
}

#ifndef FAKE_ACL_OMIT_ELAPSED
int aclrtEventElapsedTime(float* ms, void* start, void* end) {
  if (int e = enter("aclrtEventElapsedTime")) return e;
  if (!ms || !start || !end) return fail(kInvalidParam, "null argument");
  std::lock_guard lock(st().mu);
  auto* a = static_cast<FakeEvent*>(start);
  auto* b = static_cast<FakeEvent*>(end);
  if (!st().events.count(a) || !st().events.count(b))
    return fail(kInvalidParam, "not a live event");
  // Both must have completed (the real code for this is not documented).
  if (!a->recorded || !b->recorded || a->done != a->recorded || b->done != b->recorded)
    return fail(kInvalidParam, "event not recorded or not complete");
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
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
