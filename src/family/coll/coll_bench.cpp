#include "family/coll/coll_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <thread>

#include "backend/common/device_wait.hpp"
#include "core/corruption.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/sysinfo.hpp"
#include "core/timer.hpp"
#include "family/cycles.hpp"
#include "family/nic_fields.hpp"

namespace xb {
namespace {

// The buffers of one (collective, dtype), sized for the largest message.
struct CollBuffers {
  std::unique_ptr<Buffer> send, recv, inplace;
  std::vector<std::byte> host;  // staging for fill and check
};

// The largest send and receive counts (elements) of a case over the sizes.
std::pair<std::size_t, std::size_t> largest_counts(const CollConfig& cfg, const CollCase& c) {
  std::size_t send = 0, recv = 0;
  for (Bytes n : cfg.sizes) {
    if (coll_fit(c, n) == 0) continue;
    const CollCounts k = coll_counts(c, coll_fit(c, n));
    send = std::max(send, k.send);
    recv = std::max(recv, k.recv);
  }
  return {send, recv};
}

CollBuffers allocate(Backend& b, Communicator& comm, const CollConfig& cfg, const CollCase& c) {
  const auto [send, recv] = largest_counts(cfg, c);
  const std::size_t es = dtype_size(c.dtype);
  CollBuffers bufs;
  bufs.send = b.allocate(comm.buffer_kind(), comm.device(), std::max<Bytes>(send * es, 1));
  bufs.recv = b.allocate(comm.buffer_kind(), comm.device(), std::max<Bytes>(recv * es, 1));
  bufs.inplace =
      b.allocate(comm.buffer_kind(), comm.device(), std::max<Bytes>(std::max(send, recv) * es, 1));
  bufs.host.resize(std::max(send, recv) * es + 1);
  comm.reserve(std::max(send, recv) * es);
  // Zeros everywhere the rotation reaches (place() writes the inputs at
  // offset 0 only): host pages are touched here, not inside the timing,
  // and every iteration reduces numbers.
  std::fill(bufs.host.begin(), bufs.host.end(), std::byte{0});
  for (Buffer* buf : {bufs.send.get(), bufs.recv.get(), bufs.inplace.get()})
    b.write(*buf, 0, std::span<const std::byte>(bufs.host.data(), buf->size()));
  return bufs;
}

// One collective call, placed out of place or in place: its row's call;
// iteration i runs rotated (Rotation: nccl-tests' shift), the check at 0.
struct Call {
  Communicator& comm;
  const CollCase& c;
  const CollCounts& k;
  const void* send;
  void* recv;
  Rotation send_rot{}, recv_rot{};

