// The MPI runtime (MPICH, Open MPI): world communicator, shared-memory and RMA windows.
#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/sysinfo.hpp"
#include "runtime/liveness.hpp"
#include "runtime/mpi_check.hpp"
#include "runtime/runtime.hpp"

namespace xb {
namespace {

std::atomic<int> g_exit_hint{1};
std::atomic<bool> g_deferred{false};

// MPI_Finalize, or _exit(code) when it has not returned within 10 s.
void finalize_with_watchdog(int code) {
  std::thread([code] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    exit_now(
        "xferbench: MPI_Finalize did not return within 10 s (a peer rank is gone, or MPICH's "
        "shutdown over TCP hung); exiting\n",
        code);
  }).detach();
  MPI_Finalize();
}

// MPI's error handler for this run's communicators while the liveness watch
// runs. A rank that dies resets its TCP connections, and MPI (ch4:ucx, ob1)
// may see that first and abort without naming the rank. The watch, which
// names the lost rank, marks this rank's file and tells the other ranks, gets
// 2 s to end the process; then MPI's own message and MPI_Abort, as
// MPI_ERRORS_ARE_FATAL would do.
void on_mpi_error(MPI_Comm* comm, int* code, ...) {
  std::this_thread::sleep_for(std::chrono::seconds(2));
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(*code, msg, &len);
  write_now(fmt::format("xferbench: error: MPI: {}\n", msg));
  MPI_Abort(*comm, *code);
}

// MPI_Get_library_version's text (callable before MPI_Init).
std::string library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  return version;
}

// MPI counts are int: one-sided transfers go in pieces of at most 1 GiB.
constexpr Bytes kPiece = 1ULL << 30;

template <class F>
void in_pieces(Bytes n, F&& f) {
  for (Bytes off = 0; off < n; off += kPiece) f(off, static_cast<int>(std::min(kPiece, n - off)));
}

class MpiRequest final : public Window::Request {
 public:
  MpiRequest(std::vector<MPI_Request> r, MPI_Win w, int rank)
      : reqs_(std::move(r)), win_(w), rank_(rank) {}
  ~MpiRequest() override {
    MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
  }
  void wait() override {
    complete_local();
    mpi_check(MPI_Win_flush(rank_, win_), "MPI_Win_flush");  // complete at the target too
  }
  // The requests done at the origin; the target's side waits for a flush.
  void complete_local() {
    mpi_check(MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  }
  int rank() const { return rank_; }

 private:
  std::vector<MPI_Request> reqs_;
  MPI_Win win_;
  int rank_;
};

// Both kinds of window are locked for passive-target access for their whole
// life (lock_all at creation, unlock_all before free).
class MpiWindow final : public Window {
  static MPI_Aint disp(Bytes b) { return static_cast<MPI_Aint>(b); }

