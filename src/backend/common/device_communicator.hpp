#pragma once
// What the device collective libraries (NCCL, HCCL) share: one device per
// rank, device buffers, NCCL's in-place reduce-scatter layout, the ring of
// sendrecv, and scratch memory that keeps an in-place point-to-point input
// apart from the bytes it receives into. Vendor calls come in through `Api`,
// which the destructor still reaches after the derived class is gone:
//   static void* allocate(int device, std::size_t bytes);  // throws
//   static void release(void* p);                           // throws
// and through copy_on_stream(), which the derived class implements.
#include <cstddef>
#include <vector>

#include "backend/common/device_common.hpp"
#include "coll/communicator.hpp"

namespace xb {

// Stream marks from a runtime's events. `Api` as DeviceEventHandle's, plus
//   using Stream = ...;
//   static void record(Handle e, Stream s, int device);  // throws; the
//                                                        // device owns s
//   static double elapsed_ms(Handle from, Handle to);     // throws
template <class Api>
class DeviceStreamMarks final : public StreamMarks {
 public:
  DeviceStreamMarks(int device, typename Api::Stream stream, int count)
      : device_(device), stream_(stream), events_(static_cast<std::size_t>(count)) {
    for (auto& e : events_) e.on(device);
  }
  void mark(int i) override {
    Api::record(events_.at(static_cast<std::size_t>(i)).get(), stream_, device_);
  }
  double elapsed_us(int from, int to) override {
    return 1e3 * Api::elapsed_ms(events_.at(static_cast<std::size_t>(from)).get(),
                                 events_.at(static_cast<std::size_t>(to)).get());
  }

 private:
  int device_;
  typename Api::Stream stream_;
  std::vector<DeviceEventHandle<Api>> events_;
};

template <class Api>
class DeviceCommunicator : public Communicator {
 public:
  DeviceCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  ~DeviceCommunicator() override {
    // After the derived communicator has released its library and stream.
    try {
      if (scratch_) Api::release(scratch_);
    } catch (...) {  // errors here cannot be reported; the context may be gone
    }
  }
  DeviceCommunicator(const DeviceCommunicator&) = delete;
  DeviceCommunicator& operator=(const DeviceCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemKind buffer_kind() const override { return MemKind::device; }
  int device() const override { return device_; }
  bool on_stream() const override { return true; }
  std::size_t inplace_result_offset(CollOp op, std::size_t recv_count) const override {
    return op == CollOp::reducescatter ? static_cast<std::size_t>(rank_) * recv_count : 0;
  }

  void reserve(std::size_t bytes) override {
    if (scratch_bytes_ >= bytes) return;
    if (scratch_) Api::release(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    scratch_ = Api::allocate(device_, bytes);
    scratch_bytes_ = bytes;
  }

 protected:
  // The ring of sendrecv: this rank sends to next() and receives from prev().
  int next() const { return (rank_ + 1) % size_; }
  int prev() const { return (rank_ + size_ - 1) % size_; }

  // Where an in-place reduce-scatter leaves this rank's result in `buf`:
  // its slot of the input.
  void* result_slot(void* buf, std::size_t recv_count, DType t) const {
    return static_cast<std::byte*>(buf) +
           inplace_result_offset(CollOp::reducescatter, recv_count) * dtype_size(t);
  }

  // `send`, or in place (send == recv) a copy of its first `bytes` in
  // scratch memory, made by copy_on_stream() (inside the timed call, so
  // in-place figures include that copy).
  const void* apart(const void* send, void* recv, std::size_t bytes) {
    if (send != recv) return send;
    void* copy = scratch(bytes);
    copy_on_stream(copy, scratch_bytes_, send, bytes);
    return copy;
  }

  // The scratch memory, at least `bytes` of it (reserve()d now if short:
  // normally done by the harness, outside timing).
  void* scratch(std::size_t bytes) {
    reserve(bytes);
    return scratch_;
  }

  // Queues a device-to-device copy of `bytes` from `src` to `dst` (room for
  // `dst_bytes`) on the communicator's stream.
  virtual void copy_on_stream(void* dst, std::size_t dst_bytes, const void* src,
                              std::size_t bytes) = 0;

  int rank_, size_;
  int device_ = 0;  // set by the derived constructor, before any reserve()

 private:
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace xb
