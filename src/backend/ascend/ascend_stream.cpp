// The Ascend backend's streams, events and dma copier: every host wait on
// an NPU has a deadline (device_wait.hpp), and a batch of copies, which
// AscendCL cannot start together, is timed on one clock.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>

#include "backend/ascend/ascend_internal.hpp"
#include "backend/common/device_wait.hpp"
#include "core/error.hpp"

namespace xb::ascend {
namespace {

bool pageable(const Buffer& b) { return b.kind() == MemKind::pageable; }

// aclrtMemcpyAsync takes 64-byte aligned addresses.
bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

bool event_done(aclrtEvent e) {
  int status = 0;
  XB_ACL(aclrtQueryEventStatus, e, &status);
  return status == kAclEventComplete;
}

class AscendEvent final : public Event {
 public:
  // The event, created on `device` (re-created if it lived on another).
  aclrtEvent on(int device) { return event_.on(device); }
  void synchronize() override {
    if (!event_.get()) throw RuntimeError("event synchronized before it was recorded");
    wait_with_deadline([this] { return event_done(event_.get()); }, device_timeout_from_env(),
                       fmt::format("NPU{}'s work", event_.device()));
  }
  bool query() override { return event_.get() && event_done(event_.get()); }
  double elapsed_us_since(const Event& start) const override {
    const auto* s = dynamic_cast<const AscendEvent*>(&start);
    if (!s || !s->event_.get() || !event_.get())
      throw RuntimeError("elapsed time of an unrecorded event");
    float ms = 0;
    XB_ACL(aclrtEventElapsedTime, &ms, s->event_.get(), event_.get());
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  DeviceEventHandle<EventApi> event_;
};

// Runtime copies on one stream per op, bracketed by events. AscendCL has no
// way to hold the streams back until every copy is queued, so each op
// starts as it is issued, one after another: each op's time is its own
// (its events), and the batch's is taken on the host's clock from before
// the first op is issued to when the last one is seen done, never less than
// the longest op. A sum over that span counts no overlap that did not
// happen (the Ascend review's N1: over the longest op alone, two copies run
// one after the other read as twice one copy's bandwidth).
class DmaCopier final : public Copier {
 public:
  Method method() const override { return Method::dma; }
  CopyTiming run(std::span<const CopyOp> ops) override {
    check_ops(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) lanes_.at(i, executing_device(ops[i]));
    const auto issued = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto& lane = lanes_[i];
      lane.stream->record(lane.start);
      lane.stream->copy_async(*ops[i].src, 0, *ops[i].dst, 0, ops[i].bytes);
      lane.stream->record(lane.end);
    }
    return lanes_.timing(ops.size(), issued);
  }

 private:
  Lanes<AscendStream, AscendEvent> lanes_;
};

}  // namespace

std::unique_ptr<Event> make_event() { return std::make_unique<AscendEvent>(); }
std::unique_ptr<Copier> make_dma_copier() { return std::make_unique<DmaCopier>(); }

aclrtEvent EventApi::create(int device) {
  set_device(device);
  aclrtEvent e = nullptr;
  XB_ACL(aclrtCreateEvent, &e);
  return e;
}

// Left alone on an NPU that stopped answering: a pending record would hold
// the destroy.
void EventApi::destroy(aclrtEvent e) noexcept {
  if (device_hung().empty()) (void)api().aclrtDestroyEvent(e);
}

void synchronize_stream(aclrtStream stream, int device) {
  const std::string what = fmt::format("NPU{}'s stream", device);
  check_device_answers(what);
  const double timeout = device_timeout_from_env();
  set_device(device);  // a synchronize needs a current NPU
  if (const auto with_timeout = api().aclrtSynchronizeStreamWithTimeout) {
    const double ms = std::min(timeout * 1000.0, static_cast<double>(INT32_MAX));
    const aclError e = with_timeout(stream, static_cast<std::int32_t>(ms));
    if (e == kAclStreamSyncTimeout) missed_deadline(what, timeout);
    check(e, "aclrtSynchronizeStreamWithTimeout");
    return;
  }
  // An older CANN: an event after the stream's work, polled; then the
  // synchronize, which returns at once and reports the work's error.
  DeviceEventHandle<EventApi> marker;
  XB_ACL(aclrtRecordEvent, marker.on(device), stream);
  wait_with_deadline([&] { return event_done(marker.get()); }, timeout, what);
  XB_ACL(aclrtSynchronizeStream, stream);
}

// ---- streams ----------------------------------------------------------------

AscendStream::AscendStream(int device) : device_(device) {
  set_device(device);
  XB_ACL(aclrtCreateStream, &stream_);
}

// Synchronized and destroyed from its own NPU, as AscendCL requires; left
// alone on an NPU that stopped answering (its destroy would wait).
AscendStream::~AscendStream() {
  if (!stream_ || !device_hung().empty()) return;
  try {
    synchronize_stream(stream_, device_);
  } catch (const DeviceHung&) {
    return;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xferbench: warning: %s\n", e.what());
  }
  warn_on_error(api().aclrtDestroyStream(stream_), "aclrtDestroyStream");
}

void AscendStream::copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off,
                              Bytes n) {
  check_range(src, src_off, n, "copy");
  check_range(dst, dst_off, n, "copy");
  set_device(device_);
  auto* d = static_cast<std::byte*>(dst.data()) + dst_off;
  const auto* s = static_cast<const std::byte*>(src.data()) + src_off;
  // aclrtMemcpyAsync takes page-locked memory from the runtime, 64-byte
  // aligned addresses and at least one device side; anything else is
  // copied synchronously, in stream order.
  const bool async = !pageable(src) && !pageable(dst) && aligned(d) && aligned(s) &&
                     (src.kind() == MemKind::device || dst.kind() == MemKind::device);
  if (async) {
    XB_ACL(aclrtMemcpyAsync, d, dst.size() - dst_off, s, n, memcpy_kind(src, dst), stream_);
  } else {
    synchronize_stream(stream_, device_);
    XB_ACL(aclrtMemcpy, d, dst.size() - dst_off, s, n, memcpy_kind(src, dst));
  }
}

// Work on a stream is issued with the stream's NPU current (107003 otherwise).
void AscendStream::record(Event& event) {
  auto* e = dynamic_cast<AscendEvent*>(&event);
  if (!e) throw RuntimeError("event of another backend recorded on an Ascend stream");
  set_device(device_);
  XB_ACL(aclrtRecordEvent, e->on(device_), stream_);
}

void AscendStream::synchronize() { synchronize_stream(stream_, device_); }

}  // namespace xb::ascend
