// The engine client's records: a part's, a failed part's, a sum over parts,
// and fan-in's total over clients.
#include "family/engine/engine_records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "core/stats.hpp"

namespace xb {

using engine::Op;

namespace {

// What every record of a step carries: the op, the mode, the lane, the
// block size and the requests the bytes make.
Record step_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bytes, Bytes bs) {
  Record r;
  r.kase = op == Op::read ? "read" : "write";
  r.method = cfg.async ? "async" : "sync";
  r.bytes = bytes;
  r.set(engine_field::mode, to_string(cfg.mode));
  r.set(engine_field::lane, to_string(lane));
  r.set(engine_field::block, static_cast<std::int64_t>(bs));
  r.set(engine_field::requests, static_cast<std::int64_t>(bytes / bs));
  return r;
}

// --window runs: the window and the message rate of the median loop.
void set_window(Record& r, const EngineClientConfig& cfg, Bytes bs) {
  if (cfg.window <= 0) return;
  r.set(engine_field::window, static_cast<std::int64_t>(cfg.window));
  r.set(engine_field::msg_rate,
        messages_per_second(static_cast<double>(r.bytes / bs), r.time_us.median));
}

}  // namespace

Record engine_part_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bytes,
                          Bytes bs, const EngineTiming& t, std::optional<std::int64_t> bad) {
  Record r = step_record(op, cfg, lane, bytes, bs);
  r.set_samples(t.loop_us);
  const Stats lat = compute_stats(t.req_us);
  const double batches = std::max<double>(1.0, static_cast<double>(t.req_us.size()));
  r.set(engine_field::lat_of, cfg.async ? "batch" : "request");
  r.set(engine_field::lat_p50_us, lat.median);
  r.set(engine_field::lat_p99_us, lat.p99);
  r.set(engine_field::lat_max_us, lat.max);
  if (cfg.async) {
    r.set(engine_field::batch, static_cast<std::int64_t>(cfg.batch));
    r.set(engine_field::submit_us, t.submit_us / batches);
    r.set(engine_field::wait_us, t.wait_us / batches);
  }
  set_window(r, cfg, bs);
  if (cfg.check_every) {
    set_check_fields(r, t.checks);
  } else if (bad) {
    r.verified = *bad < 0;
    if (*bad >= 0) {
      r.status = Status::failed;
      r.reason = fmt::format("verification failed: first wrong byte at offset {}", *bad);
    }
  }
  return r;
}

Record engine_failed_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bytes,
                            Bytes bs, std::string reason) {
  Record r = step_record(op, cfg, lane, bytes, bs);
  r.status = Status::failed;
  r.reason = std::move(reason);
  return r;
}

Record engine_sum_record(Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bs,
                         const std::vector<EngineSumPart>& parts, std::vector<double>& span_us) {
  span_us.clear();
  Bytes bytes = 0;
  std::string broken;
  std::size_t n_broken = 0;
  for (const EngineSumPart& p : parts) {
    bytes += p.length;
    if (p.broken.empty()) continue;
    broken += (broken.empty() ? "" : ", ") + p.broken;
    ++n_broken;
  }
  if (n_broken > 0)
    return engine_failed_record(
        op, cfg, lane, bytes, bs,
        fmt::format("no sum: {} of {} parts failed ({})", n_broken, parts.size(), broken));
  for (int l = 0; l < cfg.loops; ++l) {
    const auto i = static_cast<std::size_t>(l);
    Clock::time_point first = parts[0].timing->starts[i];
    Clock::time_point last = parts[0].timing->ends[i];
    for (const EngineSumPart& p : parts) {
      first = std::min(first, p.timing->starts[i]);
      last = std::max(last, p.timing->ends[i]);
    }
    span_us.push_back(elapsed_us(first, last));
  }
  Record r = step_record(op, cfg, lane, bytes, bs);
  r.set_samples(span_us);
  if (cfg.async) r.set(engine_field::batch, static_cast<std::int64_t>(cfg.batch));
  set_window(r, cfg, bs);
  if (cfg.check) r.verified = true;
  if (cfg.check_every) {
    CheckTally all;  // a loop wrong in any part counts once
    for (const EngineSumPart& p : parts) all.merge(p.timing->checks);
    set_check_fields(r, all);
  }
  return r;
}

