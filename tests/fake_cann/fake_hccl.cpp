// A fake HCCL for tests, built as libhccl.so (with fake_hccl_types.cpp, its
// element types and error codes) on the fake AscendCL: collectives among
// processes of one host through a POSIX shared-memory segment named in the
// root info. Like the real HCCL, a collective is queued on its stream
// and runs later on the stream's worker (fake_runtime.hpp): it publishes
// this rank's input in its slot, waits for all ranks, computes its own
// output from the slots, and waits again, so in-place calls are safe.
// Each rank's slot is 2 GiB of a sparse /dev/shm file: only what a call
// publishes costs memory (mind /dev/shm's size: a container's default 64 MiB
// ends a larger call with SIGBUS). A call that publishes more than its slot
// is HCCL_E_PARA: the fake's limit, not HCCL's (HCCL has no per-call cap).
// The real library's rules it enforces:
// - every collective and HcclBatchSendRecv needs a current NPU on the
//   calling thread (HCCL_E_RUNTIME otherwise, nothing queued);
// - HcclGetRootInfo takes the current NPU (the root's device, NIC and port
//   come from it); the root's HcclCommInitRootInfo on another NPU fails;
// - a communicator belongs to the NPU current at its init, and its
//   collectives take a stream of that NPU (HCCL_E_RUNTIME otherwise);
// - reductions follow HCCL's documented types: no uint8 or double, no
//   average, no prod on int16 or bf16 (HCCL_E_NOT_SUPPORT);
// - overlapping send and receive buffers of alltoall, alltoallv,
//   reducescatter and scatter (at its root) are HCCL_E_PARA; alltoallv's
//   buffers span from their start to the end of their last block;
// - a root out of range (broadcast, reduce, scatter), a null send at the
//   scatter root, null alltoallv counts or displacements, and differing
//   send and receive types are HCCL_E_PARA; so is a receive count that is
//   not what its sender sends (alltoallv, batch send/recv), found when the
//   call runs (the stream's synchronize reports it);
// - scatter reads the root's send only (the others' may be null), and a
//   zero count returns at once, as HCCL's does; alltoallv reads its host
//   arrays during the call;
// - buffers aligned to their element size (HCCL_E_PARA otherwise);
// - HcclCommDestroy with collectives still queued is a broken rule.
// A batch send/recv whose peer's send does not match its receive fails
// after the call's last barrier, so the peer is not left waiting.
// Buffers are the fake runtime's host memory. Knobs: FAKE_HCCL_FAIL=<entry
// point> makes that call return HCCL_E_INTERNAL (with FAKE_HCCL_FAIL_AFTER=k,
// only after its first k calls); FAKE_HCCL_STALL=<rank>: that rank's queued
// work never finishes (its task blocks its stream's worker for ever; the
// other ranks meet the fake's 120 s barrier deadline). Built with
// -DFAKE_HCCL_OLD it is an older CANN's libhccl, without HcclScatter and
// HcclAlltoAllV.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fake_hccl_types.hpp"
#include "fake_runtime.hpp"

using namespace fake_hccl;