  void operator()(int iter = 0) const {
    spec(c.op).call(comm, CollCall{c, k, static_cast<const std::byte*>(send) + send_rot.at(iter),
                                   static_cast<std::byte*>(recv) + recv_rot.at(iter)});
  }
};

// Places the inputs, returns the call and where its result will be.
Call place(Backend& b, Communicator& comm, CollBuffers& bufs, const CollCase& c,
           const CollCounts& k, bool inplace, Bytes* result_offset) {
  const std::size_t es = dtype_size(c.dtype);
  const auto rank = static_cast<std::size_t>(comm.rank());
  fill_inputs(c, comm.rank(), bufs.host.data(), k.send);
  const InPlace how = spec(c.op).inplace;
  Buffer& in = inplace ? *bufs.inplace : *bufs.send;
  // In-place allgather, gather: this rank's part already sits at its slot of the result.
  const Bytes in_off = inplace && how == InPlace::input_slot ? rank * k.send * es : 0;
  b.write(in, in_off, std::span<const std::byte>(bufs.host.data(), k.send * es));
  auto* base_in = static_cast<std::byte*>(in.data());
  // Stream libraries rotate, as nccl-tests does; MPI keeps one buffer, as
  // its peers (OSU, IMB, bench/mpi_allreduce_loop.c) do.
  const bool rotates = comm.on_stream();
  if (!inplace) {
    *result_offset = 0;
    return {comm,
            c,
            k,
            base_in,
            bufs.recv->data(),
            rotates ? rotation(k.send * es, bufs.send->size()) : Rotation{},
            rotates ? rotation(k.recv * es, bufs.recv->size()) : Rotation{}};
  }
  *result_offset = how == InPlace::library       ? comm.inplace_result_offset(c.op, k.recv) * es
                   : how == InPlace::result_slot ? rank * k.recv * es
                                                 : 0;
  // In place, every slot lies within the first max(send, recv) elements.
  const Rotation rot = rotates ? rotation(std::max(k.send, k.recv) * es, in.size()) : Rotation{};
  if (how == InPlace::result_slot) return {comm, c, k, base_in, base_in + *result_offset, rot, rot};
  return {comm, c, k, base_in + in_off, base_in, rot, rot};
}

// Queues `calls` on the library's stream; with `graph`, captured into a
// graph first and replayed, the capture ended even when a call throws.
// UsageError where the library cannot capture.
void enqueue_captured(Communicator& comm, bool graph, const std::function<void()>& calls) {
  if (graph && !comm.begin_capture())
    throw UsageError(fmt::format("--graph: {} cannot capture collectives in a graph", comm.name()));
  try {
    calls();
  } catch (...) {
    if (graph) comm.abort_capture();  // never leave the stream capturing
    throw;
  }
  if (graph) comm.end_capture_and_replay();
}

// Each rank's iterations, and the time each spent inside the call.
struct Timed {
  std::vector<double> iter, in_call;
};

// Every rank's samples on every rank (records are identical everywhere).
RankTimes gather_times(Runtime& rt, const Timed& mine) {
  std::string wire(sizeof(double) * (mine.iter.size() + mine.in_call.size()), '\0');
  std::memcpy(wire.data(), mine.iter.data(), sizeof(double) * mine.iter.size());
  std::memcpy(wire.data() + sizeof(double) * mine.iter.size(), mine.in_call.data(),
              sizeof(double) * mine.in_call.size());
  RankTimes all;
  for (const std::string& w : rt.allgather(wire)) {
    const std::size_t n = w.size() / sizeof(double) / 2;
    std::vector<double> v(2 * n);
    std::memcpy(v.data(), w.data(), sizeof(double) * 2 * n);
    all.iter.emplace_back(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
    all.in_call.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
  }
  return all;
}

// Unwinding out of a (collective, dtype) frees its buffers, and out of
// time_calls its events: the work the communicator queued on them finishes
// first (the Ascend review's N11: a runtime frees device memory under queued
// DMA without waiting, and AscendCL destroys no event whose record waits).
class QuiesceOnUnwind {
 public:
  explicit QuiesceOnUnwind(Communicator& comm) : comm_(comm) {}
  QuiesceOnUnwind(const QuiesceOnUnwind&) = delete;
  QuiesceOnUnwind& operator=(const QuiesceOnUnwind&) = delete;
  ~QuiesceOnUnwind() {
    if (std::uncaught_exceptions() <= unwinding_) return;
    try {
      comm_.synchronize();
    } catch (...) {  // the error on its way out is the one to report
    }
  }

 private:
  Communicator& comm_;
  int unwinding_ = std::uncaught_exceptions();
};

// Each rank's own iterations (pairing iteration i of one rank with
// iteration i of another would charge back-to-back collectives for the skew
// between ranks; nccl-tests likewise aggregates per-rank averages), gathered.
RankTimes time_calls(Runtime& rt, Communicator& comm, const Call& call, const CollConfig& cfg) {
  auto marks = comm.on_stream() ? comm.stream_marks(cfg.iters + 1) : nullptr;  // outside timing
  const QuiesceOnUnwind quiesce(comm);
  const bool slow = comm.rank() == cfg.slow_rank && cfg.slow_us > 0;
  const auto lag = std::chrono::duration<double, std::micro>(cfg.slow_us);
  rt.barrier(Runtime::Wait::spin);
  for (int i = 0; i < cfg.warmup; ++i) call(i);
  comm.synchronize();
  rt.barrier(Runtime::Wait::spin);  // the timed calls start together
  NicWindow nics;
  const bool count = !rt.single_host();
  if (count) nics.open();
  Timed mine;
  if (marks) {
    const std::function<void(int)> slowed = [&](int i) {
      if (slow) std::this_thread::sleep_for(lag);
      call(i);
    };
    mine.iter = time_on_stream(comm, *marks, slowed, cfg.iters, cfg.graph);
    // The device's clock times the whole call: no arrival to split off, so
    // find_straggler names no rank (review N6).
    mine.in_call = mine.iter;
  } else {
    mine.iter.reserve(static_cast<std::size_t>(cfg.iters));
    mine.in_call.reserve(static_cast<std::size_t>(cfg.iters));
    // An iteration starts where the last one ended: a rank that is late to
    // its next call (descheduled, slowed) has that lateness in [t0, t1).
    auto t0 = Clock::now();
    for (int i = 0; i < cfg.iters; ++i) {
      if (slow) std::this_thread::sleep_for(lag);
      const auto t1 = Clock::now();
      call(i);
      comm.synchronize();
      const auto t2 = Clock::now();
      mine.iter.push_back(elapsed_us(t0, t2));
      mine.in_call.push_back(elapsed_us(t1, t2));
      t0 = t2;
    }
  }
  RankTimes all = gather_times(rt, mine);
  if (count) {
    all.nics = rt.allgather(nic_wire(nics.close(1)));
  }
  return all;
}

// A fresh run outside timing, into a poisoned output (out of place), and
// replayed from a graph when the timed calls were (--graph: what a graph
// computes is checked, not only the eager call); returns #wrong summed over
// the ranks.
// The inputs placed and the output poisoned (out of place) for a checked
// call; *off: where its result will be.
Call arm_check(Backend& b, Communicator& comm, CollBuffers& bufs, const CollCase& c,
               const CollCounts& k, bool inplace, Bytes* off) {
  const Call call = place(b, comm, bufs, c, k, inplace, off);
  const std::size_t es = dtype_size(c.dtype);
  const std::size_t n = k.recv_of(comm.rank());
  if (!inplace && n > 0) {  // 0xFF: NaN in every float type, -1 in the integers
    std::fill_n(bufs.host.begin(), n * es, std::byte{0xFF});
    b.write(*bufs.recv, *off, std::span<const std::byte>(bufs.host.data(), n * es));
  }
  return call;
}

// This rank's wrong elements after a checked call (none where it receives nothing).
WrongElements read_wrong(Backend& b, Communicator& comm, CollBuffers& bufs, const CollCase& c,
                         const CollCounts& k, bool inplace, Bytes off, const CollConfig& cfg) {
  if (!receives(c, comm.rank())) return {};
  const std::size_t n = k.recv_of(comm.rank());
  Buffer& out = inplace ? *bufs.inplace : *bufs.recv;
  b.read(out, off, std::span(bufs.host.data(), n * dtype_size(c.dtype)));
  if (cfg.before_check) cfg.before_check(c, bufs.host.data(), n);
  return find_wrong(c, comm.rank(), bufs.host.data(), k);
}

std::int64_t check(Runtime& rt, Backend& b, Communicator& comm, CollBuffers& bufs,
                   const CollCase& c, const CollCounts& k, bool inplace, const CollConfig& cfg) {
  Bytes off = 0;
  const Call call = arm_check(b, comm, bufs, c, k, inplace, &off);
  enqueue_captured(comm, cfg.graph && comm.on_stream(), call);
  comm.synchronize();
  const std::size_t wrong = read_wrong(b, comm, bufs, c, k, inplace, off, cfg).count;
  return static_cast<std::int64_t>(rt.sum(static_cast<double>(wrong)));
}

// A wrong element as a first bad: its bits against the expected value's.
FirstBad element_bad(const CollCase& c, int iter, const std::string& where, const WrongElements& w,
                     const std::byte* got) {
  const std::size_t es = dtype_size(c.dtype);
  std::array<std::byte, 8> want{};
  store(c.dtype, want.data(), 0, w.expected);
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < es; ++i)
    x |= std::uint64_t{std::to_integer<std::uint8_t>(want[i] ^ got[w.first * es + i])} << (8 * i);
  return FirstBad{iter,
                  where,
                  w.first,
                  "element",
                  fmt::format("{:g}", w.expected),
                  fmt::format("{:g}", w.got),
                  fmt::format("{:#0{}x}", x, 2 + 2 * es),
                  w.count,
                  ""};
}

// --check every: each timed call alone from a barrier (host clock), its
// inputs placed and its output poisoned before it and its result checked
// after it, outside its time. `tally`: every rank's wrong iterations;
// `per_rank`: each rank's own count of them.
RankTimes time_checked(Runtime& rt, Backend& b, Communicator& comm, CollBuffers& bufs,
                       const CollCase& c, const CollCounts& k, bool inplace, const CollConfig& cfg,
                       const std::vector<std::string>& hosts, CheckTally& tally,
                       std::vector<std::int64_t>& per_rank) {
  const QuiesceOnUnwind quiesce(comm);
  const bool slow = comm.rank() == cfg.slow_rank && cfg.slow_us > 0;
  const auto lag = std::chrono::duration<double, std::micro>(cfg.slow_us);
  Bytes off = 0;
  {
    const Call warm = place(b, comm, bufs, c, k, inplace, &off);
    rt.barrier(Runtime::Wait::spin);
    for (int i = 0; i < cfg.warmup; ++i) warm(i);
    comm.synchronize();
  }
  const std::string where =
      fmt::format("rank {} ({})", comm.rank(), hosts[static_cast<std::size_t>(comm.rank())]);
  Timed mine;
  CheckTally own;
  for (int i = 0; i < cfg.iters; ++i) {
    const Call call = arm_check(b, comm, bufs, c, k, inplace, &off);
    rt.barrier(Runtime::Wait::spin);
    if (slow) std::this_thread::sleep_for(lag);
    const auto t1 = Clock::now();
    call();
    comm.synchronize();
    const double us = elapsed_us(t1, Clock::now());
    mine.iter.push_back(us);
    mine.in_call.push_back(us);
    const WrongElements w = read_wrong(b, comm, bufs, c, k, inplace, off, cfg);
    own.add(i,
            w.count ? std::optional(element_bad(c, i, where, w, bufs.host.data())) : std::nullopt);
  }
  RankTimes all = gather_times(rt, mine);
  tally = allgather_tally(rt, own, &per_rank);
  return all;
}

// "rank 1 (vm2): 23": the ranks that saw wrong data, with their wrong iterations.
std::string wrong_ranks_text(const std::vector<std::int64_t>& per_rank,
                             const std::vector<std::string>& hosts) {
  std::string out;
  for (std::size_t r = 0; r < per_rank.size(); ++r)
    if (per_rank[r] > 0)
      out += fmt::format("{}rank {} ({}): {}", out.empty() ? "" : "; ", r, hosts[r], per_rank[r]);
  return out;
}

// The skew's fields on alltoallv records.
void set_skew(Record& r, const CollCase& c, const CollCounts& k) {
  if (c.op != CollOp::alltoallv) return;
  r.set(coll_field::skew, to_string(c.skew));
  r.set(coll_field::pair_counts, std::vector<std::int64_t>(k.pairs.begin(), k.pairs.end()));
}

// Each rank's NIC over the timed calls (RankTimes::nics), where counted.
void set_rank_nics(Record& r, const RankTimes& t, const std::vector<std::string>& hosts) {
  if (t.nics.empty()) return;
  std::vector<std::string> names;
  std::vector<std::int64_t> tx, rx;
  std::vector<double> wire;
  std::string errors;
  bool any = false;
  for (std::size_t k = 0; k < t.nics.size(); ++k) {
    const NicWire w = parse_nic_wire(t.nics[k]);
    const std::string& nic = w.nic;
    const std::string& errs = w.errors;
    const std::uint64_t sent = w.tx_bytes, got = w.rx_bytes;
    any = any || !nic.empty();
    names.push_back(nic);
    tx.push_back(static_cast<std::int64_t>(sent));
    rx.push_back(static_cast<std::int64_t>(got));
    double us = 0;
    if (k < t.iter.size())
      for (double u : t.iter[k]) us += u;
    if (!nic.empty() && us > 0) wire.push_back(static_cast<double>(std::max(sent, got)) / us / 1e3);
    if (!errs.empty())
      errors += fmt::format("{}rank {} ({}) {}: {}", errors.empty() ? "" : "; ", k,
                            k < hosts.size() ? hosts[k] : std::string("?"), nic, errs);
  }
  if (!any) return;
  r.set(coll_field::rank_nics, fmt::format("{}", fmt::join(names, ",")));
  r.set(coll_field::rank_nic_tx_bytes, std::move(tx));
  r.set(coll_field::rank_nic_rx_bytes, std::move(rx));
  if (!wire.empty()) r.set(coll_field::wire_gbps, compute_stats(wire).median);
  if (!errors.empty()) r.set(coll_field::nic_errors, errors);
}

// The slowest rank and, with --samples, every rank's iterations.
void set_ranks(Record& r, const RankTimes& t, const std::vector<std::string>& hosts,
               const CollConfig& cfg) {
  const Straggler s = find_straggler(t);
  if (s.rank >= 0) {
    r.set(coll_field::slowest_rank, std::int64_t{s.rank});
    r.set(coll_field::slowest_host, hosts.at(static_cast<std::size_t>(s.rank)));
    r.set(coll_field::rank_spread, s.spread);
    r.set(coll_field::slowest_share, s.share);
  }
  set_rank_nics(r, t, hosts);
  if (!cfg.samples) return;
  std::vector<double> iter, in_call;
  for (const auto& v : t.iter) iter.insert(iter.end(), v.begin(), v.end());
  for (const auto& v : t.in_call) in_call.insert(in_call.end(), v.begin(), v.end());
  r.set(coll_field::rank_median_us, s.own_us);
  r.set(coll_field::samples_us, std::move(iter));
  r.set(coll_field::in_call_us, std::move(in_call));
}

Record make_record(const CollCase& c, const CollCounts& k, Bytes bytes, bool inplace,
                   const Stats& t, std::int64_t wrong, const CollConfig& cfg,
                   const Communicator& comm) {
  Record r;
  r.kase = to_string(c.op);
  r.method = comm.name();
  r.src = has_root(c.op) ? c.root : -1;
  r.bytes = bytes;
  r.set_stats(t, cfg.iters);
  const double algbw = r.gbps_median;
  const double busbw = algbw * bus_factor(c.op, c.nranks);
  r.set(coll_field::op, to_string(c.op));
  r.set(coll_field::dtype, to_string(c.dtype));
  r.set(coll_field::redop, is_reduction(c.op) ? to_string(c.redop) : "none");
  r.set(coll_field::count, static_cast<std::int64_t>(k.count));
  r.set(coll_field::inplace, inplace);
  r.set(coll_field::algbw, algbw);
  r.set(coll_field::busbw, busbw);
  r.set(coll_field::wrong, cfg.check ? wrong : std::int64_t{-1});
  set_skew(r, c, k);
  if (cfg.check) r.verified = wrong == 0;
  if (wrong > 0) {
    r.status = Status::failed;
    r.reason =
        fmt::format("#wrong = {} (elements that differ from the exact result, all ranks)", wrong);
  }
  return r;
}

// A combination the library does not take (waived), or a call that never
// finished (failed): the same fields, no figures.
Record make_unrun(const CollCase& c, const CollCounts& k, Bytes bytes, bool inplace,
                  const CollConfig& cfg, const Communicator& comm, const std::string& why,
                  Status status = Status::waived) {
  Record r = make_record(c, k, bytes, inplace, Stats{}, 0, cfg, comm);
  r.status = status;
  r.reason = why;
  r.verified.reset();
  r.iters = 0;
  r.gbps_median = r.gbps_max = 0;
  r.set(coll_field::busbw, 0.0);
  r.set(coll_field::wrong, std::int64_t{-1});  // not checked
  return r;
}

}  // namespace

Rotation rotation(Bytes used, Bytes capacity) {
  const Bytes step = (used + 255) / 256 * 256;
  if (used == 0 || step > capacity / 2) return {};
  return {step, static_cast<std::size_t>(capacity / step)};
}

std::vector<double> time_on_stream(Communicator& comm, StreamMarks& marks,
                                   const std::function<void(int)>& call, int iters, bool graph) {
  enqueue_captured(comm, graph, [&] {
    marks.mark(0);
    for (int i = 0; i < iters; ++i) {
      call(i);
      marks.mark(i + 1);
    }
  });
  comm.synchronize();
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) us.push_back(marks.elapsed_us(i, i + 1));
  return us;
}

