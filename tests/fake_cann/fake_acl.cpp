// A fake AscendCL runtime for tests, built as libascendcl.so: the entry
// points the Ascend backend opens, implemented on host memory with the
// documented semantics and error codes (argument checks, copy kinds and
// ranges, page-locked host memory for async copies, calls before aclInit).
// Streams complete their work at once; events stamp the host clock.
// Knobs: FAKE_ASCEND_DEVICES (default 2), FAKE_ASCEND_HBM (bytes per NPU,
// default 4 GiB), FAKE_ACL_FAIL=<entry point> (that call returns 507000).
// Built with -DFAKE_ACL_OMIT_ELAPSED it lacks aclrtEventElapsedTime.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr int kOk = 0;
constexpr int kInvalidParam = 100000;   // ACL_ERROR_INVALID_PARAM
constexpr int kUninitialized = 100001;  // ACL_ERROR_UNINITIALIZE
constexpr int kRepeatInit = 100002;     // ACL_ERROR_REPEAT_INITIALIZE
constexpr int kInvalidDevice = 107001;  // ACL_ERROR_RT_INVALID_DEVICEID
constexpr int kNoContext = 107002;      // ACL_ERROR_RT_CONTEXT_NULL
constexpr int kOutOfMemory = 207001;    // ACL_ERROR_RT_MEMORY_ALLOCATION
constexpr int kInjected = 507000;       // ACL_ERROR_RT_INTERNAL_ERROR

struct Alloc {
  std::size_t size;
  int device;  // -1: page-locked host memory
};

struct State {
  std::mutex mu;
  bool initialized = false;
  std::map<const char*, Alloc, std::less<>> allocs;  // by start address
  std::vector<std::size_t> used;
};
State& st() {
  static State s;
  return s;
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

// Returns an error code for calls that must not run now, else 0.
int enter(const char* fn, bool needs_init = true) {
  if (const char* f = std::getenv("FAKE_ACL_FAIL"); f && std::strcmp(f, fn) == 0)
    return fail(kInjected, std::string(fn) + ": injected failure");
  if (needs_init && !st().initialized) return fail(kUninitialized, "aclInit was not called");
  return kOk;
}

// The allocation holding [p, p+n), or nullptr.
const Alloc* find(const void* p, std::size_t n) {
  auto& s = st();
  const auto* c = static_cast<const char*>(p);
  auto it = s.allocs.upper_bound(c);
  if (it == s.allocs.begin()) return nullptr;
  --it;
  if (c < it->first || c + n > it->first + it->second.size) return nullptr;
  return &it->second;
}

struct FakeStream {
  int device;
};
struct FakeEvent {
  int device;
  bool recorded = false;
  std::chrono::steady_clock::time_point when{};
};

int check_copy(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind,
               bool async) {
  if (!dst || !src) return fail(kInvalidParam, "null pointer");
  if (count > dst_max) return fail(kInvalidParam, "count is larger than destMax");
  if (kind < 0 || kind > 3) return fail(kInvalidParam, "unknown aclrtMemcpyKind");
  std::lock_guard lock(st().mu);
  const Alloc* s = find(src, count);
  const Alloc* d = find(dst, count);
  const bool src_dev = s && s->device >= 0, dst_dev = d && d->device >= 0;
  const bool want_src_dev = kind == 2 || kind == 3, want_dst_dev = kind == 1 || kind == 3;
  if (src_dev != want_src_dev || dst_dev != want_dst_dev)
    return fail(kInvalidParam, "pointers do not match the copy kind");
  if (async && ((!want_src_dev && !s) || (!want_dst_dev && !d)))
    return fail(kInvalidParam, "async copies need host memory from aclrtMallocHost");
  return kOk;
}

}  // namespace