namespace {

constexpr std::size_t kRootInfoBytes = 4108;
// Bytes one rank may publish per call: the fake's limit (HCCL has none),
// sparse virtual space in the segment.
constexpr std::size_t kSlot = 2ULL << 30;

struct Header {
  std::atomic<std::uint32_t> arrived;
  std::atomic<std::uint32_t> generation;
  std::uint64_t bytes[64];  // what each rank published
  std::uint32_t dest[64];   // batch send/recv: the rank each send is for
  // alltoallv: what rank s sends to rank d, in elements from the start of
  // its published send buffer
  std::uint64_t send_count[64][64];  // [s][d]
  std::uint64_t send_displ[64][64];
};
// The header's pages, before the slots.
constexpr std::size_t kHeaderBytes = (sizeof(Header) + 4095) / 4096 * 4096;

struct Comm {
  std::string name;
  Header* header = nullptr;
  char* slots = nullptr;
  std::size_t mapped = 0;
  std::uint32_t n = 0, rank = 0;
  int device = -1;             // the NPU current at init
  std::atomic<int> queued{0};  // collectives queued, not run
  char* slot(std::uint32_t r) const { return slots + r * kSlot; }
};

int injected(const char* fn) { return fake_injected("FAKE_HCCL_FAIL", "FAKE_HCCL_FAIL_AFTER", fn); }

int barrier(Comm& c) {
  Header& h = *c.header;
  const std::uint32_t gen = h.generation.load();
  if (h.arrived.fetch_add(1) + 1 == c.n) {
    h.arrived.store(0);
    h.generation.fetch_add(1);
    return kOk;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (h.generation.load() == gen) {
    if (std::chrono::steady_clock::now() > deadline) return kTimeout;
    sched_yield();
  }
  return kOk;
}

// Element i of the reduction over all slots, each starting at byte `off`.
// Accumulates in the element type, rank by rank, as a ring would.
double reduce_at(const Comm& c, int t, int op, std::size_t off, std::size_t i) {
  char tmp[8];
  double acc = load(t, c.slot(0) + off, i);
  for (std::uint32_t r = 1; r < c.n; ++r) {
    const double x = load(t, c.slot(r) + off, i);
    acc = op == 0   ? acc + x
          : op == 1 ? acc * x
          : op == 2 ? (x > acc ? x : acc)
                    : (x < acc ? x : acc);
    store(t, tmp, 0, acc);  // round to the type at every step
    acc = load(t, tmp, 0);
  }
  return acc;
}

int publish(Comm& c, const void* src, std::size_t bytes) {
  if (bytes > kSlot) return kPara;
  if (bytes) std::memcpy(c.slot(c.rank), src, bytes);
  c.header->bytes[c.rank] = bytes;
  return barrier(c);
}

// HCCL's documented rule for alltoall and the V collectives: the send and
// receive ranges must not overlap.
bool overlap(const void* a, std::size_t an, const void* b, std::size_t bn) {
  const auto* x = static_cast<const char*>(a);
  const auto* y = static_cast<const char*>(b);
  return an && bn && x < y + bn && y < x + an;
}

// The checks every collective starts with: the injected failure, a current
// NPU (HCCL's operations refresh the thread's device first), the arguments.
int check(void* comm, int t, const char* fn) {
  if (injected(fn)) return kInternal;
  if (fake_acl_current_device() < 0) return kRuntime;
  if (!comm || type_size(t) == 0) return kPara;
  return kOk;
}

// More than a slot: `times` blocks of `count` elements of type t.
bool over_slot(std::uint64_t count, int t, std::uint64_t times = 1) {
  return count > kSlot / type_size(t) / times;
}

// FAKE_HCCL_STALL names this rank.
bool stalls(const Comm& c) {
  const char* v = std::getenv("FAKE_HCCL_STALL");
  return v && *v && std::strtoul(v, nullptr, 10) == c.rank;
}

// Queues `body` on `stream`, which must be a stream of the communicator's
// NPU: the collective runs on the stream's worker, in stream order.
int enqueue(Comm& c, void* stream, std::function<int()> body, const void* a, const void* b) {
  if (fake_acl_stream_device(stream) != c.device) return kRuntime;
  struct Job {
    Comm* c;
    std::function<int()> body;
    bool stall;
  };
  auto* job = new Job{&c, std::move(body), stalls(c)};
  const void* buffers[2] = {a, b};
  ++c.queued;
  const int e = fake_acl_enqueue(
      stream,
      [](void* arg) {
        auto* j = static_cast<Job*>(arg);
        while (j->stall) std::this_thread::sleep_for(std::chrono::hours(1));  // never finishes
        const int r = j->body();
        --j->c->queued;
        delete j;
        return r;
      },
      job, buffers, 2);
  if (e != kOk) {
    --c.queued;
    delete job;
    return kRuntime;
  }
  return kOk;
}

// What the root info carries besides the segment's name: the process and
// the NPU it was made on.
struct RootInfoTail {
  int pid;
  int device;
};
constexpr std::size_t kTailAt = 256;

}  // namespace

extern "C" {

int HcclGetRootInfo(void* info) {
  if (injected("HcclGetRootInfo")) return kInternal;
  if (!info) return kPara;
  const int device = fake_acl_current_device();
  if (device < 0) return kRuntime;  // no current NPU: nothing to root on
  // The name is unique beyond this process: a process id comes back in a
  // long run, and a segment that a killed process left (if it died before
  // its init's barrier) must never be met again, with its ranks' counts.
  static const unsigned long long nonce =
      (static_cast<unsigned long long>(std::random_device{}()) << 32) ^ std::random_device{}();
  static int counter = 0;
  std::memset(info, 0, kRootInfoBytes);
  std::snprintf(static_cast<char*>(info), kTailAt, "/xb_fake_hccl_%d_%d_%016llx", getpid(),
                counter++, nonce);
  const RootInfoTail tail{getpid(), device};
  std::memcpy(static_cast<char*>(info) + kTailAt, &tail, sizeof tail);
  return kOk;
}

int HcclCommInitRootInfo(std::uint32_t n, const void* info, std::uint32_t rank, void** comm) {
  if (injected("HcclCommInitRootInfo")) return kInternal;
  if (!info || !comm || n == 0 || n > 64 || rank >= n) return kPara;
  const int device = fake_acl_current_device();
  if (device < 0) return kRuntime;
  RootInfoTail tail{};
  std::memcpy(&tail, static_cast<const char*>(info) + kTailAt, sizeof tail);
  // The process that made the root info serves it from the NPU it was made
  // on: initialising there on another NPU is the order HCCL does not allow.
  if (tail.pid == getpid() && tail.device != device) return kPara;
  auto* c = new Comm;
  c->name = static_cast<const char*>(info);
  c->n = n;
  c->rank = rank;
  c->device = device;
  c->mapped = kHeaderBytes + n * kSlot;
  const int fd = shm_open(c->name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(c->mapped)) != 0) {
    if (fd >= 0) close(fd);
    delete c;
    return kInternal;
  }
  void* p = mmap(nullptr, c->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    delete c;
    return kInternal;
  }
  c->header = static_cast<Header*>(p);
  c->slots = static_cast<char*>(p) + kHeaderBytes;
  *comm = c;
  // Every rank maps the segment before it meets this barrier: past it (or at
  // its deadline) the name has served, and it goes, so a process killed
  // later leaves nothing in /dev/shm.
  const int r = barrier(*c);
  shm_unlink(c->name.c_str());
  return r;
}

int HcclCommDestroy(void* comm) {
  if (!comm) return kPara;
  auto* c = static_cast<Comm*>(comm);
  if (c->queued.load() != 0) {
    fake_acl_rule_broken("HcclCommDestroy with collectives still queued (no synchronize first)");
    while (c->queued.load() != 0) sched_yield();
  }
  const int r = barrier(*c);
  munmap(c->header, c->mapped);
  delete c;
  return r;
}

int HcclAllReduce(void* send, void* recv, std::uint64_t count, int t, int op, void* comm,
                  void* stream) {
  if (int e = check(comm, t, "HcclAllReduce")) return e;
  if (!reducible(t, op)) return kNotSupport;
  if (misaligned(t, send, recv) || over_slot(count, t)) return kPara;
  Comm& c = *static_cast<Comm*>(comm);
  return enqueue(
      c, stream,
      [&c, send, recv, count, t, op] {
        if (int e = publish(c, send, count * type_size(t))) return e;
        for (std::size_t i = 0; i < count; ++i)
          store(t, static_cast<char*>(recv), i, reduce_at(c, t, op, 0, i));
        return barrier(c);
      },
      send, recv);
}

int HcclAllGather(void* send, void* recv, std::uint64_t count, int t, void* comm, void* stream) {
  if (int e = check(comm, t, "HcclAllGather")) return e;
  if (misaligned(t, send, recv) || over_slot(count, t)) return kPara;
  Comm& c = *static_cast<Comm*>(comm);
  const std::size_t bytes = count * type_size(t);
  return enqueue(
      c, stream,
      [&c, send, recv, bytes] {
        if (int e = publish(c, send, bytes)) return e;
        for (std::uint32_t r = 0; r < c.n; ++r)
          std::memcpy(static_cast<char*>(recv) + r * bytes, c.slot(r), bytes);
        return barrier(c);
      },
      send, recv);
}

int HcclReduceScatter(void* send, void* recv, std::uint64_t count, int t, int op, void* comm,
                      void* stream) {
  if (int e = check(comm, t, "HcclReduceScatter")) return e;
  if (!reducible(t, op)) return kNotSupport;
  Comm& c = *static_cast<Comm*>(comm);
  if (misaligned(t, send, recv) || over_slot(count, t, c.n)) return kPara;
  const std::size_t bytes = count * type_size(t);
  if (overlap(send, bytes * c.n, recv, bytes)) return kPara;
  return enqueue(
      c, stream,
      [&c, send, recv, count, bytes, t, op] {
        if (int e = publish(c, send, bytes * c.n)) return e;
        for (std::size_t i = 0; i < count; ++i)
          store(t, static_cast<char*>(recv), i, reduce_at(c, t, op, c.rank * bytes, i));
        return barrier(c);
      },
      send, recv);
}

int HcclBroadcast(void* buf, std::uint64_t count, int t, std::uint32_t root, void* comm,
                  void* stream) {
  if (int e = check(comm, t, "HcclBroadcast")) return e;
  Comm& c = *static_cast<Comm*>(comm);
  if (root >= c.n || misaligned(t, buf) || over_slot(count, t)) return kPara;
  const std::size_t bytes = count * type_size(t);
  return enqueue(
      c, stream,
      [&c, buf, bytes, root] {
        if (int e = publish(c, c.rank == root ? buf : nullptr, c.rank == root ? bytes : 0))
          return e;
        if (c.rank != root) std::memcpy(buf, c.slot(root), bytes);
        return barrier(c);
      },
      buf, nullptr);
}

int HcclReduce(void* send, void* recv, std::uint64_t count, int t, int op, std::uint32_t root,
               void* comm, void* stream) {
  if (int e = check(comm, t, "HcclReduce")) return e;
  if (!reducible(t, op)) return kNotSupport;
  Comm& c = *static_cast<Comm*>(comm);
  if (root >= c.n || misaligned(t, send, recv) || over_slot(count, t)) return kPara;
  return enqueue(
      c, stream,
      [&c, send, recv, count, t, op, root] {
        if (int e = publish(c, send, count * type_size(t))) return e;
        if (c.rank == root)
          for (std::size_t i = 0; i < count; ++i)
            store(t, static_cast<char*>(recv), i, reduce_at(c, t, op, 0, i));
        return barrier(c);
      },
      send, recv);
}

int HcclAlltoAll(const void* send, std::uint64_t send_count, int send_type, const void* recv,
                 std::uint64_t recv_count, int recv_type, void* comm, void* stream) {
  if (int e = check(comm, send_type, "HcclAlltoAll")) return e;
  if (send_type != recv_type || send_count != recv_count) return kPara;
  Comm& c = *static_cast<Comm*>(comm);
  if (misaligned(send_type, send, recv) || over_slot(send_count, send_type, c.n)) return kPara;
  const std::size_t bytes = send_count * type_size(send_type);
  if (overlap(send, bytes * c.n, recv, bytes * c.n)) return kPara;
  return enqueue(
      c, stream,
      [&c, send, recv, bytes] {
        if (int e = publish(c, send, bytes * c.n)) return e;
        for (std::uint32_t r = 0; r < c.n; ++r)
          std::memcpy(static_cast<char*>(const_cast<void*>(recv)) + r * bytes,
                      c.slot(r) + c.rank * bytes, bytes);
        return barrier(c);
      },
      send, recv);
}

#ifndef FAKE_HCCL_OLD
// The root's send holds n * count elements; rank r receives block r.
int HcclScatter(void* send, void* recv, std::uint64_t count, int t, std::uint32_t root, void* comm,
                void* stream) {
  if (int e = check(comm, t, "HcclScatter")) return e;
  if (count == 0) return kOk;  // HCCL's: success, nothing queued
  Comm& c = *static_cast<Comm*>(comm);
  if (root >= c.n || !recv || misaligned(t, send, recv)) return kPara;
  const bool is_root = c.rank == root;
  const std::size_t bytes = count * type_size(t);
  if (over_slot(count, t, c.n)) return kPara;  // more than the root may publish, on every rank
  if (is_root && (!send || overlap(send, bytes * c.n, recv, bytes))) return kPara;
  return enqueue(
      c, stream,
      [&c, send, recv, bytes, root, is_root] {
        if (int e = publish(c, is_root ? send : nullptr, is_root ? bytes * c.n : 0)) return e;
        std::memcpy(recv, c.slot(root) + c.rank * bytes, bytes);
        return barrier(c);
      },
      is_root ? send : nullptr, recv);
}

// Counts and displacements: host arrays of n uint64_t, in elements. Each
// rank publishes its whole send buffer and what it sends to whom; each
// receiver copies its blocks from the senders' slots.
int HcclAlltoAllV(const void* send, const void* send_counts, const void* send_displs, int send_type,
                  const void* recv, const void* recv_counts, const void* recv_displs, int recv_type,
                  void* comm, void* stream) {
  if (int e = check(comm, send_type, "HcclAlltoAllV")) return e;
  if (send_type != recv_type || misaligned(send_type, send, recv)) return kPara;
  if (!send_counts || !send_displs || !recv_counts || !recv_displs) return kPara;
  Comm& c = *static_cast<Comm*>(comm);
  const std::size_t size = type_size(send_type);
  // [send counts | send displacements | receive counts | receive displacements]
  std::vector<std::uint64_t> l(4 * c.n);
  std::memcpy(l.data(), send_counts, c.n * sizeof(std::uint64_t));
  std::memcpy(l.data() + c.n, send_displs, c.n * sizeof(std::uint64_t));
  std::memcpy(l.data() + 2 * c.n, recv_counts, c.n * sizeof(std::uint64_t));
  std::memcpy(l.data() + 3 * c.n, recv_displs, c.n * sizeof(std::uint64_t));
  std::size_t send_bytes = 0, recv_bytes = 0;  // to the end of the last block
  for (std::uint32_t r = 0; r < c.n; ++r) {
    if (l[r]) send_bytes = std::max<std::size_t>(send_bytes, (l[c.n + r] + l[r]) * size);
    if (l[2 * c.n + r])
      recv_bytes = std::max<std::size_t>(recv_bytes, (l[3 * c.n + r] + l[2 * c.n + r]) * size);
  }
  if ((send_bytes && !send) || (recv_bytes && !recv) || send_bytes > kSlot) return kPara;
  if (overlap(send, send_bytes, recv, recv_bytes)) return kPara;
  return enqueue(
      c, stream,
      [&c, send, recv, size, send_bytes, l = std::move(l)] {
        const std::uint32_t n = c.n;
        for (std::uint32_t d = 0; d < n; ++d) {
          c.header->send_count[c.rank][d] = l[d];
          c.header->send_displ[c.rank][d] = l[n + d];
        }
        if (int e = publish(c, send, send_bytes)) return e;
        int err = kOk;
        for (std::uint32_t s = 0; s < n; ++s) {
          const std::uint64_t count = l[2 * n + s];
          if (c.header->send_count[s][c.rank] != count) {
            err = kPara;  // rank s sends another count than this rank receives
            continue;
          }
          if (count)
            std::memcpy(static_cast<char*>(const_cast<void*>(recv)) + l[3 * n + s] * size,
                        c.slot(s) + c.header->send_displ[s][c.rank] * size, count * size);
        }
        const int e = barrier(c);  // every rank leaves, this one with its error
        return err ? err : e;
      },
      send, recv);
}
#endif

struct Item {  // HcclSendRecvItem
  int type;
  void* buf;
  std::uint64_t count;
  int dtype;
  std::uint32_t remote;
};

// One send and one receive per rank (a ring step), as xferbench issues them.
int HcclBatchSendRecv(void* items, std::uint32_t n, void* comm, void* stream) {
  if (injected("HcclBatchSendRecv")) return kInternal;
  if (fake_acl_current_device() < 0) return kRuntime;
  if (!items || !comm || n != 2) return kPara;
  Comm& c = *static_cast<Comm*>(comm);
  const Item* it = static_cast<const Item*>(items);
  const Item send = it[0].type == 0 ? it[0] : it[1];
  const Item recv = it[0].type == 1 ? it[0] : it[1];
  if (send.type != 0 || recv.type != 1 || type_size(send.dtype) == 0 || type_size(recv.dtype) == 0)
    return kPara;
  if (send.remote >= c.n || recv.remote >= c.n || misaligned(send.dtype, send.buf) ||
      misaligned(recv.dtype, recv.buf) || over_slot(send.count, send.dtype))
    return kPara;
  return enqueue(
      c, stream,
      [&c, send, recv] {
        c.header->dest[c.rank] = send.remote;
        if (int e = publish(c, send.buf, send.count * type_size(send.dtype))) return e;
        // The peer's send must be for this receive; on a mismatch this rank
        // still meets the last barrier, so its peer is not left waiting.
        const bool match = c.header->dest[recv.remote] == c.rank &&
                           c.header->bytes[recv.remote] == recv.count * type_size(recv.dtype);
        if (match) std::memcpy(recv.buf, c.slot(recv.remote), recv.count * type_size(recv.dtype));
        const int e = barrier(c);
        return match ? e : kPara;
      },
      send.buf, recv.buf);
}

}  // extern "C"