 public:
  MpiWindow(MPI_Comm comm, Bytes size, Transport t) : comm_(comm), transport_(t), size_(size) {
    // Whole pages: Debian's MPICH 4.0.2 (ch4:ucx) serves MPI_Get from the
    // wrong place in windows of some other sizes (e.g. 100008 bytes).
    const auto bytes = static_cast<MPI_Aint>(round_to_pages(size));
    if (t == Transport::shm) {
      mpi_check(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, comm, &base_, &win_),
                "MPI_Win_allocate_shared");
    } else {
      mpi_check(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, comm, &base_, &win_), "MPI_Win_allocate");
    }
    mpi_check(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
  }
  ~MpiWindow() override {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  Transport transport() const override { return transport_; }
  Bytes size() const override { return size_; }
  std::byte* local() override { return static_cast<std::byte*>(base_); }
  std::byte* direct(int rank) override {
    if (transport_ != Transport::shm) return nullptr;
    MPI_Aint sz = 0;
    int disp = 0;
    void* p = nullptr;
    mpi_check(MPI_Win_shared_query(win_, rank, &sz, &disp, &p), "MPI_Win_shared_query");
    return static_cast<std::byte*>(p);
  }
  void get(std::byte* dst, int rank, Bytes offset, Bytes n) override {
    in_pieces(n, [&](Bytes o, int c) {
      mpi_check(MPI_Get(dst + o, c, MPI_BYTE, rank, disp(offset + o), c, MPI_BYTE, win_),
                "MPI_Get");
    });
    mpi_check(MPI_Win_flush(rank, win_), "MPI_Win_flush");
  }
  void put(const std::byte* src, int rank, Bytes offset, Bytes n) override {
    in_pieces(n, [&](Bytes o, int c) {
      mpi_check(MPI_Put(src + o, c, MPI_BYTE, rank, disp(offset + o), c, MPI_BYTE, win_),
                "MPI_Put");
    });
    mpi_check(MPI_Win_flush(rank, win_), "MPI_Win_flush");
  }
  std::unique_ptr<Request> rget(std::byte* dst, int rank, Bytes offset, Bytes n) override {
    return post(rank, offset, n, "MPI_Rget", [&](Bytes o, int c, MPI_Aint at, MPI_Request* r) {
      return MPI_Rget(dst + o, c, MPI_BYTE, rank, at, c, MPI_BYTE, win_, r);
    });
  }
  std::unique_ptr<Request> rput(const std::byte* src, int rank, Bytes offset, Bytes n) override {
    return post(rank, offset, n, "MPI_Rput", [&](Bytes o, int c, MPI_Aint at, MPI_Request* r) {
      return MPI_Rput(src + o, c, MPI_BYTE, rank, at, c, MPI_BYTE, win_, r);
    });
  }
  void wait_all(std::span<const std::unique_ptr<Request>> reqs) override {
    std::vector<int> targets;
    for (const auto& r : reqs) {
      auto* m = dynamic_cast<MpiRequest*>(r.get());
      if (!m) {
        r->wait();
        continue;
      }
      m->complete_local();
      if (std::find(targets.begin(), targets.end(), m->rank()) == targets.end())
        targets.push_back(m->rank());
    }
    for (int t : targets) mpi_check(MPI_Win_flush(t, win_), "MPI_Win_flush");
  }
  void sync() override { mpi_check(MPI_Win_sync(win_), "MPI_Win_sync"); }
  void poll() override {
    sync();
    int flag = 0;  // a probe drives MPI's progress engine; nothing is received
    mpi_check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE),
              "MPI_Iprobe");
  }

 private:
  // Starts one request-based op per piece; the Request waits for all.
  template <class Start>
  std::unique_ptr<Request> post(int rank, Bytes offset, Bytes n, const char* what, Start start) {
    std::vector<MPI_Request> reqs;
    in_pieces(n, [&](Bytes o, int c) {
      reqs.push_back(MPI_REQUEST_NULL);
      mpi_check(start(o, c, disp(offset + o), &reqs.back()), what);
    });
    return std::make_unique<MpiRequest>(std::move(reqs), win_, rank);
  }

  MPI_Comm comm_;
  Transport transport_;
  Bytes size_;
  void* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

// Waits for `req` without holding a core: polls for 50 us (a collective
// among ranks that are all there ends within it), then sleeps between polls,
// 20 us doubling to 1 ms. MPI_Test drives MPICH's progress.
void wait_idle(MPI_Request& req, const char* what) {
  int done = 0;
  mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
  const auto t0 = std::chrono::steady_clock::now();
  auto nap = std::chrono::microseconds(20);
  while (!done) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(50)) {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
  }
}

// More ranks on this node than CPUs they may run on (set once MPI is up): a rank that
// polls then holds a CPU that the rank it waits for needs, so it yields between polls.
bool g_oversubscribed = false;

void yield_if_oversubscribed() {
  if (g_oversubscribed) std::this_thread::yield();
}

// The CPUs the node's ranks may run on together: the union of their affinity masks (a rank
// a launcher bound to one core is not alone with it), 0 where none could be read.
std::size_t node_cpus(MPI_Comm node) {
  std::vector<unsigned char> mask(CPU_SETSIZE / 8, 0);
  for (const int c : allowed_cpus())
    if (c >= 0 && c < CPU_SETSIZE)
      mask[static_cast<std::size_t>(c / 8)] |= static_cast<unsigned char>(1U << (c % 8));
  MPI_Allreduce(MPI_IN_PLACE, mask.data(), static_cast<int>(mask.size()), MPI_UNSIGNED_CHAR,
                MPI_BOR, node);
  std::size_t n = 0;
  for (const unsigned char b : mask) n += static_cast<std::size_t>(std::popcount(b));
  return n;
}