extern "C" {

int aclInit(const char*) {
  if (int e = enter("aclInit", false)) return e;
  std::lock_guard lock(st().mu);
  if (st().initialized) return fail(kRepeatInit, "aclInit called twice");
  st().initialized = true;
  st().used.assign(static_cast<std::size_t>(devices()), 0);
  return kOk;
}

int aclFinalize() {
  if (int e = enter("aclFinalize")) return e;
  st().initialized = false;
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
  current = device;
  return kOk;
}

int aclrtResetDevice(std::int32_t device) {
  if (int e = enter("aclrtResetDevice")) return e;
  if (device < 0 || device >= devices()) return fail(kInvalidDevice, "no such device");
  return kOk;
}

int aclrtMalloc(void** ptr, std::size_t size, int policy) {
  if (int e = enter("aclrtMalloc")) return e;
  if (!ptr || size == 0 || policy < 0 || policy > 5) return fail(kInvalidParam, "bad argument");
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
  std::lock_guard lock(st().mu);
  auto it = st().allocs.find(static_cast<const char*>(ptr));
  if (it == st().allocs.end() || it->second.device < 0)
    return fail(kInvalidParam, "not device memory from aclrtMalloc");
  st().used[static_cast<std::size_t>(it->second.device)] -= it->second.size;
  st().allocs.erase(it);
  std::free(ptr);
  return kOk;
}

int aclrtMallocHost(void** ptr, std::size_t size) {
  if (int e = enter("aclrtMallocHost")) return e;
  if (!ptr || size == 0) return fail(kInvalidParam, "bad argument");
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (!p) return fail(kOutOfMemory, "out of host memory");
  std::lock_guard lock(st().mu);
  st().allocs[static_cast<const char*>(p)] = {size, -1};
  *ptr = p;
  return kOk;
}

int aclrtFreeHost(void* ptr) {
  if (int e = enter("aclrtFreeHost")) return e;
  std::lock_guard lock(st().mu);
  auto it = st().allocs.find(static_cast<const char*>(ptr));
  if (it == st().allocs.end() || it->second.device >= 0)
    return fail(kInvalidParam, "not host memory from aclrtMallocHost");
  st().allocs.erase(it);
  std::free(ptr);
  return kOk;
}

int aclrtMemcpy(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind) {
  if (int e = enter("aclrtMemcpy")) return e;
  if (int e = check_copy(dst, dst_max, src, count, kind, false)) return e;
  std::memmove(dst, src, count);
  return kOk;
}

int aclrtMemcpyAsync(void* dst, std::size_t dst_max, const void* src, std::size_t count, int kind,
                     void* stream) {
  if (int e = enter("aclrtMemcpyAsync")) return e;
  if (!stream) return fail(kInvalidParam, "null stream");
  if (int e = check_copy(dst, dst_max, src, count, kind, true)) return e;
  std::memmove(dst, src, count);
  return kOk;
}

int aclrtGetMemInfo(int attr, std::size_t* free, std::size_t* total) {
  if (int e = enter("aclrtGetMemInfo")) return e;
  if (!free || !total || attr < 0 || attr > 9) return fail(kInvalidParam, "bad argument");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  std::lock_guard lock(st().mu);
  *total = hbm();
  *free = hbm() - st().used[static_cast<std::size_t>(current)];
  return kOk;
}

int aclrtCreateStream(void** stream) {
  if (int e = enter("aclrtCreateStream")) return e;
  if (!stream) return fail(kInvalidParam, "null stream");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  *stream = new FakeStream{current};
  return kOk;
}

int aclrtDestroyStream(void* stream) {
  if (int e = enter("aclrtDestroyStream")) return e;
  if (!stream) return fail(kInvalidParam, "null stream");
  delete static_cast<FakeStream*>(stream);
  return kOk;
}

int aclrtSynchronizeStream(void* stream) {
  if (int e = enter("aclrtSynchronizeStream")) return e;
  return stream ? kOk : fail(kInvalidParam, "null stream");
}

int aclrtCreateEvent(void** event) {
  if (int e = enter("aclrtCreateEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  *event = new FakeEvent{current};
  return kOk;
}

int aclrtDestroyEvent(void* event) {
  if (int e = enter("aclrtDestroyEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  delete static_cast<FakeEvent*>(event);
  return kOk;
}

int aclrtRecordEvent(void* event, void* stream) {
  if (int e = enter("aclrtRecordEvent")) return e;
  if (!event || !stream) return fail(kInvalidParam, "null event or stream");
  auto* ev = static_cast<FakeEvent*>(event);
  if (ev->device != static_cast<FakeStream*>(stream)->device)
    return fail(kInvalidParam, "event and stream belong to different devices");
  ev->recorded = true;
  ev->when = std::chrono::steady_clock::now();
  return kOk;
}

int aclrtSynchronizeEvent(void* event) {
  if (int e = enter("aclrtSynchronizeEvent")) return e;
  return event ? kOk : fail(kInvalidParam, "null event");
}

int aclrtQueryEventStatus(void* event, int* status) {
  if (int e = enter("aclrtQueryEventStatus")) return e;
  if (!event || !status) return fail(kInvalidParam, "null argument");
  *status = static_cast<FakeEvent*>(event)->recorded ? 1 : 0;
  return kOk;
}

#ifndef FAKE_ACL_OMIT_ELAPSED
int aclrtEventElapsedTime(float* ms, void* start, void* end) {
  if (int e = enter("aclrtEventElapsedTime")) return e;
  if (!ms || !start || !end) return fail(kInvalidParam, "null argument");
  auto* a = static_cast<FakeEvent*>(start);
  auto* b = static_cast<FakeEvent*>(end);
  if (!a->recorded || !b->recorded) return fail(kInvalidParam, "event not recorded");
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return kOk;
}
#endif

int aclrtDeviceCanAccessPeer(std::int32_t* can, std::int32_t device, std::int32_t peer) {
  if (int e = enter("aclrtDeviceCanAccessPeer")) return e;
  if (!can || device == peer || device < 0 || peer < 0 || device >= devices() || peer >= devices())
    return fail(kInvalidParam, "bad device pair");
  *can = 1;
  return kOk;
}

int aclrtDeviceEnablePeerAccess(std::int32_t peer, std::uint32_t flags) {
  if (int e = enter("aclrtDeviceEnablePeerAccess")) return e;
  if (flags != 0 || peer < 0 || peer >= devices() || peer == current)
    return fail(kInvalidParam, "bad peer or flags");
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  return kOk;
}

const char* aclrtGetSocName() { return "Ascend910B3"; }
const char* aclGetRecentErrMsg() { return last_error.c_str(); }

}  // extern "C"
