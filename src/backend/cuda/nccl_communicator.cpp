// The NCCL communicator: one GPU per rank, the unique id broadcast through
// the MPI runtime, every collective on one stream of that GPU.
#include <fmt/format.h>
#include <nccl.h>

#include "backend/common/device_communicator.hpp"
#include "backend/common/placement.hpp"
#include "backend/cuda/cuda_internal.hpp"
#include "core/error.hpp"

namespace xb {
namespace cuda {
namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  throw RuntimeError(fmt::format("{}: {}", what, ncclGetErrorString(r)));
}
#define XB_NCCL(call) nccl_check((call), #call)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::int8:
      return ncclInt8;
    case DType::uint8:
      return ncclUint8;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
    case DType::half:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::float32:
      return ncclFloat32;
    case DType::float64:
      return ncclFloat64;
    case DType::fp8e4m3:
    case DType::fp8e5m2:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
      return t == DType::fp8e4m3 ? ncclFloat8e4m3 : ncclFloat8e5m2;
#else
      throw NotSupported(
          fmt::format("NCCL {} has no fp8 types (2.24 and newer)", NCCL_VERSION_CODE));
#endif
  }
  throw RuntimeError("unknown dtype");
}

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return ncclSum;
    case RedOp::prod:
      return ncclProd;
    case RedOp::min:
      return ncclMin;
    case RedOp::max:
      return ncclMax;
    case RedOp::avg:
      return ncclAvg;
  }
  throw RuntimeError("unknown reduction");
}

// Scratch memory of the communicator's GPU.
struct ScratchApi {
  static void* allocate(int device, std::size_t bytes) {
    set_device(device);
    void* p = nullptr;
    XB_CUDA(cudaMalloc(&p, bytes));
    return p;
  }
  static void release(void* p) { XB_CUDA(cudaFree(p)); }
};

// Events on the NCCL stream (timing events: no blocking sync flag needed).
struct MarkApi : EventApi {
  using Stream = cudaStream_t;
  // During graph capture a mark must be an external event node, so that the
  // replayed graph records it where the host can read it.
  static void record(cudaEvent_t e, cudaStream_t s, int /*device: any current one will do*/) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    XB_CUDA(cudaStreamIsCapturing(s, &st));
    if (st == cudaStreamCaptureStatusActive)
      XB_CUDA(cudaEventRecordWithFlags(e, s, cudaEventRecordExternal));
    else
      XB_CUDA(cudaEventRecord(e, s));
  }
  static double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    XB_CUDA(cudaEventElapsedTime(&ms, from, to));
    return ms;
  }
};

class NcclCommunicator final : public DeviceCommunicator<ScratchApi> {
 public:
  NcclCommunicator(Runtime& rt, CudaBackend& backend) : DeviceCommunicator(rt.rank(), rt.size()) {
    // The host-local rank modulo the GPUs it sees: one GPU per rank on a
    // node, or each rank's only GPU under per-rank CUDA_VISIBLE_DEVICES.
    // Two ranks on one GPU were refused before (communicator_fits).
    device_ = rt.local_rank() % static_cast<int>(backend.devices().size());
    ncclUniqueId id{};
    std::string err;
    if (rt.root()) {
      const ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) err = fmt::format("ncclGetUniqueId: {}", ncclGetErrorString(r));
    }
    err = rt.agree(err);  // the other ranks must not wait for an id that never comes
    if (!err.empty()) throw RuntimeError(err);
    rt.broadcast(std::as_writable_bytes(std::span(&id, 1)), 0);
    set_device(device_);
    // NCCL reduces fp8 only where its slowest GPU is sm90 or newer: every
    // rank must know that slowest one to waive the same records.
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_) != cudaSuccess)
      (void)cudaGetLastError();  // unknown: taken as too old for fp8 reductions
    min_major_ = static_cast<int>(rt.min(major));
    XB_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    XB_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
  }
  ~NcclCommunicator() override {
    drop_graph();
    if (comm_) (void)ncclCommDestroy(comm_);
    if (stream_) (void)cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }
  Support supports(CollOp op, DType t, RedOp) const override {
    if (t != DType::fp8e4m3 && t != DType::fp8e5m2) return Support::yes();
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0)
    (void)op;
    return Support::no(fmt::format("NCCL {} has no fp8 types (2.24 and newer)", NCCL_VERSION_CODE));