// Waits for `req` polling without a pause, calling `progress` between polls (yielding the
// CPU between them where the node is oversubscribed).
template <class Progress>
void wait_spin(MPI_Request& req, const Progress& progress) {
  for (int done = 0; !done;) {
    progress();
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) yield_if_oversubscribed();
  }
}

class MpiTransfer final : public Runtime::Transfer {
 public:
  explicit MpiTransfer(MPI_Request r) : req_(r) {}
  ~MpiTransfer() override {
    if (req_ != MPI_REQUEST_NULL) MPI_Request_free(&req_);
  }
  bool done() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    mpi_check(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    if (flag == 0) yield_if_oversubscribed();
    return flag != 0;
  }
  // MPI_Cancel, then up to 200 ms for the request to finish either way.
  bool cancel() override {
    if (done()) return true;
    mpi_check(MPI_Cancel(&req_), "MPI_Cancel");
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
  }

 private:
  MPI_Request req_;
};

class MpiRuntime final : public Runtime {
 public:
  MpiRuntime() {
    // Bad input is refused by every rank before MPI starts; rank 0's
    // XFERBENCH_PEER_TIMEOUT governs (the others take it from its contact,
    // so every rank takes the same collective path).
    const double peer_timeout = peer_timeout_from_env();
    if (const std::string why = launch_refused_before_init(launch_seen(), library_version());
        !why.empty())
      throw UsageError(why);
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                "MPI_Init_thread");
      owns_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    refuse_split_world();
    mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_),
              "MPI_Comm_split_type");
    int node_size = 0;
    MPI_Comm_size(node_, &node_size);
    MPI_Comm_rank(node_, &local_rank_);
    node_leader_ = rank_;
    MPI_Allreduce(MPI_IN_PLACE, &node_leader_, 1, MPI_INT, MPI_MIN, node_);
    const std::size_t cpus = node_cpus(node_);
    g_oversubscribed = cpus > 0 && static_cast<std::size_t>(node_size) > cpus;
    int all_local = node_size == size_ ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_local, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    single_host_ = all_local == 1;
    if (owns_ && size_ > 1) watch_peers(peer_timeout);
  }
  ~MpiRuntime() override {
    if (owns_ && std::uncaught_exceptions() > 0) {  // main prints the error first
      if (live_) live_->leave(true);
      g_deferred = true;
      return;
    }
    if (live_) live_->leave(false);
    MPI_Comm_free(&node_);
    if (owns_) finalize_with_watchdog(g_exit_hint);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool single_host() const override { return single_host_; }
  int local_rank() const override { return local_rank_; }
  int node() const override { return node_leader_; }
  using Runtime::barrier;
  // Always MPI_Ibarrier (a blocking barrier would not match another
  // rank's nonblocking one); the ranks differ only in how they poll it.
  void set_star(bool on) override { star_ = on && size_ > 1; }
  void barrier(Wait how) override {
    if (star_) {
      star_allgather({});
      return;
    }
    MPI_Request req;
    mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
    if (how == Wait::idle)
      wait_idle(req, "MPI_Ibarrier");
    else
      wait_spin(req, [] {});
  }
  void barrier(const std::function<void()>& progress) override {
    if (star_) {
      star_allgather({});
      return;
    }
    MPI_Request req;
    mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
    wait_spin(req, progress);
  }
  void broadcast(std::span<std::byte> data, int root) override {
    if (star_) {
      const auto all = star_allgather(
          rank_ == root ? std::string(reinterpret_cast<const char*>(data.data()), data.size())
                        : std::string());
      const std::string& theirs = all[static_cast<std::size_t>(root)];
      std::copy_n(reinterpret_cast<const std::byte*>(theirs.data()),
                  std::min(theirs.size(), data.size()), data.data());
      return;
    }
    MPI_Request req;
    mpi_check(MPI_Ibcast(data.data(), mpi_count(data.size()), MPI_BYTE, root, MPI_COMM_WORLD, &req),
              "MPI_Ibcast");
    wait_idle(req, "MPI_Ibcast");
  }
  std::vector<std::string> allgather(const std::string& mine) override {
    if (star_) return star_allgather(mine);
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(size_)), offs(static_cast<std::size_t>(size_));
    MPI_Request req;
    mpi_check(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &req),
              "MPI_Iallgather");
    wait_idle(req, "MPI_Iallgather");
    int total = 0;
    for (int i = 0; i < size_; ++i) {
      offs[static_cast<std::size_t>(i)] = total;
      total += lens[static_cast<std::size_t>(i)];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    mpi_check(MPI_Iallgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(),
                              MPI_CHAR, MPI_COMM_WORLD, &req),
              "MPI_Iallgatherv");
    wait_idle(req, "MPI_Iallgatherv");
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(size_));
    for (int i = 0; i < size_; ++i)
      out.push_back(all.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(i)]),
                               static_cast<std::size_t>(lens[static_cast<std::size_t>(i)])));
    return out;
  }
  void reduce(std::span<double> v, Reduce how) override {
    if (star_) {
      // Every rank's values, combined in rank order on every rank: the same result everywhere.
      const auto all =
          star_allgather(std::string(reinterpret_cast<const char*>(v.data()), v.size_bytes()));
      for (std::size_t i = 0; i < v.size(); ++i) {
        double acc = 0;
        for (std::size_t r = 0; r < all.size(); ++r) {
          double x = 0;
          std::memcpy(&x, all[r].data() + i * sizeof(double), sizeof(double));
          acc = r == 0               ? x
                : how == Reduce::max ? std::max(acc, x)
                : how == Reduce::min ? std::min(acc, x)
                                     : acc + x;
        }
        v[i] = acc;
      }
      return;
    }
    const MPI_Op op = how == Reduce::max ? MPI_MAX : how == Reduce::min ? MPI_MIN : MPI_SUM;
    MPI_Request req;
    mpi_check(MPI_Iallreduce(MPI_IN_PLACE, v.data(), mpi_count(v.size()), MPI_DOUBLE, op,
                             MPI_COMM_WORLD, &req),
              "MPI_Iallreduce");
    wait_idle(req, "MPI_Iallreduce");
  }
  std::unique_ptr<Transfer> isend(std::span<const std::byte> data, int peer, int tag) override {
    MPI_Request req;
    mpi_check(
        MPI_Isend(data.data(), mpi_count(data.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req),
        "MPI_Isend");
    return std::make_unique<MpiTransfer>(req);
  }
  std::unique_ptr<Transfer> irecv(std::span<std::byte> data, int peer, int tag) override {
    MPI_Request req;
    mpi_check(
        MPI_Irecv(data.data(), mpi_count(data.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req),
        "MPI_Irecv");
    return std::make_unique<MpiTransfer>(req);
  }
  void send(std::span<const std::byte> data, int peer, int tag) override {
    mpi_check(MPI_Send(data.data(), mpi_count(data.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD),
              "MPI_Send");
  }
  void recv(std::span<std::byte> data, int peer, int tag) override {
    mpi_check(MPI_Recv(data.data(), mpi_count(data.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  int max_tag() const override {
    void* v = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    return flag && v ? *static_cast<int*>(v) : 32767;
  }
  std::unique_ptr<Window> allocate_window(Bytes size, Transport t) override {
    if (star_) throw std::logic_error("allocate_window in star mode: its collectives would not be");
    if (t == Transport::shm && !single_host_)
      throw UsageError("--transport shm needs all ranks on one host (use rma)");
    return std::make_unique<MpiWindow>(t == Transport::shm ? node_ : MPI_COMM_WORLD, size, t);
  }

 private:
  // Star mode's one exchange: every rank's string to rank 0, which sends
  // them all back, length-prefixed, on the highest tag (fleet's pairs stay
  // below it). The pairs of one rank and rank 0 keep their order (MPI's
  // non-overtaking rule), so consecutive exchanges cannot cross.
  std::vector<std::string> star_allgather(const std::string& mine) {
    const int tag = max_tag();
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    if (rank_ != 0) {
      star_send(mine, 0, tag);
      const std::string packed = star_recv(0, tag);
      std::size_t at = 0;
      for (auto& s : all) {
        std::uint64_t n = 0;
        if (packed.size() < at + sizeof n) throw RuntimeError("star allgather: a short message");
        std::memcpy(&n, packed.data() + at, sizeof n);
        at += sizeof n;
        if (packed.size() < at + n) throw RuntimeError("star allgather: a short message");
        s.assign(packed, at, n);
        at += n;
      }
      return all;
    }
    all[0] = mine;
    for (int r = 1; r < size_; ++r) all[static_cast<std::size_t>(r)] = star_recv(r, tag);
    std::string packed;
    for (const auto& s : all) {
      const std::uint64_t n = s.size();
      packed.append(reinterpret_cast<const char*>(&n), sizeof n);
      packed += s;
    }
    std::vector<MPI_Request> reqs(static_cast<std::size_t>(size_ - 1));
    for (int r = 1; r < size_; ++r)
      mpi_check(MPI_Isend(packed.data(), mpi_count(packed.size()), MPI_BYTE, r, tag, MPI_COMM_WORLD,
                          &reqs[static_cast<std::size_t>(r - 1)]),
                "MPI_Isend");
    for (auto& req : reqs) wait_idle(req, "MPI_Isend");
    return all;
  }
  void star_send(const std::string& s, int peer, int tag) {
    MPI_Request req;
    mpi_check(MPI_Isend(s.data(), mpi_count(s.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req),
              "MPI_Isend");
    wait_idle(req, "MPI_Isend");
  }
  // A message of unknown length: probed (sleeping as wait_idle does), then received.
  std::string star_recv(int peer, int tag) {
    MPI_Message msg;
    MPI_Status status;
    int flag = 0;
    auto nap = std::chrono::microseconds(20);
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      mpi_check(MPI_Improbe(peer, tag, MPI_COMM_WORLD, &flag, &msg, &status), "MPI_Improbe");
      if (flag) break;
      if (std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(50)) {
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(1000));
      }
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::string s(static_cast<std::size_t>(count), '\0');
    mpi_check(MPI_Mrecv(s.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return s;
  }

  // N processes a launcher started must make one world of N ranks: an MPI
  // that the launcher does not reach (MPICH under srun --mpi=pmix or Open
  // MPI's mpirun, torchrun) makes N worlds of 1 rank each instead. Each
  // such process is alone, so it finalises on its own and leaves.
  void refuse_split_world() {
    const std::string why = world_mismatch(launch_seen(), size_, library_version());
    if (why.empty()) return;
    if (owns_ && size_ == 1) {
      MPI_Finalize();
      owns_ = false;
    }
    throw UsageError(why);
  }

  // The liveness watch (runtime/liveness.hpp), collective on every rank:
  // rank 0's contact (empty: no watch; its timeout_s 0) goes to the others
  // by broadcast; a rank that cannot reach it runs unwatched, and says so.
  void watch_peers(double timeout_s) {
    live_ = std::make_unique<Liveness>(rank_, size_, timeout_s);
    std::string contact;
    if (rank_ == 0 && timeout_s > 0) {
      try {
        contact = live_->listen();
      } catch (const RuntimeError& e) {
        std::fprintf(stderr, "xferbench: warning: no liveness watch: %s\n", e.what());
      }
    }
    contact = broadcast_text(std::move(contact), 0);
    if (contact.empty()) return;
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;  // MPI_Comm_dup passes it on (coll's comm)
    MPI_Comm_create_errhandler(on_mpi_error, &handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
    MPI_Comm_set_errhandler(node_, handler);
    MPI_Errhandler_free(&handler);
    if (rank_ == 0) return;
    const std::string why = live_->connect(contact);
    if (!why.empty())
      std::fprintf(stderr,
                   "xferbench: warning: rank %d %s: the others will not notice should it fail\n",
                   rank_, why.c_str());
  }

  int rank_ = 0, size_ = 1;
  bool single_host_ = true;
  bool star_ = false;  // set_star: control exchanges through rank 0
  int local_rank_ = 0;
  int node_leader_ = 0;
  bool owns_ = false;
  MPI_Comm node_ = MPI_COMM_NULL;
  std::unique_ptr<Liveness> live_;
};

}  // namespace

std::unique_ptr<Runtime> make_mpi_runtime() { return std::make_unique<MpiRuntime>(); }

std::string mpi_library() { return mpi_library_name(library_version()); }

void set_exit_code_hint(int code) { g_exit_hint = code; }

void finish_deferred_mpi(int exit_code) {
  if (g_deferred.exchange(false)) finalize_with_watchdog(exit_code);
}

}  // namespace xb
