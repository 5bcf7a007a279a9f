// The HCCL communicator: one NPU per rank, the root info broadcast through
// the MPI runtime, every collective on one stream of that NPU.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "backend/ascend/ascend_internal.hpp"
#include "backend/common/device_communicator.hpp"
#include "backend/common/device_wait.hpp"
#include "core/error.hpp"

namespace xb {
namespace ascend {
namespace {

const HcclApi& hccl_api() {
  const auto& l = hccl();
  if (!l.api) throw UsageError("the HCCL communicator is not available: " + l.error);
  return *l.api;
}

void hccl_check(HcclResult r, const char* what) {
  if (r == kHcclSuccess) return;
  const auto* api = hccl().api;
  const char* msg = api && api->HcclGetErrorString ? api->HcclGetErrorString(r) : nullptr;
  throw RuntimeError(msg ? fmt::format("{} failed: HCCL error {} ({})", what, r, msg)
                         : fmt::format("{} failed: HCCL error {}", what, r));
}
#define XB_HCCL(fn, ...) hccl_check(hccl_api().fn(__VA_ARGS__), #fn)

HcclDataType hccl_type(DType t) {
  switch (t) {
    case DType::int8:
      return kHcclInt8;
    case DType::uint8:
      return kHcclUint8;
    case DType::int32:
      return kHcclInt32;
    case DType::int64:
      return kHcclInt64;
    case DType::half:
      return kHcclFp16;
    case DType::bf16:
      return kHcclBf16;
    case DType::float32:
      return kHcclFp32;
    case DType::float64:
      return kHcclFp64;
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      throw NotSupported("HCCL in xferbench has no fp8 type");
  }
  throw RuntimeError("unknown dtype");
}

HcclReduceOp hccl_op(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return kHcclSum;
    case RedOp::prod:
      return kHcclProd;
    case RedOp::max:
      return kHcclMax;
    case RedOp::min:
      return kHcclMin;
    case RedOp::avg:
      break;
  }
  throw NotSupported("HCCL has no average reduction");
}

// Scratch memory of the communicator's NPU.
struct ScratchApi {
  static void* allocate(int device, std::size_t bytes) {
    set_device(device);
    void* p = nullptr;
    XB_ACL(aclrtMalloc, &p, bytes, kAclMallocHugeFirst);
    return p;
  }
  static void release(void* p) {
    if (device_hung().empty()) XB_ACL(aclrtFree, p);  // else queued work may still use it
  }
};

// Events on the HCCL stream, recorded with its NPU current.
struct MarkApi : EventApi {
  using Stream = aclrtStream;
  static void record(aclrtEvent e, aclrtStream s, int device) {
    set_device(device);
    XB_ACL(aclrtRecordEvent, e, s);
  }
  static double elapsed_ms(aclrtEvent from, aclrtEvent to) {
    float ms = 0;
    XB_ACL(aclrtEventElapsedTime, &ms, from, to);
    return ms;
  }
};

class HcclCommunicator final : public DeviceCommunicator<ScratchApi> {
 public:
  HcclCommunicator(Runtime& rt, Backend& backend) : DeviceCommunicator(rt.rank(), rt.size()) {
    // The NPU of the host-local rank among those this process sees, as
    // NCCL's and placement's rule: with ASCEND_RT_VISIBLE_DEVICES set per
    // rank each sees one, its own (communicator_fits has ruled out clashes).
    const int npus = static_cast<int>(backend.devices().size());
    std::string err;
    if (npus == 0)
      err = fmt::format("HCCL needs an NPU on every rank: rank {} sees none", rank_);
    else if (!hccl().api)
      err = "the HCCL communicator is not available: " + hccl().error;
    err = rt.agree(err);
    if (!err.empty()) throw UsageError(err);
    device_ = rt.local_rank() % npus;
    // The root info names the root's NPU, NIC and port, taken from the
    // current NPU: this rank's own one is set first. A root that cannot
    // make it says so to every rank before they wait for it.
    HcclRootInfo info{};
    std::string root_error;
    try {
      set_device(device_);
      if (rt.root()) XB_HCCL(HcclGetRootInfo, &info);
    } catch (const std::exception& e) {
      root_error = e.what();
    }
    root_error = rt.agree(root_error);
    if (!root_error.empty()) throw RuntimeError(root_error);
    rt.broadcast(std::as_writable_bytes(std::span(&info, 1)), 0);
    // The stream is the class's from here: a failed init destroys it.
    stream_ = std::make_unique<AscendStream>(device_);
    XB_HCCL(HcclCommInitRootInfo, static_cast<std::uint32_t>(size_), &info,
            static_cast<std::uint32_t>(rank_), &comm_);
  }
  // The stream's work finished before the communicator goes, from the
  // communicator's NPU; the stream goes after it (~AscendStream). On an NPU
  // that stopped answering both are left alone (the process ends soon).
  ~HcclCommunicator() override {
    if (!comm_ || !device_hung().empty()) return;
    try {
      synchronize_stream(stream(), device_);
    } catch (const DeviceHung&) {
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "xferbench: warning: %s\n", e.what());
    }
    const HcclResult r = hccl_api().HcclCommDestroy(comm_);
    if (r != kHcclSuccess)
      std::fprintf(stderr, "xferbench: warning: HcclCommDestroy failed: HCCL error %d\n", r);
  }

