#include "runtime/runtime.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

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
  // SLURM_PROCID last: under `salloc mpiexec` it numbers hydra's proxies, not the ranks.
  for (const char* var : {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

std::string launch_without_pmi() {
  const auto count = [](const char* var) {
    const char* v = std::getenv(var);
    return v && *v ? std::atoi(v) : 0;
  };
  if (std::getenv("PMI_RANK") || std::getenv("PMI_SIZE") || std::getenv("PMI_FD") ||
      std::getenv("PMIX_RANK"))
    return "";
  if (const int n = count("OMPI_COMM_WORLD_SIZE"); n > 1)
    return fmt::format(
        "Open MPI's launcher started {} processes, but xferbench is built with MPICH: each would "
        "run alone as 1 rank; start it with MPICH's mpiexec, or srun --mpi=pmi2",
        n);
  if (const int n = count("SLURM_STEP_NUM_TASKS"); n > 1)
    return fmt::format(
        "srun started {} tasks without a PMI (--mpi=none?), so each would run alone as 1 rank; "
        "use srun --mpi=pmi2 (or MpiDefault=pmi2 in slurm.conf)",
        n);
  return "";
}

void reexec_under_mpiexec(int ranks, int argc, char** argv) {
  char self[PATH_MAX] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw RuntimeError("cannot find this binary to start it under mpiexec");
  const char* launcher = std::getenv("XFERBENCH_MPIEXEC");
  if (!launcher || !*launcher) launcher = "mpiexec";
  const std::string n = std::to_string(ranks);
  std::vector<const char*> args = {launcher, "-n", n.c_str(), self};
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--ranks") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--ranks=", 0) == 0) continue;
    args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  execvp(launcher, const_cast<char* const*>(args.data()));
  throw RuntimeError(fmt::format("cannot run {}: {} (install MPICH, or start under mpiexec)",
                                 launcher, std::strerror(errno)));
}

}  // namespace xb
