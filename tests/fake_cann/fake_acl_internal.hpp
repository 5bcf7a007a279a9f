#pragma once
// Between the fake AscendCL's runtime files, fake_acl.cpp (the rules it
// enforces are listed there; devices, memory, copies, peer access) and
// fake_acl_stream.cpp (streams and events): the state they share and the
// helpers both call. Hidden: none of it is an entry point of libascendcl.so.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#pragma GCC visibility push(hidden)
namespace fake_acl_rt {

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
constexpr int kStreamSyncTimeout = 507046;   // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
constexpr int kEventSyncTimeout = 507047;    // ACL_ERROR_RT_EVENT_SYNC_TIMEOUT
constexpr int kMaxDevices = 256;             // the fake's limit

struct Alloc {
  std::size_t size;
  int device;      // -1: page-locked host memory
  int policy = 0;  // aclrtMemMallocPolicy, without the bandwidth flags
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
  bool copy = false;  // a copy: logged, and lasts `busy`
  std::size_t bytes = 0;
  Clock::duration busy{};
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
  std::map<int, int> refs;                 // NPU -> aclrtSetDevice calls not reset
  std::set<std::pair<int, int>> peers_on;  // (current, peer) access enabled
  // How many times each NPU was released: a thread's current NPU is valid
  // while the count it saw at aclrtSetDevice is still the count.
  std::atomic<std::uint64_t> released[kMaxDevices] = {};
};

// The runtime's state (fake_acl.cpp; never destroyed), behind its mutex.
State& st();

// The calling thread's current NPU: the one it set last, unless released since.
int cur();
// Sets the message aclGetRecentErrMsg returns; returns `code`.
int fail(int code, const std::string& why);
// A rule broken (fake_acl_record.cpp keeps the record).
void broke(const std::string& what);
// Returns an error code for calls that must not run now, else 0.
int enter(const char* fn, bool needs_init = true);
// The allocation holding [p, p+n) and its start, or nullptr. st().mu held.
const Alloc* find(const void* p, std::size_t n, const char** start = nullptr);
// A steady_clock time in nanoseconds since its epoch (the copy log's).
std::int64_t since_epoch(Clock::time_point t);

// In fake_acl_stream.cpp:
// The stream p points to when it is live, else nullptr. st().mu held.
FakeStream* live_stream(void* p);
// Queues a task on a live stream. st().mu held.
void push(FakeStream* f, Task t);
// The stream must belong to the current NPU (the real runtime's rule for
// work issued on a stream). st().mu held.
int check_stream(void* stream, FakeStream** out, const char* fn);

}  // namespace fake_acl_rt
#pragma GCC visibility pop
