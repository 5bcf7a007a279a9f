// The NCCL communicator: one GPU per rank, the unique id broadcast through
// the MPI runtime, every collective on one stream of that GPU.
#include <dlfcn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <system_error>
#include <thread>

#include "backend/common/device_communicator.hpp"
#include "backend/common/device_wait.hpp"
#include "backend/common/nccl_rules.hpp"
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
    case DType::fp8e4m3:  // by value (2.24's enum): headers older than the library lack them
      return static_cast<ncclDataType_t>(10);
    case DType::fp8e5m2:
      return static_cast<ncclDataType_t>(11);
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
  // After a missed deadline a free would wait for the wedged kernels.
  static void release(void* p) {
    if (device_hung().empty()) XB_CUDA(cudaFree(p));
  }
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

// ncclGather and ncclScatter share one signature (2.28.3 on).
using RootedFn = ncclResult_t (*)(const void*, void*, std::size_t, ncclDataType_t, int, ncclComm_t,
                                  cudaStream_t);

// `name` from the NCCL library this process loaded, or null: the calls a
// newer header declares are looked up, never linked, so an older library
// neither fails to load nor dies on a missing symbol.
RootedFn nccl_symbol(const char* name) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) == 0 || !info.dli_fname)
    return nullptr;
  void* lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return nullptr;
  void* sym = dlsym(lib, name);
  dlclose(lib);  // NOLOAD took a reference of its own; the library stays
  return reinterpret_cast<RootedFn>(sym);
}

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
    // The library that runs decides (review N2); every rank must agree on
    // the oldest, as on the oldest GPU, so that all waive the same records.
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess) version = 0;
    version_ = static_cast<int>(rt.min(version));
    if (nccl_has_gather_scatter(version_)) {
      gather_ = nccl_symbol("ncclGather");
      scatter_ = nccl_symbol("ncclScatter");
    }
    // A rank without them uses grouped sends and receives; all ranks must.
    const bool own_calls = rt.min(gather_ && scatter_ ? 1 : 0) > 0;
    if (!own_calls) gather_ = scatter_ = nullptr;
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
    // A device past its deadline: destroying would wait for its work.
    if (comm_) (void)(device_hung().empty() ? ncclCommDestroy(comm_) : ncclCommAbort(comm_));
    if (stream_) (void)cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }
  Support supports(CollOp op, DType t, RedOp ro) const override {
    if (Support s = nccl_supports(version_, min_major_, op, t); !s.ok) return s;
    return nccl_supports_on(size_, op, t, ro);
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
  // NCCL 2.28.3 has gather and scatter; before it, they are grouped sends and receives.
  void gather(const void* send, void* recv, std::size_t count, DType t, int root) override {
    if (gather_) {
      XB_NCCL(gather_(send, recv, count, nccl_type(t), root, comm_, stream_));
      return;
    }
    const std::size_t bytes = count * dtype_size(t);
    grouped([&] {
      ncclResult_t r = ncclSend(send, count, nccl_type(t), root, comm_, stream_);
      for (int p = 0; rank_ == root && p < size_ && r == ncclSuccess; ++p)
        r = ncclRecv(static_cast<std::byte*>(recv) + static_cast<std::size_t>(p) * bytes, count,
                     nccl_type(t), p, comm_, stream_);
      return r;
    });
  }
  void scatter(const void* send, void* recv, std::size_t count, DType t, int root) override {
    if (scatter_) {
      XB_NCCL(scatter_(send, recv, count, nccl_type(t), root, comm_, stream_));
      return;
    }
    const std::size_t bytes = count * dtype_size(t);
    grouped([&] {
      ncclResult_t r = ncclSuccess;
      for (int p = 0; rank_ == root && p < size_ && r == ncclSuccess; ++p)
        r = ncclSend(static_cast<const std::byte*>(send) + static_cast<std::size_t>(p) * bytes,
                     count, nccl_type(t), p, comm_, stream_);
      return r != ncclSuccess ? r : ncclRecv(recv, count, nccl_type(t), root, comm_, stream_);
    });
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
  // The wait has a deadline, and NCCL's own errors (a peer's, a network's)
  // end it too: the communicator is aborted, so its kernels stop spinning,
  // as nccl-tests does (review N1).
  void synchronize() override {
    const auto abort = [this] {
      if (comm_) (void)ncclCommAbort(comm_);
      comm_ = nullptr;
    };
    if (!comm_) throw RuntimeError("the NCCL communicator was aborted after an earlier error");
    stall_for_test(stream_, "nccl");
    wait_with_deadline(
        [&] {
          if (stream_done(stream_)) return true;
          ncclResult_t async = ncclSuccess;
          if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
              async != ncclInProgress) {
            abort();
            throw RuntimeError(fmt::format("NCCL failed while GPU{} waited: {}", device_,
                                           ncclGetErrorString(async)));
          }
          return false;
        },
        device_timeout_from_env(), fmt::format("GPU{}'s NCCL collective (rank {})", device_, rank_),
        [this] {
          // NCCL's abort frees memory, and a free waits for the wedged
          // device: it runs on a thread of its own, which main's _exit ends.
          if (!comm_) return;
          try {
            std::thread([c = comm_] { (void)ncclCommAbort(c); }).detach();
          } catch (const std::system_error&) {
            (void)ncclCommAbort(comm_);  // no thread to be had: abort here
          }
          comm_ = nullptr;
        });
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
  int version_ = 0;    // the oldest NCCL library the ranks run (ncclGetVersion)
  RootedFn gather_ = nullptr, scatter_ = nullptr;  // NCCL's own, where every rank has them
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
