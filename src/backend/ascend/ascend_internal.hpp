#pragma once
// Internal to backend/ascend: the concrete backend and its streams/events.
#include <string>
#include <vector>

#include "backend/ascend/acl_api.hpp"
#include "backend/ascend/ascend_backend.hpp"
#include "backend/common/device_common.hpp"

namespace xb::ascend {

const AclApi& api();  // the loaded table; throws RuntimeError if unavailable
void check(aclError e, const char* what);
#define XB_ACL(fn, ...) ::xb::ascend::check(::xb::ascend::api().fn(__VA_ARGS__), #fn)
// Makes `device` the calling thread's current NPU (a no-op when it is); the
// process remembers every NPU it set, for finish_process().
void set_device(int device);
// A current NPU for calls that need a context but no particular NPU
// (aclrtMallocHost): the thread's current one, else NPU 0.
void ensure_context();
int memcpy_kind(const Buffer& src, const Buffer& dst);
// For destructors: a failed release call printed as a warning, not thrown.
void warn_on_error(aclError e, const char* what);

// The end of the process's use of CANN: every NPU it set is reset, then
// AscendCL finalized (if this process initialized it). After every stream,
// event and buffer is gone; later calls fail.
void finish_process();

// Waits for a stream's work from `device` (the stream's NPU), within
// XFERBENCH_DEVICE_TIMEOUT: aclrtSynchronizeStreamWithTimeout where the
// runtime has it, else a polled event. Past it: DeviceHung.
void synchronize_stream(aclrtStream stream, int device);

std::unique_ptr<Event> make_event();
// Runtime copies (aclrtMemcpyAsync) on a stream per op.
std::unique_ptr<Copier> make_dma_copier();

// Events for DeviceEventHandle.
struct EventApi {
  using Handle = aclrtEvent;
  static aclrtEvent create(int device);
  static void destroy(aclrtEvent e) noexcept;
};

class AscendStream final : public Stream {
 public:
  explicit AscendStream(int device);
  ~AscendStream() override;
  int device() const override { return device_; }
  void copy_async(const Buffer& src, Bytes src_off, Buffer& dst, Bytes dst_off, Bytes n) override;
  void record(Event& event) override;
  void synchronize() override;
  aclrtStream get() const { return stream_; }

 private:
  int device_;
  aclrtStream stream_ = nullptr;
};

// An HCCL communicator, one NPU per rank (host-local rank), the root info
// broadcast through the runtime. `backend` is the Ascend backend.
std::unique_ptr<Communicator> make_hccl_communicator(Runtime& rt, Backend& backend);

}  // namespace xb::ascend
