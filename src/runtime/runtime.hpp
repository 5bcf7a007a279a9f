#pragma once
// Ranks: one process, or many under an MPI launcher (mpiexec, mpirun, srun). Barrier, broadcast,
// allgather, agreement on errors, and symmetric windows: every rank allocates
// the same-size window, reachable by load/store on one host (MPI shared-memory
// windows) or by one-sided get/put across hosts (MPI RMA windows).
// MPI types stay inside runtime/mpi_runtime.cpp.
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace xb {

class CheckTally;  // core/corruption.hpp

enum class Transport { shm, rma };
const char* to_string(Transport t);

class Window {
 public:
  // An asynchronous one-sided transfer in flight.
  class Request {
   public:
    virtual ~Request() = default;
    virtual void wait() = 0;  // complete locally and at the target
  };

  virtual ~Window() = default;
  virtual Transport transport() const = 0;
  virtual Bytes size() const = 0;
  virtual std::byte* local() = 0;
  // Load/store address of `rank`'s window (shm), nullptr for rma.
  virtual std::byte* direct(int rank) = 0;
  // Blocking one-sided transfers, complete at the target on return.
  virtual void get(std::byte* dst, int rank, Bytes offset, Bytes n) = 0;
  virtual void put(const std::byte* src, int rank, Bytes offset, Bytes n) = 0;
  virtual std::unique_ptr<Request> rget(std::byte* dst, int rank, Bytes offset, Bytes n) = 0;
  virtual std::unique_ptr<Request> rput(const std::byte* src, int rank, Bytes offset, Bytes n) = 0;
  // Completes requests of this window as wait() does each, but completes
  // them at their targets once (one flush per target, not per request): a
  // window of transfers in flight (remote --window).
  virtual void wait_all(std::span<const std::unique_ptr<Request>> reqs) {
    for (const auto& r : reqs) r->wait();
  }
  // Orders this rank's memory against its peers'; call around a barrier so
  // stores made before it are seen by loads after it.
  virtual void sync() = 0;
  // For a rank polling its own window for a peer's put (a flag): sync(),
  // and lets the library progress (a put a target must serve, over TCP).
  virtual void poll() { sync(); }
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual bool single_host() const = 0;  // all ranks on one node
  virtual int local_rank() const = 0;    // this rank's index among the ranks of its node
  // Which node this rank is on, as MPI sees it (not the host name, which
  // containers and network namespaces may share): the lowest rank of its node.
  virtual int node() const { return 0; }
  // How a rank waits for the others. MPICH busy-polls, so a rank that waits
  // in a plain MPI call holds a core a measuring rank may need.
  enum class Wait {
    idle,  // polls briefly, then sleeps between polls (20 us growing to 1 ms)
    spin,  // polls without sleeping: the start of a timed region (ranks leave
           // together), or a rank whose memory another reads one-sided
  };
  virtual void barrier(Wait how) = 0;
  void barrier() { barrier(Wait::idle); }
  // A barrier that keeps calling `progress` while it waits, without sleeping
  // (a rank serving one-sided traffic of another library must not stop
  // progressing it).
  virtual void barrier(const std::function<void()>& progress) = 0;
  // broadcast, allgather and reduce wait as Wait::idle does.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Every rank's string, in rank order, on every rank.
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  enum class Reduce { max, min, sum };
  // Element-wise over ranks, in place, result on every rank.
  virtual void reduce(std::span<double> values, Reduce how) = 0;
  double max(double v) { return reduce_one(v, Reduce::max); }
  double sum(double v) { return reduce_one(v, Reduce::sum); }
  double min(double v) { return reduce_one(v, Reduce::min); }
  // Collective; throws RuntimeError when a window cannot be made.
  virtual std::unique_ptr<Window> allocate_window(Bytes size, Transport t) = 0;

  // Point-to-point between two ranks (fleet's pairs): nonblocking, bytes
  // matched by peer and tag. `done` tests without waiting (and drives the
  // library's progress). A transfer destroyed before it is done is left to
  // finish on its own: its buffer must outlive the run.
  class Transfer {
   public:
    virtual ~Transfer() = default;
    virtual bool done() = 0;
    // Gives up on a transfer that is not done: true once it is finished
    // (cancelled, or completed after all) within a short wait; false when
    // it may still move bytes (a receive may still write its buffer).
    virtual bool cancel() { return done(); }
  };
  virtual std::unique_ptr<Transfer> isend(std::span<const std::byte> data, int peer, int tag) = 0;
  virtual std::unique_ptr<Transfer> irecv(std::span<std::byte> data, int peer, int tag) = 0;
  // The largest tag isend/irecv take (MPI_TAG_UB, at least 32767).
  virtual int max_tag() const = 0;
  // Blocking point-to-point (latency's ping-pong): returns once `data` may
  // be reused (send) or holds the message (recv), polling the library
  // without a pause meanwhile (MPI: MPI_Send, MPI_Recv). The default spins
  // on isend/irecv.
  virtual void send(std::span<const std::byte> data, int peer, int tag);
  virtual void recv(std::span<std::byte> data, int peer, int tag);

  // Star mode (fleet, whose links may be dead): barrier, broadcast,
  // allgather and reduce go through rank 0 as point-to-point messages, so
  // they cross only the links to rank 0's host, never a pair's link that a
  // library's collective algorithm would pick (a dead one would hang it).
  // Collective: every rank sets the same value. Runtimes without it ignore it.
  virtual void set_star(bool on) { (void)on; }

  // Collective: the first non-empty `local_error` over the ranks (rank
  // order), on every rank, so all ranks take the same branch.
  std::string agree(const std::string& local_error);
  // Collective: `root`'s string, on every rank.
  std::string broadcast_text(std::string text, int root);
  bool root() const { return rank() == 0; }

 private:
  double reduce_one(double v, Reduce how) {
    reduce(std::span(&v, 1), how);
    return v;
  }
};

// Initialises MPI (multi-rank commands only) and finalises it on
// destruction; windows must be released first. MPI_Finalize runs under a
// watchdog: when it has not returned within 10 s (a peer rank died, or
// MPICH's TCP shutdown hangs with 3 and more ranks), the process says so
// and exits with the exit code hint. While an exception unwinds, the
// finalize is deferred to finish_deferred_mpi, so the error is printed
// before anything can wait on a dead peer. Throws UsageError (after
// finalising) when the world MPI made is not the one the launcher started
// (world_mismatch): N processes each alone in a world of 1 rank.
std::unique_ptr<Runtime> make_mpi_runtime();
// The exit code the process ends with should MPI_Finalize hang (default 1).
void set_exit_code_hint(int code);
// After main printed an error: the finalize the runtime deferred, if any.
void finish_deferred_mpi(int exit_code);

// True when this process was started by an MPI launcher (PMI, PMIx or Open
// MPI's variables are set).
bool launched_by_mpiexec();
// This process's rank as the launcher set it before MPI starts, -1 if none.
int launcher_rank();
// This process's index among the launcher's processes on its node
// (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, LOCAL_RANK),
// -1 if none says.
int launcher_local_rank();

// Every rank's numbers on every rank, in rank order (over allgather).
std::vector<std::vector<double>> allgather_doubles(Runtime& rt, const std::vector<double>& mine);

// Every rank's check tally of the same iterations merged, on every rank
// (core/corruption.hpp); `per_rank`, when given, gets each rank's wrong
// iterations in rank order.
CheckTally allgather_tally(Runtime& rt, const CheckTally& mine,
                           std::vector<std::int64_t>* per_rank = nullptr);

// What the launcher that started this process announced, from its
// environment: who it is and how many processes it started. Read in this
// order, the first that is set wins: PMI_SIZE (MPICH's hydra mpiexec, srun
// --mpi=pmi2), OMPI_COMM_WORLD_SIZE (Open MPI's and HPC-X's mpirun),
// SLURM_STEP_NUM_TASKS (srun with any --mpi), WORLD_SIZE (torchrun and
// other launchers of PyTorch's kind).
struct LaunchSeen {
  enum class Kind { none, pmi, openmpi, srun, torchrun };
  Kind kind = Kind::none;
  int size = 0;              // processes it started; 0 when it does not say
  std::string srun_mpi;      // srun's --mpi (SLURM_MPI_TYPE); "none" when srun set no PMI at all
  std::string name() const;  // "srun --mpi=pmix", "Open MPI's mpirun", ...
};
LaunchSeen launch_seen();
// After MPI_Init: the one line saying what happened and what to do instead
// when the launcher started several processes and MPI made each a world of
// 1 rank (the split), else "". `library` is MPI_Get_library_version's text.
std::string world_mismatch(const LaunchSeen& seen, int mpi_size, const std::string& library);
// The MPI library this binary runs with, in a few words (callable before
// MPI starts): "MPICH 4.0.2", "Open MPI v4.1.4".
std::string mpi_library();
// Before MPI_Init: srun --mpi=none with more than one task and a library
// that cannot form a world without a PMI plugin (Open MPI, whose MPI_Init
// aborts there with a page of its own). "" otherwise.
std::string launch_refused_before_init(const LaunchSeen& seen, const std::string& library);
// MPI_Get_library_version's text in a few words: "MPICH 4.0.2", "Open MPI v4.1.4".
std::string mpi_library_name(const std::string& version_text);

// The command that starts N ranks of a program: the launcher of the MPI
// this binary is built against, as CMake found it (FindMPI's
// MPIEXEC_EXECUTABLE, MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS), or
// XFERBENCH_MPIEXEC when set. The program and its arguments follow.
std::vector<std::string> launcher_command(int ranks);

// The end of a process whose run happened in its launcher's ranks
// (reexec_under_mpiexec): main() exits with code().
class LauncherDone : public std::exception {
 public:
  explicit LauncherDone(int code) : code_(code) {}
  int code() const { return code_; }
  const char* what() const noexcept override { return "the launcher ended"; }

 private:
  int code_;
};

// `--ranks N` outside a launcher: runs `launcher_command(N) <this binary>
// <args without --ranks>` as a child, in a process group of its own, and
// waits for it. SIGINT and SIGTERM sent to this process (a Ctrl-C reaches
// only this one's group) go on to the launcher, which passes them to the
// ranks. Throws LauncherDone with the code to exit with: 128 + the first
// such signal when the run was stopped, whatever the launcher returned
// (MPICH's hydra returns 0 for a stopped run when its proxy reaps a rank
// after its own clean-up began), else the launcher's code (128 + signal if
// it died of one). Throws RuntimeError when the launcher cannot start.
[[noreturn]] void reexec_under_mpiexec(int ranks, int argc, char** argv);

}  // namespace xb
