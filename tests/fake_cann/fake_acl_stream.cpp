// Part of the fake AscendCL (libascendcl.so): its streams and events. Each
// stream's worker thread runs the tasks queued on it in order (copies, event
// records, the fake HCCL's work through fake_acl_enqueue), and the
// synchronizations wait for them. The rules they follow are listed with the
// others in fake_acl.cpp; the state shared with it is in
// fake_acl_internal.hpp.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "fake_acl_internal.hpp"
#include "fake_runtime.hpp"

namespace fake_acl_rt {
namespace {

std::chrono::microseconds latency() {
  const char* v = std::getenv("FAKE_ASCEND_LATENCY_US");
  return std::chrono::microseconds(v ? std::strtoll(v, nullptr, 10) : 50);
}

}  // namespace

FakeStream* live_stream(void* p) {  // st().mu held
  auto* f = static_cast<FakeStream*>(p);
  return st().streams.count(f) ? f : nullptr;
}

namespace {

void work(FakeStream* f) {
  auto& s = st();
  std::unique_lock lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return f->stop || !f->queue.empty(); });
    if (f->queue.empty()) return;
    Task& t = f->queue.front();
    lock.unlock();
    std::this_thread::sleep_until(t.due);
    const auto start = Clock::now();
    const int r = t.run ? t.run() : kOk;
    if (t.copy) {  // the copy engine stays busy for its duration
      std::this_thread::sleep_until(start + t.busy);
      fake_acl_internal::log_copy(since_epoch(start), since_epoch(Clock::now()), t.bytes);
    }
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

}  // namespace

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
  if (f->device != cur())
    return fail(kStreamContext, std::string(fn) + ": stream of NPU" + std::to_string(f->device) +
                                    " used while NPU" + std::to_string(cur()) +
                                    " is current (stream not in current context)");
  *out = f;
  return kOk;
}

namespace {

// Waits until `done` (st().mu held through `lock`): forever for timeout -1,
// else at most timeout_ms. False when it timed out.
template <class Pred>
bool wait_up_to(std::unique_lock<std::mutex>& lock, std::int32_t timeout_ms, Pred done) {
  if (timeout_ms == -1) {
    st().cv.wait(lock, done);
    return true;
  }
  return st().cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
}

// Waits for the stream's work; returns (and clears) the first error of it.
// Needs a current NPU; the stream may belong to another (the runtime
// switches to it). On a timeout the work stays queued.
int sync_stream(void* stream, std::int32_t timeout_ms, const char* fn) {
  if (int e = enter(fn)) return e;
  if (timeout_ms < -1) return fail(kInvalidParam, std::string(fn) + ": timeout below -1");
  if (cur() < 0) return fail(kNoContext, std::string(fn) + ": no device set (aclrtSetDevice)");
  std::unique_lock lock(st().mu);
  FakeStream* f = live_stream(stream);
  if (!f) return fail(kInvalidParam, "not a live stream");
  if (!wait_up_to(lock, timeout_ms, [&] { return f->queue.empty(); }))
    return fail(kStreamSyncTimeout, std::string(fn) + ": the stream's work did not finish in " +
                                        std::to_string(timeout_ms) + " ms");
  const int e = f->error;
  f->error = kOk;
  return e ? fail(e, f->error_text) : kOk;
}

int sync_event(void* event, std::int32_t timeout_ms, const char* fn) {
  if (int e = enter(fn)) return e;
  if (!event) return fail(kInvalidParam, "null event");
  if (timeout_ms < -1) return fail(kInvalidParam, std::string(fn) + ": timeout below -1");
  std::unique_lock lock(st().mu);
  auto* ev = static_cast<FakeEvent*>(event);
  if (!st().events.count(ev)) return fail(kInvalidParam, "not a live event");
  if (!wait_up_to(lock, timeout_ms, [&] { return ev->done == ev->recorded; }))
    return fail(kEventSyncTimeout, std::string(fn) + ": the event was not reached in " +
                                       std::to_string(timeout_ms) + " ms");
  return kOk;
}

}  // namespace
}  // namespace fake_acl_rt

using namespace fake_acl_rt;

extern "C" {

int fake_acl_stream_device(void* stream) {
  std::lock_guard lock(st().mu);
  const FakeStream* f = live_stream(stream);
  return f ? f->device : -1;
}

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

int aclrtCreateStream(void** stream) {
  if (int e = enter("aclrtCreateStream")) return e;
  if (!stream) return fail(kInvalidParam, "null stream");
  const int current = cur();
  if (current < 0) return fail(kNoContext, "no device set (aclrtSetDevice)");
  auto* f = new FakeStream{};
  f->device = current;
  {
    std::lock_guard lock(st().mu);
    st().streams.insert(f);
  }
  // Through a lambda: std::thread's state for a FakeStream* (a type of
  // fake_acl_internal.hpp) would be a weak symbol libascendcl.so exports.
  f->worker = std::thread([f] { work(f); });
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

int aclrtSynchronizeStream(void* stream) {
  return sync_stream(stream, -1, "aclrtSynchronizeStream");
}

int aclrtCreateEvent(void** event) {
  if (int e = enter("aclrtCreateEvent")) return e;
  if (!event) return fail(kInvalidParam, "null event");
  const int current = cur();
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

int aclrtSynchronizeEvent(void* event) { return sync_event(event, -1, "aclrtSynchronizeEvent"); }

#ifndef FAKE_ACL_OLD
int aclrtSynchronizeStreamWithTimeout(void* stream, std::int32_t timeout_ms) {
  return sync_stream(stream, timeout_ms, "aclrtSynchronizeStreamWithTimeout");
}

int aclrtSynchronizeEventWithTimeout(void* event, std::int32_t timeout_ms) {
  return sync_event(event, timeout_ms, "aclrtSynchronizeEventWithTimeout");
}
#endif

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

}  // extern "C"
