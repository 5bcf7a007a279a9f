#include "core/record.hpp"

namespace xb {

const char* to_string(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::waived:
      return "waived";
    case Status::failed:
      return "failed";
  }
  return "?";
}

void Record::set_samples(std::span<const double> samples_us) {
  set_stats(compute_stats(samples_us), static_cast<int>(samples_us.size()));
}

void Record::set_stats(const Stats& t, int iterations) {
  iters = iterations;
  time_us = t;
  gbps_median = gbps(bytes, time_us.median);
  gbps_max = gbps(bytes, time_us.min);
}

Record Record::waived(std::string kase, std::string method, int src, int dst, Bytes bytes,
                      std::string reason) {
  Record r;
  r.kase = std::move(kase);
  r.method = std::move(method);
  r.src = src;
  r.dst = dst;
  r.bytes = bytes;
  r.status = Status::waived;
  r.reason = std::move(reason);
  return r;
}

}  // namespace xb