  std::string name() const override { return "hccl"; }
  Support supports(CollOp op, DType t, RedOp r) const override {
    if (t == DType::fp8e4m3 || t == DType::fp8e5m2)
      return Support::no("HCCL in xferbench has no fp8 type");
    if (op == CollOp::gather) return Support::no("hccl has no gather");
    if (op == CollOp::scatter && !hccl_api().HcclScatter)
      return Support::no("this libhccl has no HcclScatter");
    if (op == CollOp::alltoallv && !hccl_api().HcclAlltoAllV)
      return Support::no("this libhccl has no HcclAlltoAllV");
    if (!is_reduction(op)) return Support::yes();
    if (r == RedOp::avg) return Support::no("HCCL has no average reduction");
    if (t == DType::uint8 || t == DType::float64)
      return Support::no(fmt::format("HCCL reductions do not take {}", to_string(t)));
    if (r == RedOp::prod && t == DType::bf16)
      return Support::no("HCCL's prod takes neither int16 nor bf16");
    return Support::yes();
  }

  void allreduce(const void* send, void* recv, std::size_t count, DType t, RedOp op) override {
    set_device(device_);
    XB_HCCL(HcclAllReduce, const_cast<void*>(send), recv, count, hccl_type(t), hccl_op(op), comm_,
            stream());
  }
  void allgather(const void* send, void* recv, std::size_t send_count, DType t) override {
    set_device(device_);
    XB_HCCL(HcclAllGather, const_cast<void*>(send), recv, send_count, hccl_type(t), comm_,
            stream());
  }
  void reducescatter(const void* send, void* recv, std::size_t recv_count, DType t,
                     RedOp op) override {
    set_device(device_);
    // In place the result is this rank's slot of the input (NCCL's layout),
    // but HCCL takes no overlapping buffers: the input goes to scratch first.
    if (send == recv) {
      send = apart(send, recv, recv_count * dtype_size(t) * static_cast<std::size_t>(size_));
      recv = result_slot(recv, recv_count, t);
    }
    XB_HCCL(HcclReduceScatter, const_cast<void*>(send), recv, recv_count, hccl_type(t), hccl_op(op),
            comm_, stream());
  }
  void broadcast(const void* send, void* recv, std::size_t count, DType t, int root) override {
    set_device(device_);
    // HcclBroadcast works in one buffer: the root first places its input there.
    if (rank_ == root && send != recv)
      XB_ACL(aclrtMemcpyAsync, recv, count * dtype_size(t), send, count * dtype_size(t),
             kDeviceToDevice, stream());
    XB_HCCL(HcclBroadcast, recv, count, hccl_type(t), static_cast<std::uint32_t>(root), comm_,
            stream());
  }
  void reduce(const void* send, void* recv, std::size_t count, DType t, RedOp op,
              int root) override {
    set_device(device_);
    XB_HCCL(HcclReduce, const_cast<void*>(send), recv, count, hccl_type(t), hccl_op(op),
            static_cast<std::uint32_t>(root), comm_, stream());
  }
  void alltoall(const void* send, void* recv, std::size_t count_per_peer, DType t) override {
    set_device(device_);
    send = apart(send, recv, count_per_peer * dtype_size(t) * static_cast<std::size_t>(size_));
    XB_HCCL(HcclAlltoAll, send, count_per_peer, hccl_type(t), recv, count_per_peer, hccl_type(t),
            comm_, stream());
  }
  void sendrecv(const void* send, void* recv, std::size_t count, DType t) override {
    set_device(device_);
    send = apart(send, recv, count * dtype_size(t));
    HcclSendRecvItem items[2] = {
        {kHcclSend, const_cast<void*>(send), count, hccl_type(t),
         static_cast<std::uint32_t>(next())},
        {kHcclRecv, recv, count, hccl_type(t), static_cast<std::uint32_t>(prev())}};
    XB_HCCL(HcclBatchSendRecv, items, 2u, comm_, stream());
  }
  void scatter(const void* send, void* recv, std::size_t recv_count, DType t, int root) override {
    set_device(device_);
    if (!hccl_api().HcclScatter) throw NotSupported("this libhccl has no HcclScatter");
    // Only the root's input is read; the others pass none (HCCL allows it).
    void* input = rank_ == root ? const_cast<void*>(send) : nullptr;
    void* output = recv;
    const std::size_t bytes = recv_count * dtype_size(t);
    const std::size_t total = bytes * static_cast<std::size_t>(size_);
    const auto* in = static_cast<const std::byte*>(send);
    const auto* out = static_cast<const std::byte*>(recv);
    if (input && bytes && out < in + total && in < out + bytes) {
      // HCCL takes no overlapping buffers. In place the root's result is
      // already its slot of the input: HCCL writes that block to scratch
      // instead. Any other overlap: the input goes to scratch first.
      if (out == in + static_cast<std::size_t>(root) * bytes) {
        output = scratch(bytes);
      } else {
        input = scratch(total);
        copy_on_stream(input, total, send, total);
      }
    }
    XB_HCCL(HcclScatter, input, output, recv_count, hccl_type(t), static_cast<std::uint32_t>(root),
            comm_, stream());
  }
  void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displs, void* recv,
                 std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                 DType t) override {
    set_device(device_);
    if (!hccl_api().HcclAlltoAllV) throw NotSupported("this libhccl has no HcclAlltoAllV");
    const auto n = static_cast<std::size_t>(size_);
    if (send_counts.size() != n || send_displs.size() != n || recv_counts.size() != n ||
        recv_displs.size() != n)
      throw UsageError(
          fmt::format("alltoallv takes {} counts and displacements each (one per rank)", n));
    // HCCL's host arrays of uint64_t, read during the call (made once, with
    // the communicator).
    std::uint64_t* sc = layout_.data();
    std::uint64_t *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    std::copy(send_counts.begin(), send_counts.end(), sc);
    std::copy(send_displs.begin(), send_displs.end(), sd);
    std::copy(recv_counts.begin(), recv_counts.end(), rc);
    std::copy(recv_displs.begin(), recv_displs.end(), rd);
    XB_HCCL(HcclAlltoAllV, send, sc, sd, hccl_type(t), recv, rc, rd, hccl_type(t), comm_, stream());
  }
  void synchronize() override { synchronize_stream(stream(), device_); }
  std::unique_ptr<StreamMarks> stream_marks(int count) override {
    return std::make_unique<DeviceStreamMarks<MarkApi>>(device_, stream(), count);
  }

 private:
  // In place, alltoall, sendrecv and reducescatter first copy their input to
  // scratch memory on the stream with this (apart()), and scatter at its
  // root receives its own block in scratch: HCCL documents that send and
  // receive buffers must not overlap.
  void copy_on_stream(void* dst, std::size_t dst_bytes, const void* src,
                      std::size_t bytes) override {
    set_device(device_);
    XB_ACL(aclrtMemcpyAsync, dst, dst_bytes, src, bytes, kDeviceToDevice, stream());
  }

  aclrtStream stream() const { return stream_->get(); }

  std::unique_ptr<AscendStream> stream_;
  HcclComm comm_ = nullptr;
  // alltoallv's send counts, send displacements, receive counts and
  // receive displacements, size_ each.
  std::vector<std::uint64_t> layout_ =
      std::vector<std::uint64_t>(4 * static_cast<std::size_t>(size_));
};

}  // namespace

std::unique_ptr<Communicator> make_hccl_communicator(Runtime& rt, Backend& backend) {
  return std::make_unique<HcclCommunicator>(rt, backend);
}

}  // namespace ascend
}  // namespace xb