std::string timed_by(const Communicator& comm) {
  return comm.on_stream() ? "device events between calls queued back to back on the stream"
                          : "host clock around each call and its completion";
}

bool names_straggler(const Record& r) {
  return r.status == Status::ok && r.get(coll_field::slowest_rank) &&
         is_straggler(r.get_or(coll_field::rank_spread, 0.0),
                      r.get_or(coll_field::slowest_share, 0.0), r.iters);
}

void register_coll(Registry& r) {
  for (const CollSpec& s : collectives())
    r.add({fmt::format("coll.{}", s.name),
           "coll",
           fmt::format("{}: MPI on host, NCCL on cuda, HCCL on ascend", s.help),
           {}});
}

void validate_coll(int nranks, const CollConfig& cfg, Communicator* comm) {
  if (cfg.graph && cfg.check_every)
    throw UsageError(
        "--graph replays the timed calls together; --check every checks each call alone: use one");
  if (cfg.graph && comm && !comm->can_capture())
    throw UsageError(
        fmt::format("--graph captures collectives on a device stream in a CUDA graph: {} {}",
                    comm->name(), comm->on_stream() ? "has no graphs" : "runs on the host"));
  if (cfg.root < 0 || cfg.root >= nranks)
    throw UsageError(fmt::format("-r {} out of range: {} rank{} (0..{})", cfg.root, nranks,
                                 nranks == 1 ? "" : "s", nranks - 1));
  if (!cfg.inplace && !cfg.outofplace)
    throw UsageError("nothing to run: both in-place and out-of-place are off");
  if (cfg.iters < 1) throw UsageError("-n must be at least 1");
  check_skew(cfg.skew, nranks);
}

