// Collectives through MPICH. half and bf16 travel as 2-byte opaque elements,
// fp8e4m3 and fp8e5m2 as MPI_UINT8_T, and these four reduce through MPI user
// operations (in float, rounded back per step); avg is a sum divided locally.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "coll/communicator.hpp"
#include "core/corruption.hpp"
#include "core/error.hpp"
#include "runtime/mpi_check.hpp"

namespace xb {
namespace {

// The floating types MPI has no type for, in the order of user_ops_.
constexpr DType kUserTypes[] = {DType::half, DType::bf16, DType::fp8e4m3, DType::fp8e5m2};

template <DType T>
using Bits = std::conditional_t<T == DType::half || T == DType::bf16, std::uint16_t, std::uint8_t>;

template <DType T>
float load_bits(const Bits<T> v) {
  if constexpr (T == DType::half)
    return half_to_float(v);
  else if constexpr (T == DType::bf16)
    return bf16_to_float(v);
  else if constexpr (T == DType::fp8e4m3)
    return fp8e4m3_to_float(v);
  else
    return fp8e5m2_to_float(v);
}
template <DType T>
Bits<T> store_bits(float v) {
  if constexpr (T == DType::half)
    return float_to_half(v);
  else if constexpr (T == DType::bf16)
    return float_to_bf16(v);
  else if constexpr (T == DType::fp8e4m3)
    return float_to_fp8e4m3(v);
  else
    return float_to_fp8e5m2(v);
}

// inout[i] = in[i] (op) inout[i], computed in float, rounded back.
template <DType T, RedOp O>
void reduce_small(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const Bits<T>*>(in);
  auto* b = static_cast<Bits<T>*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = load_bits<T>(a[i]), y = load_bits<T>(b[i]);
    float r;
    if constexpr (O == RedOp::prod)
      r = x * y;
    else if constexpr (O == RedOp::min)
      r = std::min(x, y);
    else if constexpr (O == RedOp::max)
      r = std::max(x, y);
    else
      r = x + y;
    b[i] = store_bits<T>(r);
  }
}

template <DType T>
MPI_User_function* user_fn(RedOp op) {
  switch (op) {
    case RedOp::prod:
      return &reduce_small<T, RedOp::prod>;
    case RedOp::min:
      return &reduce_small<T, RedOp::min>;
    case RedOp::max:
      return &reduce_small<T, RedOp::max>;
    default:
      return &reduce_small<T, RedOp::sum>;
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    mpi_check(MPI_Type_contiguous(2, MPI_BYTE, &two_bytes_), "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&two_bytes_), "MPI_Type_commit");
    create_user_ops<DType::half>();
    create_user_ops<DType::bf16>();
    create_user_ops<DType::fp8e4m3>();
    create_user_ops<DType::fp8e5m2>();
  }
  ~MpiCommunicator() override {
    for (auto& row : user_ops_)
      for (auto& op : row) MPI_Op_free(&op);
    MPI_Type_free(&two_bytes_);
    MPI_Comm_free(&comm_);
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemKind buffer_kind() const override { return MemKind::pageable; }
  int device() const override { return -1; }
  std::size_t inplace_result_offset(CollOp, std::size_t) const override { return 0; }

  void allreduce(const void* send, void* recv, std::size_t count, DType t, RedOp op) override {
    mpi_check(
        MPI_Allreduce(in_place(send, recv), recv, mpi_count(count), type(t), mpi_op(t, op), comm_),
        "MPI_Allreduce");
    finish_avg(recv, count, t, op);
    received(recv, count * dtype_size(t));
  }
  void allgather(const void* send, void* recv, std::size_t n, DType t) override {
    // In place (nccl-tests): this rank's part already sits at its slot of recv.
    const bool ip = send == static_cast<const char*>(recv) +
                                static_cast<std::size_t>(rank_) * n * dtype_size(t);
    mpi_check(MPI_Allgather(ip ? MPI_IN_PLACE : send, ip ? 0 : mpi_count(n), type(t), recv,
                            mpi_count(n), type(t), comm_),
              "MPI_Allgather");
    received(recv, n * static_cast<std::size_t>(size_) * dtype_size(t));
  }
  void reducescatter(const void* send, void* recv, std::size_t n, DType t, RedOp op) override {
    mpi_check(MPI_Reduce_scatter_block(in_place(send, recv), recv, mpi_count(n), type(t),
                                       mpi_op(t, op), comm_),
              "MPI_Reduce_scatter_block");
    finish_avg(recv, n, t, op);
    received(recv, n * dtype_size(t));
  }
  void broadcast(const void* send, void* recv, std::size_t n, DType t, int root) override {
    if (rank_ == root && send != recv) std::memcpy(recv, send, n * dtype_size(t));
    mpi_check(MPI_Bcast(recv, mpi_count(n), type(t), root, comm_), "MPI_Bcast");
    received(recv, n * dtype_size(t));
  }
  void reduce(const void* send, void* recv, std::size_t n, DType t, RedOp op, int root) override {
    const void* s = send;
    void* r = recv;
    if (send == recv && rank_ == root) {
      if (root == 0) {
        s = MPI_IN_PLACE;
      } else {
        // Debian 12's MPICH 4.0.2 crashes on MPI_IN_PLACE at a non-zero root
        // (messages over ~4 KiB): reduce from a copy instead (timed: the copy
        // is part of what this library needs for an in-place reduce).
        scratch_.resize(n * dtype_size(t));
        std::memcpy(scratch_.data(), recv, scratch_.size());
        s = scratch_.data();
      }
    } else if (send == recv) {
      r = nullptr;  // recvbuf matters only at the root; it must not alias sendbuf
    }
    mpi_check(MPI_Reduce(s, r, mpi_count(n), type(t), mpi_op(t, op), root, comm_), "MPI_Reduce");
    if (rank_ != root) return;
    finish_avg(recv, n, t, op);
    received(recv, n * dtype_size(t));
  }
  void alltoall(const void* send, void* recv, std::size_t n, DType t) override {
    const bool ip = send == recv;
    mpi_check(MPI_Alltoall(ip ? MPI_IN_PLACE : send, ip ? 0 : mpi_count(n), type(t), recv,
                           mpi_count(n), type(t), comm_),
              "MPI_Alltoall");
    received(recv, n * static_cast<std::size_t>(size_) * dtype_size(t));
  }
  void sendrecv(const void* send, void* recv, std::size_t n, DType t) override {
    const int to = (rank_ + 1) % size_, from = (rank_ + size_ - 1) % size_;
    if (send == recv) {
      mpi_check(MPI_Sendrecv_replace(recv, mpi_count(n), type(t), to, 0, from, 0, comm_,
                                     MPI_STATUS_IGNORE),
                "MPI_Sendrecv_replace");
    } else {
      mpi_check(MPI_Sendrecv(send, mpi_count(n), type(t), to, 0, recv, mpi_count(n), type(t), from,
                             0, comm_, MPI_STATUS_IGNORE),
                "MPI_Sendrecv");
    }
    received(recv, n * dtype_size(t));
  }
  void gather(const void* send, void* recv, std::size_t n, DType t, int root) override {
    // In place (nccl-tests): the root's part already sits at its slot of recv.
    const bool ip =
        rank_ == root && send == static_cast<const char*>(recv) +
                                     static_cast<std::size_t>(rank_) * n * dtype_size(t);
    mpi_check(MPI_Gather(ip ? MPI_IN_PLACE : send, ip ? 0 : mpi_count(n), type(t), recv,
                         mpi_count(n), type(t), root, comm_),
              "MPI_Gather");
    if (rank_ == root) received(recv, n * static_cast<std::size_t>(size_) * dtype_size(t));
  }
  void scatter(const void* send, void* recv, std::size_t n, DType t, int root) override {
    // In place: the root's result is its slot of the input.
    const bool ip =
        rank_ == root && recv == static_cast<const char*>(send) +
                                     static_cast<std::size_t>(rank_) * n * dtype_size(t);
    mpi_check(MPI_Scatter(send, mpi_count(n), type(t), ip ? MPI_IN_PLACE : recv, mpi_count(n),
                          type(t), root, comm_),
              "MPI_Scatter");
    if (!ip) received(recv, n * dtype_size(t));  // in place, the root's part never moved
  }
  void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displs, void* recv,
                 std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                 DType t) override {
    auto ints = [](std::span<const std::size_t> v, std::vector<int>& out) {
      out.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) out[i] = mpi_count(v[i]);
      return out.data();
    };
    mpi_check(MPI_Alltoallv(send, ints(send_counts, sc_), ints(send_displs, sd_), type(t), recv,
                            ints(recv_counts, rc_), ints(recv_displs, rd_), type(t), comm_),
              "MPI_Alltoallv");
    std::size_t end = 0;
    for (std::size_t i = 0; i < recv_counts.size(); ++i)
      end = std::max(end, recv_displs[i] + recv_counts[i]);
    received(recv, end * dtype_size(t));
  }
  void synchronize() override {}

 private:
  // XFERBENCH_HOST_CORRUPT (core/corruption.hpp): one bit of what this rank
  // received flipped, in the calls the knob draws for it.
  void received(void* recv, std::size_t bytes) {
    if (!knob_ || !recv) return;
    if (const auto flip = knob_->draw_receive(rank_, -1, bytes)) flip->apply(recv);
  }
  Corrupter* knob_ = Corrupter::from_env();

  static const void* in_place(const void* send, const void* recv) {
    return send == recv ? MPI_IN_PLACE : send;
  }

  MPI_Datatype type(DType t) const {
    switch (t) {
      case DType::int8:
        return MPI_INT8_T;
      case DType::uint8:
        return MPI_UINT8_T;
      case DType::int32:
        return MPI_INT32_T;
      case DType::int64:
        return MPI_INT64_T;
      case DType::float32:
        return MPI_FLOAT;
      case DType::float64:
        return MPI_DOUBLE;
      case DType::half:
      case DType::bf16:
        return two_bytes_;
      case DType::fp8e4m3:
      case DType::fp8e5m2:
        return MPI_UINT8_T;
    }
    throw RuntimeError("unknown dtype");
  }

  // The row of user_ops_ of a type MPI cannot reduce itself, or -1.
  static constexpr int user_type(DType t) {
    for (int i = 0; i < kNumUserTypes; ++i)
      if (kUserTypes[i] == t) return i;
    return -1;
  }
  template <DType T>
  void create_user_ops() {
    static_assert(user_type(T) >= 0);
    for (int o = 0; o < 4; ++o)  // sum, prod, min, max
      mpi_check(MPI_Op_create(user_fn<T>(static_cast<RedOp>(o)), 1, &user_ops_[user_type(T)][o]),
                "MPI_Op_create");
  }

  MPI_Op mpi_op(DType t, RedOp op) const {
    if (const int u = user_type(t); u >= 0) {
      const int o = op == RedOp::avg ? 0 : static_cast<int>(op);
      return user_ops_[u][o];
    }
    switch (op) {
      case RedOp::prod:
        return MPI_PROD;
      case RedOp::min:
        return MPI_MIN;
      case RedOp::max:
        return MPI_MAX;
      default:
        return MPI_SUM;
    }
  }

  // avg = sum / ranks, in the element type (integers truncate, as NCCL does).
  void finish_avg(void* buf, std::size_t n, DType t, RedOp op) const {
    if (op != RedOp::avg) return;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = load(t, buf, i) / size_;
      store(t, buf, i,
            t == DType::float32 || t == DType::float64 || user_type(t) >= 0
                ? v
                : static_cast<double>(static_cast<std::int64_t>(v)));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  MPI_Datatype two_bytes_ = MPI_DATATYPE_NULL;
  static constexpr int kNumUserTypes = static_cast<int>(std::size(kUserTypes));
  MPI_Op user_ops_[kNumUserTypes][4] = {};
  std::vector<std::byte> scratch_;
  std::vector<int> sc_, sd_, rc_, rd_;  // alltoallv's counts as MPI takes them
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(Runtime&) {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace xb