#else
    // Below sm90 NCCL refuses fp8 reductions (ncclInvalidArgument) and moves fp8 data.
    if (is_reduction(op) && min_major_ < 9)
      return Support::no("NCCL reduces fp8 on sm90 and newer GPUs only");
    return Support::yes();
#endif
  }

  void allreduce(const void* send, void* recv, std::size_t count, DType t, RedOp op) override {
    XB_NCCL(ncclAllReduce(send, recv, count, nccl_type(t), nccl_op(op), comm_, stream_));
  }
  void allgather(const void* send, void* recv, std::size_t send_count, DType t) override {
    XB_NCCL(ncclAllGather(send, recv, send_count, nccl_type(t), comm_, stream_));
  }
  void reducescatter(const void* send, void* recv, std::size_t recv_count, DType t,
                     RedOp op) override {
    // NCCL's in place: the result is this rank's slot of the input.
    if (send == recv) recv = result_slot(recv, recv_count, t);
    XB_NCCL(ncclReduceScatter(send, recv, recv_count, nccl_type(t), nccl_op(op), comm_, stream_));
  }
  void broadcast(const void* send, void* recv, std::size_t count, DType t, int root) override {
    XB_NCCL(ncclBroadcast(send, recv, count, nccl_type(t), root, comm_, stream_));
  }
  void reduce(const void* send, void* recv, std::size_t count, DType t, RedOp op,
              int root) override {
    XB_NCCL(ncclReduce(send, recv, count, nccl_type(t), nccl_op(op), root, comm_, stream_));
  }
  void alltoall(const void* send, void* recv, std::size_t count_per_peer, DType t) override {
    const std::size_t bytes = count_per_peer * dtype_size(t);
    send = apart(send, recv, bytes * static_cast<std::size_t>(size_));
    grouped([&] {
      ncclResult_t r = ncclSuccess;
      for (int p = 0; p < size_ && r == ncclSuccess; ++p) {
        const auto off = static_cast<std::size_t>(p) * bytes;
        r = ncclSend(static_cast<const std::byte*>(send) + off, count_per_peer, nccl_type(t), p,
                     comm_, stream_);
        if (r == ncclSuccess)
          r = ncclRecv(static_cast<std::byte*>(recv) + off, count_per_peer, nccl_type(t), p, comm_,
                       stream_);
      }
      return r;
    });
  }
  // NCCL 2.28 has gather and scatter; before it, they are grouped sends and receives.
  void gather(const void* send, void* recv, std::size_t count, DType t, int root) override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    XB_NCCL(ncclGather(send, recv, count, nccl_type(t), root, comm_, stream_));
#else
    const std::size_t bytes = count * dtype_size(t);
    grouped([&] {
      ncclResult_t r = ncclSend(send, count, nccl_type(t), root, comm_, stream_);
      for (int p = 0; rank_ == root && p < size_ && r == ncclSuccess; ++p)
        r = ncclRecv(static_cast<std::byte*>(recv) + static_cast<std::size_t>(p) * bytes, count,
                     nccl_type(t), p, comm_, stream_);
      return r;
    });
#endif
  }
  void scatter(const void* send, void* recv, std::size_t count, DType t, int root) override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    XB_NCCL(ncclScatter(send, recv, count, nccl_type(t), root, comm_, stream_));