std::string coll_memory_shortfall(Backend& backend, Communicator& comm, const CollConfig& cfg) {
  // One (collective, dtype) holds its buffers at a time: the largest decides.
  // host memory holds the buffers too (host backend, pinned or pageable buffers)
  const bool host = comm.buffer_kind() != MemKind::device || backend.name() == "host";
  if (cfg.sizes.empty()) return "";
  for (CollOp op : cfg.ops)
    for (DType t : cfg.dtypes) {
      const CollCase c{op, t, RedOp::sum, comm.size(), cfg.root, cfg.skew};
      const auto [send, recv] = largest_counts(cfg, c);
      const long double es = static_cast<long double>(dtype_size(t));
      const long double most = static_cast<long double>(std::max(send, recv)) * es;
      // send, receive and in-place buffers, and the host's staging copy
      const long double bytes = static_cast<long double>(send + recv) * es + most * (host ? 2 : 1);
      const Bytes need = bytes >= 1.8e19L ? ~Bytes{0} : static_cast<Bytes>(bytes);
      const Bytes avail = need ? backend.free_memory(comm.buffer_kind(), comm.device()) : 0;
      const Bytes biggest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
      std::string s = memory_shortfall(
          fmt::format("{} {} at {}", to_string(op), to_string(t), format_size(biggest)), need,
          fmt::format(" on rank {}", comm.rank()), avail);
      if (!s.empty()) return s;
    }
  return "";
}

