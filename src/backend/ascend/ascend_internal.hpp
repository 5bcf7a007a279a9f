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
void set_device(int device);
int memcpy_kind(const Buffer& src, const Buffer& dst);

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
