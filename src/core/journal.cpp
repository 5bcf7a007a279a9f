#include "core/journal.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>

namespace xb {
namespace {

std::mutex g_sink_mu;
RecordSink g_sink;

std::atomic<int> g_stop{0};
std::atomic<int> g_cycle{-1};
std::atomic<bool> g_notice{true};
std::atomic<bool> g_tty{false};  // stderr is a terminal: the notice starts a line of its own
struct sigaction g_old_int {
}, g_old_term{};
bool g_armed = false;

void on_signal(int sig) {
  int none = 0;
  if (!g_stop.compare_exchange_strong(none, sig)) {
    // The second signal: stop now, as the default action would.
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  if (g_notice.load()) {
    // On a terminal the ^C (or a progress line) ends the line first.
    static const char msg[] =
        "\nxferbench: stopping after the measurement in flight (again to stop at once)\n";
    const std::size_t skip = g_tty.load() ? 0 : 1;
    const ssize_t n = write(STDERR_FILENO, msg + skip, sizeof msg - 1 - skip);
    (void)n;
  }
}

}  // namespace

void set_record_sink(RecordSink sink) {
  std::lock_guard lock(g_sink_mu);
  g_sink = std::move(sink);
}

void record_done(Record& r) {
  if (const int c = g_cycle.load(); c >= 0) {
    r.set(
        kTUnix,
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    r.set(kCycle, std::int64_t{c});
  }
  std::lock_guard lock(g_sink_mu);
  if (g_sink) g_sink(r);
}

void set_cycle(int cycle) { g_cycle = cycle; }

void arm_stop_signals(bool print_notice) {
  g_notice = print_notice;
  g_tty = isatty(STDERR_FILENO) == 1;
  if (g_armed) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  g_armed = true;
}

void disarm_stop_signals() {
  if (!g_armed) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_armed = false;
}

int stop_signal() { return g_stop.load(); }

void note_stop_signal(int sig) {
  int none = 0;
  g_stop.compare_exchange_strong(none, sig);
}

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

void stop_point() {
  if (const int s = g_stop.load()) throw Interrupted(s);
}

}  // namespace xb