CollResult run_coll(Runtime& rt, Communicator& comm, Backend& backend, const CollConfig& cfg) {
  CollResult res;
  const std::vector<std::string> hosts = rt.allgather(host_name());
  auto done = [&](Record r) {
    res.records.push_back(std::move(r));
    record_done(res.records.back());
  };
  for (CollOp op : cfg.ops) {
    double busbw_sum = 0;
    int busbw_n = 0;
    for (DType t : cfg.dtypes) {
      const CollCase any{op, t, RedOp::sum, comm.size(), cfg.root, cfg.skew};
      CollBuffers bufs = allocate(backend, comm, cfg, any);
      const QuiesceOnUnwind quiesce(comm);
      const std::vector<RedOp> redops =
          is_reduction(op) ? cfg.redops : std::vector<RedOp>{RedOp::sum};
      for (RedOp ro : redops) {
        const CollCase c{op, t, ro, comm.size(), cfg.root, cfg.skew};
        for (Bytes asked : cfg.sizes) {
          stop_point(&rt);                     // every rank, in step
          const Bytes n = coll_fit(c, asked);  // the bytes really moved
          if (n == 0) {
            for (bool inplace : {false, true})
              if ((inplace && cfg.inplace) || (!inplace && cfg.outofplace))
                done(make_unrun(c, CollCounts{}, asked, inplace, cfg, comm,
                                fmt::format("{} B holds no whole {}: {} needs {} B at least "
                                            "({} ranks)",
                                            asked, spec(op).split ? "element per rank" : "element",
                                            to_string(op), coll_unit(c), c.nranks)));
            continue;
          }
          const CollCounts k = coll_counts(c, n);
          for (bool inplace : {false, true}) {
            if ((inplace && !cfg.inplace) || (!inplace && !cfg.outofplace)) continue;
            Support s = comm.supports(op, t, ro);
            if (s.ok && inplace && spec(op).inplace == InPlace::none)
              s = Support::no(fmt::format("{} has no in-place form", to_string(op)));
            if (!s.ok) {
              done(make_unrun(c, k, n, inplace, cfg, comm, s.reason));
              continue;
            }
            Record r;
            try {
              Bytes off = 0;
              CheckTally tally;
              std::vector<std::int64_t> per_rank;
              RankTimes times;
              std::int64_t wrong = 0;
              if (cfg.check_every) {
                times = time_checked(rt, backend, comm, bufs, c, k, inplace, cfg, hosts, tally,
                                     per_rank);
              } else {
                const Call call = place(backend, comm, bufs, c, k, inplace, &off);
                times = time_calls(rt, comm, call, cfg);
                if (cfg.check) wrong = check(rt, backend, comm, bufs, c, k, inplace, cfg);
              }
              r = make_record(c, k, n, inplace, aggregate(times.iter, cfg.agg), wrong, cfg, comm);
              set_ranks(r, times, hosts, cfg);
              if (cfg.check_every) {
                set_check_fields(r, tally);
                r.set(coll_field::wrong, tally.first()
                                             ? static_cast<std::int64_t>(tally.first()->count)
                                             : std::int64_t{0});
                if (tally.wrong_iters() > 0) {
                  r.set(coll_field::wrong_ranks, wrong_ranks_text(per_rank, hosts));
                  r.reason += "; wrong iterations by rank: " + wrong_ranks_text(per_rank, hosts);
                }
              }
            } catch (const NotSupported& e) {  // the library lacks it: every rank throws here
              done(make_unrun(c, k, n, inplace, cfg, comm, e.what()));
              continue;
            } catch (const DeviceHung& e) {
              // Past its deadline: this row failed, and the device takes no
              // more work in this process (device_wait.hpp), so the run ends
              // here with what it has.
              done(make_unrun(c, k, n, inplace, cfg, comm, e.what(), Status::failed));
              return res;
            }
            busbw_sum += r.get_or(coll_field::busbw, 0.0);
            ++busbw_n;
            done(std::move(r));
          }
        }
      }
    }
    if (busbw_n)
      res.summary.emplace_back(std::string("avg_busbw_") + to_string(op), busbw_sum / busbw_n);
  }
  return res;
}

}  // namespace xb
