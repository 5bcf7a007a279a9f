#pragma once
// Where a run's records go as they become final, and how a run is asked to
// stop. The output of a run (family/output.hpp: Output) installs the sink and
// writes each record to its -o file at once; families call record_done()
// the moment a record is final, and stop points between measurements.
#include <exception>
#include <functional>
#include <string>

#include "core/record.hpp"

namespace xb {

// The run's record sink, or none (empty function).
using RecordSink = std::function<void(const Record&)>;
void set_record_sink(RecordSink sink);
// A finished record, as final as the one the report will hold. While a
// monitoring run repeats its measurement (--duration, --cycles), the record
// gets the cycle and the wall clock at its end first.
void record_done(Record& r);

// Monitoring runs: the cycle the records being made belong to (-1: none).
inline constexpr FieldKey<double> kTUnix{"t_unix"};       // seconds since 1970, at its end
inline constexpr FieldKey<std::int64_t> kCycle{"cycle"};  // 0, 1, ...
void set_cycle(int cycle);

// SIGINT and SIGTERM while armed: the first asks the run to stop after the
// measurement in flight (a line on stderr says so), the second ends the
// process at once. Unarmed, the signals keep their default action.
void arm_stop_signals(bool print_notice);
void disarm_stop_signals();
// The signal that asked to stop, 0 if none.
int stop_signal();
// A stop another rank was asked for, agreed on: this process stops alike.
void note_stop_signal(int sig);
// "SIGINT", "SIGTERM", or "signal N".
std::string signal_name(int sig);

// Thrown at a stop point once a stop was asked for: the run unwinds, its
// output keeps the records so far, and the process exits 128 + signal.
class Interrupted : public std::exception {
 public:
  explicit Interrupted(int sig) : sig_(sig), what_("stopped by " + signal_name(sig)) {}
  int signal() const { return sig_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  int sig_;
  std::string what_;
};

// A single process's stop point: throws Interrupted after a stop signal.
void stop_point();

}  // namespace xb
