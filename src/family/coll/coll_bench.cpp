#include "family/coll/coll_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/timer.hpp"
#include "family/run.hpp"

namespace xb {
namespace {

// The buffers of one (collective, dtype), sized for the largest message.
struct CollBuffers {
  std::unique_ptr<Buffer> send, recv, inplace;
  std::vector<std::byte> host;  // staging for fill and check
};

CollBuffers allocate(Backend& b, Communicator& comm, const CollConfig& cfg, CollOp op, DType t) {
  std::size_t send = 0, recv = 0;
  for (Bytes n : cfg.sizes) {
    const CollCounts k = coll_counts(op, n, t, comm.size());
    send = std::max(send, k.send);
    recv = std::max(recv, k.recv);
  }
  const std::size_t es = dtype_size(t);
  CollBuffers bufs;
  bufs.send = b.allocate(comm.buffer_kind(), comm.device(), std::max<Bytes>(send * es, 1));
  bufs.recv = b.allocate(comm.buffer_kind(), comm.device(), std::max<Bytes>(recv * es, 1));
  bufs.inplace =
      b.allocate(comm.buffer_kind(), comm.device(), std::max<Bytes>(std::max(send, recv) * es, 1));
  bufs.host.resize(std::max(send, recv) * es + 1);
  comm.reserve(std::max(send, recv) * es);
  return bufs;
}

// One collective call, placed out of place or in place.
struct Call {
  Communicator& comm;
  CollCase c;
  CollCounts k;
  void* send;
  void* recv;

