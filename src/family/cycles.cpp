#include "family/cycles.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/journal.hpp"
#include "family/parse.hpp"

namespace xb {

std::vector<Record> run_cycles(const RunOptions& opts, Runtime* rt,
                               const std::function<std::vector<Record>()>& once) {
  const double seconds = opts.duration.empty() ? 0 : parse_duration(opts.duration);
  if (seconds == 0 && opts.cycles < 0) return once();
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const bool tty = !opts.quiet && isatty(STDERR_FILENO) && launcher_rank() <= 0;
  std::vector<Record> all;
  for (int cycle = 0;; ++cycle) {
    set_cycle(cycle);
    for (auto& r : once()) all.push_back(std::move(r));
    bool more = opts.cycles > 0 ? cycle + 1 < opts.cycles : opts.cycles == 0 || elapsed() < seconds;
    if (rt) more = rt->min(more ? 1.0 : 0.0) > 0;  // rank 0's clock is not the others'
    if (tty)
      std::fprintf(stderr, "\r\033[Kcycle %d done, %.0f s%s", cycle + 1, elapsed(),
                   seconds > 0       ? fmt::format(" of {:.0f} s", seconds).c_str()
                   : opts.cycles > 0 ? fmt::format(" ({} cycles)", opts.cycles).c_str()
                                     : " (Ctrl-C ends it)");
    if (!more) break;
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  set_cycle(-1);
  return all;
}

void stop_point(Runtime* rt) {
  if (!rt) return stop_point();
  const int sig = static_cast<int>(rt->max(static_cast<double>(stop_signal())));
  if (!sig) return;
  note_stop_signal(sig);
  throw Interrupted(sig);
}

}  // namespace xb