std::string set_nic_fields(Record& r, const std::vector<NicDelta>& deltas, const std::string& asked,
                           Bytes expected, double loops_us) {
  const auto d = asked.empty() ? busiest_nic(deltas, expected) : nic_delta_of(deltas, asked);
  if (!d) return "";
  r.set(engine_field::nic, d->nic);
  r.set(engine_field::nic_tx_bytes, static_cast<std::int64_t>(d->tx_bytes));
  r.set(engine_field::nic_rx_bytes, static_cast<std::int64_t>(d->rx_bytes));
  if (loops_us > 0) r.set(engine_field::wire_gbps, gbps(nic_moved(*d), loops_us));
  r.set(engine_field::nic_errors, nic_errors_text(*d));
  std::string warn = asked.empty() ? "" : other_nic_warning(deltas, asked, expected);
  if (!warn.empty()) r.set(engine_field::nic_warning, warn);
  return warn;
}

double jain_index(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (const double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares <= 0) return 0;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

std::vector<Record> fanin_records(std::vector<Record> clients,
                                  const std::vector<std::vector<double>>& loops_us) {
  if (clients.empty()) return clients;
  Bytes bytes = 0;
  std::vector<double> gbps;
  std::vector<std::string> broken;
  std::size_t loops = SIZE_MAX;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    Record& c = clients[i];
    c.set(engine_field::client, static_cast<std::int64_t>(i));
    bytes += c.bytes;
    if (c.status != Status::ok || i >= loops_us.size() || loops_us[i].empty()) {
      broken.push_back(fmt::format("client {}: {}", i, c.reason.empty() ? "no figure" : c.reason));
      continue;
    }
    gbps.push_back(c.gbps_median);
    loops = std::min(loops, loops_us[i].size());
  }
  Record total;
  const Record& f = clients.front();
  total.kase = f.kase;
  total.method = f.method;
  total.bytes = bytes;
  for (const auto& key : {engine_field::mode, engine_field::lane})
    if (const auto v = f.get(key)) total.set(key, *v);
  if (const auto b = f.get(engine_field::block)) {
    total.set(engine_field::block, *b);
    if (*b > 0) total.set(engine_field::requests, static_cast<std::int64_t>(bytes) / *b);
  }
  if (const auto b = f.get(engine_field::batch)) total.set(engine_field::batch, *b);
  total.set(engine_field::client, std::int64_t{-1});
  if (!broken.empty()) {
    total.status = Status::failed;
    std::string why;
    for (const auto& b : broken) why += (why.empty() ? "" : "; ") + b;
    total.reason =
        fmt::format("no total: {} of {} clients failed ({})", broken.size(), clients.size(), why);
  } else {
    // Each loop started together on every client: the server's loop ends
    // with its slowest client.
    std::vector<double> slowest(loops, 0.0);
    for (const auto& l : loops_us)
      for (std::size_t k = 0; k < loops; ++k) slowest[k] = std::max(slowest[k], l[k]);
    total.set_samples(slowest);
    double sum = 0;
    for (const double g : gbps) sum += g;
    for (Record& c : clients)
      if (c.status == Status::ok && sum > 0) c.set(engine_field::share, c.gbps_median / sum);
    total.set(engine_field::fairness, jain_index(gbps));
    bool verified = true, checked = true;
    for (const Record& c : clients) {
      checked = checked && c.verified.has_value();
      verified = verified && c.verified.value_or(true);
    }
    if (checked) total.verified = verified;
  }
  clients.push_back(std::move(total));
  return clients;
}

}  // namespace xb