  void operator()() const {
    switch (c.op) {
      case CollOp::allreduce:
        return comm.allreduce(send, recv, k.count, c.dtype, c.redop);
      case CollOp::allgather:
        return comm.allgather(send, recv, k.count, c.dtype);
      case CollOp::reducescatter:
        return comm.reducescatter(send, recv, k.count, c.dtype, c.redop);
      case CollOp::broadcast:
        return comm.broadcast(send, recv, k.count, c.dtype, c.root);
      case CollOp::reduce:
        return comm.reduce(send, recv, k.count, c.dtype, c.redop, c.root);
      case CollOp::alltoall:
        return comm.alltoall(send, recv, k.count, c.dtype);
      case CollOp::sendrecv:
        return comm.sendrecv(send, recv, k.count, c.dtype);
    }
  }
};

// Places the inputs, returns the call and where its result will be.
Call place(Backend& b, Communicator& comm, CollBuffers& bufs, const CollCase& c,
           const CollCounts& k, bool inplace, Bytes* result_offset) {
  const std::size_t es = dtype_size(c.dtype);
  fill_inputs(c, comm.rank(), bufs.host.data(), k.send);
  Buffer& in = inplace ? *bufs.inplace : *bufs.send;
  // In-place allgather: this rank's part already sits at its slot of the result.
  const Bytes in_off = inplace && c.op == CollOp::allgather ? comm.rank() * k.send * es : 0;
  b.write(in, in_off, std::span<const std::byte>(bufs.host.data(), k.send * es));
  auto* base_in = static_cast<std::byte*>(in.data());
  if (!inplace) {
    *result_offset = 0;
    return {comm, c, k, base_in, bufs.recv->data()};
  }
  *result_offset =
      c.op == CollOp::reducescatter ? comm.inplace_result_offset(c.op, k.recv) * es : 0;
  return {comm, c, k, base_in + in_off,
          c.op == CollOp::allgather ? static_cast<void*>(base_in) : base_in};
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

// Each rank's statistics over its own iterations, then each statistic
// aggregated over the ranks (max by default). Pairing iteration i of one rank
// with iteration i of another would charge back-to-back collectives for the
// skew between ranks; nccl-tests likewise aggregates per-rank averages.
Stats time_calls(Runtime& rt, Communicator& comm, const Call& call, const CollConfig& cfg) {
  auto marks = comm.on_stream() ? comm.stream_marks(cfg.iters + 1) : nullptr;  // outside timing
  rt.barrier(Runtime::Wait::spin);
  for (int i = 0; i < cfg.warmup; ++i) call();
  comm.synchronize();
  rt.barrier(Runtime::Wait::spin);  // the timed calls start together
  std::vector<double> us;
  if (marks) {
    us = time_on_stream(comm, *marks, call, cfg.iters, cfg.graph);
  } else {
    us.reserve(static_cast<std::size_t>(cfg.iters));
    for (int i = 0; i < cfg.iters; ++i) {
      const auto t0 = Clock::now();
      call();
      comm.synchronize();
      us.push_back(elapsed_us(t0, Clock::now()));
    }
  }
  const Stats mine = compute_stats(us);
  std::vector<double> v{mine.min, mine.median, mine.mean, mine.max, mine.p99, mine.cv};
  rt.reduce(v, cfg.agg == TimeAgg::min   ? Runtime::Reduce::min
               : cfg.agg == TimeAgg::max ? Runtime::Reduce::max
                                         : Runtime::Reduce::sum);
  if (cfg.agg == TimeAgg::avg)
    for (auto& x : v) x /= rt.size();
  return {v[0], v[1], v[2], v[3], v[4], v[5]};
}

// A fresh run outside timing, into a poisoned output (out of place), and
// replayed from a graph when the timed calls were (--graph: what a graph
// computes is checked, not only the eager call); returns #wrong summed over
// the ranks.
std::int64_t check(Runtime& rt, Backend& b, Communicator& comm, CollBuffers& bufs,
                   const CollCase& c, const CollCounts& k, bool inplace, const CollConfig& cfg) {
  Bytes off = 0;
  const Call call = place(b, comm, bufs, c, k, inplace, &off);
  const std::size_t es = dtype_size(c.dtype);
  if (!inplace && k.recv > 0) {  // 0xFF: NaN in every float type, -1 in the integers
    std::fill_n(bufs.host.begin(), k.recv * es, std::byte{0xFF});
    b.write(*bufs.recv, off, std::span<const std::byte>(bufs.host.data(), k.recv * es));
  }
  enqueue_captured(comm, cfg.graph && comm.on_stream(), call);
  comm.synchronize();
  std::size_t wrong = 0;
  if (receives(c, comm.rank())) {
    Buffer& out = inplace ? *bufs.inplace : *bufs.recv;
    b.read(out, off, std::span(bufs.host.data(), k.recv * es));
    if (cfg.before_check) cfg.before_check(c, bufs.host.data(), k.recv);
    wrong = count_wrong(c, comm.rank(), bufs.host.data(), k);
  }
  return static_cast<std::int64_t>(rt.sum(static_cast<double>(wrong)));
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
  if (cfg.check) r.verified = wrong == 0;
  if (wrong > 0) {
    r.status = Status::failed;
    r.reason =
        fmt::format("#wrong = {} (elements that differ from the exact result, all ranks)", wrong);
  }
  return r;
}

// A combination the library does not take: the same fields, no figures.
Record make_waived(const CollCase& c, const CollCounts& k, Bytes bytes, bool inplace,
                   const CollConfig& cfg, const Communicator& comm, const std::string& why) {
  Record r = make_record(c, k, bytes, inplace, Stats{}, 0, cfg, comm);
  r.status = Status::waived;
  r.reason = why;
  r.verified.reset();
  r.iters = 0;
  r.gbps_median = r.gbps_max = 0;
  r.set(coll_field::busbw, 0.0);
  r.set(coll_field::wrong, std::int64_t{-1});  // not checked
  return r;
}

}  // namespace

std::vector<double> time_on_stream(Communicator& comm, StreamMarks& marks,
                                   const std::function<void()>& call, int iters, bool graph) {
  enqueue_captured(comm, graph, [&] {
    marks.mark(0);
    for (int i = 0; i < iters; ++i) {
      call();
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

void register_coll(Registry& r) {
  for (CollOp op : parse_collectives("all"))
    r.add({fmt::format("coll.{}", to_string(op)),
           "coll",
           fmt::format("{} over ranks: MPI on host, NCCL on cuda, HCCL on ascend", to_string(op)),
           {}});
}

const char* to_string(TimeAgg a) {
  return a == TimeAgg::max ? "max" : a == TimeAgg::avg ? "avg" : "min";
}

void validate_coll(int nranks, const CollConfig& cfg, Communicator* comm) {
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
  for (CollOp op : cfg.ops)
    for (DType t : cfg.dtypes)
      for (Bytes n : cfg.sizes) coll_counts(op, n, t, nranks);  // throws UsageError
}

CollResult run_coll(Runtime& rt, Communicator& comm, Backend& backend, const CollConfig& cfg) {
  CollResult res;
  for (CollOp op : cfg.ops) {
    double busbw_sum = 0;
    int busbw_n = 0;
    for (DType t : cfg.dtypes) {
      CollBuffers bufs = allocate(backend, comm, cfg, op, t);
      const std::vector<RedOp> redops =
          is_reduction(op) ? cfg.redops : std::vector<RedOp>{RedOp::sum};
      for (RedOp ro : redops) {
        const CollCase c{op, t, ro, comm.size(), cfg.root};
        for (Bytes n : cfg.sizes) {
          stop_point(&rt);  // every rank, in step
          const CollCounts k = coll_counts(op, n, t, comm.size());
          for (bool inplace : {false, true}) {
            if ((inplace && !cfg.inplace) || (!inplace && !cfg.outofplace)) continue;
            if (const Support s = comm.supports(op, t, ro); !s.ok) {
              res.records.push_back(make_waived(c, k, n, inplace, cfg, comm, s.reason));
              record_done(res.records.back());
              continue;
            }
            Bytes off = 0;
            const Call call = place(backend, comm, bufs, c, k, inplace, &off);
            const Stats times = time_calls(rt, comm, call, cfg);
            const std::int64_t wrong =
                cfg.check ? check(rt, backend, comm, bufs, c, k, inplace, cfg) : 0;
            res.records.push_back(make_record(c, k, n, inplace, times, wrong, cfg, comm));
            record_done(res.records.back());
            busbw_sum += res.records.back().get_or(coll_field::busbw, 0.0);
            ++busbw_n;
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
