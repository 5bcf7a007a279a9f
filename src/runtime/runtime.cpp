#include "runtime/runtime.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <xferbench/launcher.hpp>

#include "core/corruption.hpp"
#include "core/error.hpp"

namespace xb {

const char* to_string(Transport t) { return t == Transport::shm ? "shm" : "rma"; }

void Runtime::send(std::span<const std::byte> data, int peer, int tag) {
  const auto t = isend(data, peer, tag);
  while (!t->done()) {
  }
}

void Runtime::recv(std::span<std::byte> data, int peer, int tag) {
  const auto t = irecv(data, peer, tag);
  while (!t->done()) {
  }
}

std::string Runtime::agree(const std::string& local_error) {
  for (const auto& e : allgather(local_error))
    if (!e.empty()) return e;
  return {};
}

std::string Runtime::broadcast_text(std::string text, int root) {
  std::uint64_t len = text.size();
  broadcast(std::as_writable_bytes(std::span(&len, 1)), root);
  text.resize(len);
  broadcast(std::as_writable_bytes(std::span(text)), root);
  return text;
}

bool launched_by_mpiexec() {
  return std::getenv("PMI_RANK") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") ||
         std::getenv("OMPI_COMM_WORLD_SIZE");
}

int launcher_rank() {
  // SLURM_PROCID after the MPI launchers' own: under `salloc mpiexec` it
  // numbers hydra's proxies, not the ranks. RANK last, and only beside a
  // WORLD_SIZE of several (torchrun's pair; a stray RANK alone is no launch).
  for (const char* var : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  const char* world = std::getenv("WORLD_SIZE");
  if (const char* v = std::getenv("RANK"); v && *v && world && std::atoi(world) > 1)
    return std::atoi(v);
  return -1;
}

std::vector<std::vector<double>> allgather_doubles(Runtime& rt, const std::vector<double>& mine) {
  std::string wire(mine.size() * sizeof(double), '\0');
  std::memcpy(wire.data(), mine.data(), wire.size());
  std::vector<std::vector<double>> all;
  for (const std::string& w : rt.allgather(wire)) {
    std::vector<double> v(w.size() / sizeof(double));
    std::memcpy(v.data(), w.data(), v.size() * sizeof(double));
    all.push_back(std::move(v));
  }
  return all;
}

CheckTally allgather_tally(Runtime& rt, const CheckTally& mine,
                           std::vector<std::int64_t>* per_rank) {
  CheckTally all;
  if (per_rank) per_rank->clear();
  for (const std::string& w : rt.allgather(mine.to_wire())) {
    const CheckTally t = CheckTally::from_wire(w);
    if (per_rank) per_rank->push_back(t.wrong_iters());
    all.merge(t);
  }
  return all;
}

int launcher_local_rank() {
  for (const char* var :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return -1;
}

namespace {

int env_count(const char* var) {
  const char* v = std::getenv(var);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 && n <= INT_MAX ? static_cast<int>(n) : -1;
}

bool is_mpich_family(std::string_view lib) {
  return lib.find("MPICH") != std::string_view::npos ||
         lib.find("Intel") != std::string_view::npos ||
         lib.find("MVAPICH") != std::string_view::npos;
}

}  // namespace

std::string LaunchSeen::name() const {
  switch (kind) {
    case Kind::pmi:
      return "a PMI launcher (MPICH's mpiexec, or srun --mpi=pmi2)";
    case Kind::openmpi:
      return "Open MPI's mpirun";
    case Kind::srun:
      return srun_mpi.empty() ? "srun" : "srun --mpi=" + srun_mpi;
    case Kind::torchrun:
      return "a torchrun-style launcher (RANK, WORLD_SIZE)";
    case Kind::none:
      break;
  }
  return "no launcher";
}

LaunchSeen launch_seen() {
  LaunchSeen s;
  const std::pair<const char*, LaunchSeen::Kind> order[] = {
      {"PMI_SIZE", LaunchSeen::Kind::pmi},
      {"OMPI_COMM_WORLD_SIZE", LaunchSeen::Kind::openmpi},
      {"SLURM_STEP_NUM_TASKS", LaunchSeen::Kind::srun},
      {"WORLD_SIZE", LaunchSeen::Kind::torchrun}};
  for (const auto& [var, kind] : order)
    if (const int n = env_count(var); n > 0) {
      s.kind = kind;
      s.size = n;
      break;
    }
  if (s.kind != LaunchSeen::Kind::srun) return s;
  if (const char* m = std::getenv("SLURM_MPI_TYPE"); m && *m)
    s.srun_mpi = m;
  else if (!std::getenv("PMI_FD") && !std::getenv("PMI_RANK") && !std::getenv("PMIX_RANK"))
    s.srun_mpi = "none";  // srun --mpi=none sets no SLURM_MPI_TYPE, and no PMI at all
  return s;
}

std::string mpi_library_name(const std::string& text) {
  std::string_view t = text;
  if (t.rfind("MPICH Version:", 0) == 0) {
    t.remove_prefix(std::string_view("MPICH Version:").size());
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    return "MPICH " + std::string(t.substr(0, t.find_first_of(" \t\n")));
  }
  t = t.substr(0, t.find_first_of(",\n"));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  return t.empty() ? std::string("an unnamed MPI") : std::string(t);
}

std::string world_mismatch(const LaunchSeen& seen, int mpi_size, const std::string& library) {
  // Only a world of 1 is the split: a larger world that differs from the
  // announced size is MPI's to own (a variable left in the environment by an
  // enclosing allocation, `srun --pty bash` then mpirun, must not refuse it).
  if (seen.size <= 1 || mpi_size != 1) return "";
  const std::string lib = mpi_library_name(library);
  const bool mpich = is_mpich_family(lib);
  const std::string own = fmt::format("{} {} N", build::kMpiexec, build::kMpiexecNumprocFlag);
  std::string fix;
  switch (seen.kind) {
    case LaunchSeen::Kind::srun:
      fix = mpich ? "use srun --mpi=pmi2 (MPICH's PMI), or build against the site's MPI "
                    "(cmake --preset openmpi, or -DXFERBENCH_MPI=openmpi)"
                  : "use srun --mpi=pmix (Open MPI's), or the mpirun it was built with";
      break;
    case LaunchSeen::Kind::openmpi:
      fix = mpich ? fmt::format(
                        "start it with the launcher of its MPI ({}), or srun --mpi=pmi2, "
                        "or build against Open MPI (cmake --preset openmpi)",
                        own)
                  : fmt::format("start it with the mpirun of the Open MPI it was built with ({})",
                                own);
      break;
    case LaunchSeen::Kind::pmi:
      fix = mpich
                ? fmt::format("start it with the mpiexec of the MPICH it was built with ({})", own)
                : fmt::format("start it with Open MPI's mpirun ({}), or srun --mpi=pmix", own);
      break;
    case LaunchSeen::Kind::torchrun:
    case LaunchSeen::Kind::none:
      fix = fmt::format("xferbench's ranks are MPI processes: start them with {} (or --ranks N)",
                        own);
      break;
  }
  return fmt::format(
      "{} started {} processes, but each is alone in an MPI world of 1 rank: this xferbench is "
      "built with {}, which that launch does not reach; {}",
      seen.name(), seen.size, lib, fix);
}

std::string launch_refused_before_init(const LaunchSeen& seen, const std::string& library) {
  // Open MPI's MPI_Init aborts with a page of its own there. MPICH's kind
  // may still form the world through Slurm's libpmi (Intel MPI with
  // I_MPI_PMI_LIBRARY, MVAPICH2 built --with-pmi=slurm): after MPI_Init,
  // world_mismatch decides for them.
  if (seen.kind != LaunchSeen::Kind::srun || seen.srun_mpi != "none" || seen.size <= 1 ||
      is_mpich_family(mpi_library_name(library)))
    return "";
  return world_mismatch(seen, 1, library);
}

std::vector<std::string> launcher_command(int ranks) {
  const char* env = std::getenv("XFERBENCH_MPIEXEC");
  std::vector<std::string> cmd = {env && *env ? env : build::kMpiexec};
  for (const char* const* f = build::kMpiexecPreflags; *f; ++f) cmd.emplace_back(*f);
  cmd.emplace_back(build::kMpiexecNumprocFlag);
  cmd.push_back(std::to_string(ranks));
  return cmd;
}

namespace {

std::atomic<pid_t> g_launcher{0};   // the launcher's pid, once it runs
std::atomic<int> g_stopped_by{0};   // the first SIGINT/SIGTERM this process got
std::atomic<bool> g_passed{false};  // a signal went on to the launcher

void pass_on(int sig) {
  int none = 0;
  g_stopped_by.compare_exchange_strong(none, sig);
  if (const pid_t pid = g_launcher.load(); pid > 0) {
    kill(pid, sig);
    g_passed = true;
  }
}

// The child's side of the fork: only async-signal-safe calls. An exec that
// fails writes its errno to `report` (closed on a good exec).
[[noreturn]] void exec_launcher(char* const* argv, int report) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // this process gone: the run ends too
  // In a group of its own it may not read a terminal (SIGTTIN would stop
  // it); the ranks read nothing.
  if (isatty(STDIN_FILENO) == 1) {
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
  }
  execvp(argv[0], argv);
  const int err = errno;
  ssize_t n = write(report, &err, sizeof err);
  (void)n;
  _exit(127);
}

}  // namespace

void reexec_under_mpiexec(int ranks, int argc, char** argv) {
  char self[PATH_MAX] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw RuntimeError("cannot find this binary to start it under mpiexec");
  std::vector<std::string> cmd = launcher_command(ranks);
  cmd.emplace_back(self);
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--ranks") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--ranks=", 0) == 0) continue;
    cmd.emplace_back(argv[i]);
  }
  std::vector<char*> args;
  args.reserve(cmd.size() + 1);
  for (auto& c : cmd) args.push_back(c.data());
  args.push_back(nullptr);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw RuntimeError("cannot start the launcher: no pipe");
  struct sigaction sa {};
  sa.sa_handler = pass_on;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const pid_t pid = fork();
  if (pid == 0) exec_launcher(args.data(), report[1]);
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    throw RuntimeError(fmt::format("cannot start {}: {}", cmd[0], std::strerror(errno)));
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  g_launcher = pid;
  if (const int sig = g_stopped_by.load(); sig && !g_passed.load())
    kill(pid, sig);  // it came before the pid was known
  int err = 0;
  ssize_t got = 0;
  while ((got = read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof err)) {
    if (std::getenv("XFERBENCH_MPIEXEC"))  // the user's setting names nothing it can run
      throw UsageError(
          fmt::format("XFERBENCH_MPIEXEC: cannot run {}: {}", cmd[0], std::strerror(err)));
    throw RuntimeError(
        fmt::format("cannot run {}: {} (the MPI launcher this xferbench was built "
                    "with; XFERBENCH_MPIEXEC names another)",
                    cmd[0], std::strerror(err)));
  }
  if (const int sig = g_stopped_by.load()) throw LauncherDone(128 + sig);
  throw LauncherDone(WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1);
}

}  // namespace xb