#else
    const std::size_t bytes = count * dtype_size(t);
    grouped([&] {
      ncclResult_t r = ncclSuccess;
      for (int p = 0; rank_ == root && p < size_ && r == ncclSuccess; ++p)
        r = ncclSend(static_cast<const std::byte*>(send) + static_cast<std::size_t>(p) * bytes,
                     count, nccl_type(t), p, comm_, stream_);
      return r != ncclSuccess ? r : ncclRecv(recv, count, nccl_type(t), root, comm_, stream_);
    });
#endif
  }
  // NCCL has no alltoallv: one group of a send and a receive per peer.
  void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displs, void* recv,
                 std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                 DType t) override {
    const std::size_t es = dtype_size(t);
    grouped([&] {
      ncclResult_t r = ncclSuccess;
      for (int p = 0; p < size_ && r == ncclSuccess; ++p) {
        const auto q = static_cast<std::size_t>(p);
        if (send_counts[q] > 0)
          r = ncclSend(static_cast<const std::byte*>(send) + send_displs[q] * es, send_counts[q],
                       nccl_type(t), p, comm_, stream_);
        if (r == ncclSuccess && recv_counts[q] > 0)
          r = ncclRecv(static_cast<std::byte*>(recv) + recv_displs[q] * es, recv_counts[q],
                       nccl_type(t), p, comm_, stream_);
      }
      return r;
    });
  }
  void sendrecv(const void* send, void* recv, std::size_t count, DType t) override {
    send = apart(send, recv, count * dtype_size(t));
    grouped([&] {
      const ncclResult_t r = ncclSend(send, count, nccl_type(t), next(), comm_, stream_);
      return r != ncclSuccess ? r : ncclRecv(recv, count, nccl_type(t), prev(), comm_, stream_);
    });
  }

  // A graph that has run is dropped here: it must not outlive the marks'
  // events and the buffers it references (review finding 8).
  void synchronize() override {
    XB_CUDA(cudaStreamSynchronize(stream_));
    drop_graph();
  }
  std::unique_ptr<StreamMarks> stream_marks(int count) override {
    return std::make_unique<DeviceStreamMarks<MarkApi>>(device_, stream_, count);
  }
  bool can_capture() const override { return true; }
  void abort_capture() noexcept override {
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();  // an invalidated capture leaves its error in the slot
  }
  bool begin_capture() override {
    drop_graph();  // the previous graph has run: synchronize() came after its launch
    XB_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    return true;
  }
  void end_capture_and_replay() override {
    XB_CUDA(cudaStreamEndCapture(stream_, &graph_));
    XB_CUDA(cudaGraphInstantiateWithFlags(&exec_, graph_, 0));
    XB_CUDA(cudaGraphLaunch(exec_, stream_));
  }

 private:
  // ncclGroupStart .. calls .. ncclGroupEnd, the group closed even when a call fails.
  template <class Calls>
  void grouped(Calls calls) {
    XB_NCCL(ncclGroupStart());
    const ncclResult_t r = calls();
    const ncclResult_t end = ncclGroupEnd();
    nccl_check(r, "ncclSend/ncclRecv");
    nccl_check(end, "ncclGroupEnd");
  }

  // Point-to-point groups must not send from the bytes they receive into:
  // apart() copies an in-place input to scratch memory with this.
  void copy_on_stream(void* dst, std::size_t, const void* src, std::size_t bytes) override {
    XB_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }

  void drop_graph() noexcept {
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    if (graph_) (void)cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }

  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  ncclComm_t comm_ = nullptr;
  int min_major_ = 0;  // the lowest compute capability (major) of the communicator's GPUs
};

}  // namespace

Support CudaBackend::communicator_fits(Runtime& rt) {
  return one_device_per_rank(rt, static_cast<int>(devices().size()), "NCCL", "GPU",
                             [this](int d) { return gpu(d).pci; });
}

std::unique_ptr<Communicator> CudaBackend::communicator(Runtime& rt) {
  return std::make_unique<NcclCommunicator>(rt, *this);
}

}  // namespace cuda
}  // namespace xb
