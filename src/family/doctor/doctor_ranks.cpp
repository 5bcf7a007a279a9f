// doctor --ranks N: the cross-rank checks, remote get and an allreduce
// across N ranks of this host, each run as its own `mpiexec` of this
// binary whose JSON output is read back (so doctor itself stays one
// process).
#include "family/doctor/doctor_ranks.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "core/units.hpp"
#include "family/doctor/doctor_probe.hpp"
#include "runtime/runtime.hpp"

namespace xb::doctor {
namespace {

// Runs `<launcher> -n N <this binary> ARGS... --format json -o FILE -q`,
// returns the parsed document, or throws RuntimeError with the reason.
nlohmann::json run_ranked(int ranks, const std::vector<std::string>& args, double timeout_s) {
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw RuntimeError("cannot find this binary");
  char dir[] = "/tmp/xferbench-doctor-XXXXXX";
  if (!mkdtemp(dir)) throw RuntimeError("cannot make a temporary directory");
  const std::string out = std::string(dir) + "/out.json", err = std::string(dir) + "/err.log";
  std::vector<std::string> argv = launcher_command(ranks);
  argv.emplace_back(self);
  argv.insert(argv.end(), args.begin(), args.end());
  for (const char* a : {"--format", "json", "-q", "-o"}) argv.emplace_back(a);
  argv.push_back(out);
  const pid_t pid = fork();
  if (pid < 0) throw RuntimeError("fork failed");
  if (pid == 0) {
    std::vector<char*> c;
    c.reserve(argv.size() + 1);
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    if (FILE* f = std::freopen(err.c_str(), "w", stderr)) (void)f;
    if (FILE* f = std::freopen("/dev/null", "w", stdout)) (void)f;
    execvp(c[0], c.data());
    _exit(127);
  }
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw RuntimeError(
          fmt::format("`{}` did not end within {:.0f} s", fmt::join(argv, " "), timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(out), e(err);
  std::stringstream text, etext;
  text << in.rdbuf();
  etext << e.rdbuf();
  std::remove(out.c_str());
  std::remove(err.c_str());
  rmdir(dir);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  if (text.str().empty()) {
    std::string why = etext.str();
    while (!why.empty() && why.back() == '\n') why.pop_back();
    if (const auto nl = why.rfind('\n'); nl != std::string::npos) why = why.substr(nl + 1);
    throw RuntimeError(fmt::format("exit {}: {}", rc, why.empty() ? "no output" : why));
  }
  return nlohmann::json::parse(text.str());
}

// A remote get row: on the host backend, 1 MiB and up held against the
// host memcpy (the ranks share this host's memory).
Finding remote_row(const nlohmann::json& r, const std::string& backend, double reference,
                   const CpuLoad& load) {
  const auto bytes = r.value("bytes", std::uint64_t{0});
  Finding f{"remote", "", Verdict::none, 0, 0, "GB/s", ""};
  f.where = fmt::format("get {} {} {}->{}", format_size(bytes), r.value("method", ""),
                        r.value("src", -1), r.value("dst", -1));
  f.measured = r.contains("gbps") ? r["gbps"].value("median", 0.0) : 0.0;
  if (backend != "host" || bytes < (1ULL << 20)) {
    f.why = "for reference (small transfers, or no expected figure on this backend)";
    return f;
  }
  f.expected = reference;
  f.verdict = grade(f.ratio(), 0.2, 0.05);
  const double cv = r.contains("time_us") ? r["time_us"].value("cv", 0.0) : 0.0;
  f.why = f.verdict == Verdict::pass ? "a peer rank's window read near memcpy speed (same host)"
                                     : fmt::format(
                                           "{:.0f} % of memcpy on the cores: look at the window's "
                                           "transport (shm or rma) and the MPI's settings",
                                           f.ratio() * 100);
  if (f.verdict == Verdict::fail && too_busy_to_judge(load.other_cores, online_cores(), cv)) {
    f.verdict = Verdict::warn;
    f.why = fmt::format("could not judge: the node was busy ({}); {}", busy_text(cv, load), f.why);
  }
  return f;
}

// An allreduce row: busbw for reference.
Finding allreduce_row(const nlohmann::json& r, int ranks, const std::string& method) {
  Finding f{"allreduce", "", Verdict::none, 0, 0, "GB/s", ""};
  f.where = fmt::format("allreduce {} {}", format_size(r.value("bytes", std::uint64_t{0})),
                        r.value("dtype", ""));
  f.measured = r.value("busbw", 0.0);
  f.why = fmt::format("busbw for reference ({} ranks, {})", ranks, method);
  return f;
}

}  // namespace

std::vector<Finding> cross_rank(int ranks, const std::string& backend, double reference) {
  std::vector<Finding> out;
  const struct {
    const char* check;
    std::vector<std::string> args;
  } runs[] = {{"remote", {"remote", "--op", "get", "-b", "64K", "-e", "4M", "-f", "64"}},
              {"allreduce",
               {"coll", "allreduce", "-b", "64K", "-e", "4M", "-f", "64", "-n", "10", "-w", "3"}}};
  for (const auto& run : runs) {
    std::vector<std::string> args = run.args;
    args.insert(args.end(), {"--backend", backend});
    try {
      const LoadMeter meter;  // the ranks are waited-for children: not "other processes"
      const auto doc = run_ranked(ranks, args, 300);
      const CpuLoad load = meter.stop();
      const bool remote = std::string(run.check) == "remote";
      for (const auto& r : doc.at("results")) {
        if (!remote && r.value("inplace", false)) continue;
        Finding f = remote ? remote_row(r, backend, reference, load)
                           : allreduce_row(r, ranks, r.value("method", ""));
        if (r.value("status", "") != "ok") {
          f.verdict = Verdict::fail;
          f.why = fmt::format("{}: {}", r.value("status", ""), r.value("reason", ""));
        }
        out.push_back(f);
      }
    } catch (const std::exception& e) {
      out.push_back({run.check, fmt::format("{} ranks", ranks), Verdict::fail, 0, 0, "GB/s",
                     fmt::format("did not run: {}", e.what())});
    }
  }
  return out;
}

}  // namespace xb::doctor
