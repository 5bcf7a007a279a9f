// The collectives: one row each. Adding one is a row here plus its call in
// each library that has it (a Communicator virtual with a NotSupported
// default, so the libraries without it report `waived`).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "coll/communicator.hpp"
#include "coll/verify.hpp"
#include "core/error.hpp"

namespace xb {
namespace {

std::size_t nof(const CollCase& c) { return static_cast<std::size_t>(c.nranks); }
auto rank_of(std::size_t r) { return static_cast<int>(r); }

double bus_one(int) { return 1.0; }
double bus_ring(int n) { return (n - 1.0) / n; }
double bus_allreduce(int n) { return 2.0 * (n - 1.0) / n; }

// Byte models: elements of each rank's send and receive buffers, and the count.
CollCounts whole(const CollCase&, std::size_t e) { return {e, e, e, {}}; }
CollCounts gathered(const CollCase& c, std::size_t e) { return {e / nof(c), e, e / nof(c), {}}; }
CollCounts scattered(const CollCase& c, std::size_t e) { return {e, e / nof(c), e / nof(c), {}}; }
CollCounts per_peer(const CollCase& c, std::size_t e) { return {e, e, e / nof(c), {}}; }
CollCounts uneven(const CollCase& c, std::size_t e) {
  CollCounts k{e, 0, e, pair_counts(c.skew, c.nranks, e)};
  for (int r = 0; r < c.nranks; ++r) k.recv = std::max(k.recv, k.recv_of(r));
  return k;
}

// What each receive buffer must hold, from the inputs of verify.hpp.
double reduced_all(const CollCase& c, int, std::size_t i, const CollCounts&) {
  return reduced_value(c, i);
}
double reduced_slot(const CollCase& c, int rank, std::size_t i, const CollCounts& k) {
  return reduced_value(c, static_cast<std::size_t>(rank) * k.recv + i);
}
double each_rank_in_turn(const CollCase& c, int, std::size_t i, const CollCounts& k) {
  return input_value(c, rank_of(i / k.send), i % k.send);
}
double from_root(const CollCase& c, int, std::size_t i, const CollCounts&) {
  return input_value(c, c.root, i);
}
double roots_slot(const CollCase& c, int rank, std::size_t i, const CollCounts& k) {
  return input_value(c, c.root, static_cast<std::size_t>(rank) * k.recv + i);
}
double blocks_for_me(const CollCase& c, int rank, std::size_t i, const CollCounts& k) {
  // Block p came from rank p: its block for us.
  return input_value(c, rank_of(i / k.count),
                     static_cast<std::size_t>(rank) * k.count + i % k.count);
}
double uneven_blocks_for_me(const CollCase& c, int rank, std::size_t i, const CollCounts& k) {
  const std::size_t n = nof(c);
  std::size_t at = 0;
  for (std::size_t s = 0; s < n; ++s) {
    const std::size_t len = k.pairs[s * n + static_cast<std::size_t>(rank)];
    if (i < at + len) {
      std::size_t displ = 0;  // where sender s's block for us starts in its send buffer
      for (std::size_t d = 0; d < static_cast<std::size_t>(rank); ++d) displ += k.pairs[s * n + d];
      return input_value(c, rank_of(s), displ + (i - at));
    }
    at += len;
  }
  return 0;
}
double from_prev(const CollCase& c, int rank, std::size_t i, const CollCounts&) {
  return input_value(c, rank_of((static_cast<std::size_t>(rank) + nof(c) - 1) % nof(c)), i);
}

void call_alltoallv(Communicator& m, const CollCall& x) {
  const int r = m.rank();
  const auto sc = x.k.send_counts(r), sd = x.k.send_displs(r);
  const auto rc = x.k.recv_counts(r), rd = x.k.recv_displs(r);
  m.alltoallv(x.send, sc, sd, x.recv, rc, rd, x.c.dtype);
}

// clang-format off
constexpr CollSpec kTable[] = {
  {CollOp::allreduce, "allreduce", "every rank gets the reduction of all inputs",
   true, false, false, false, InPlace::same, bus_allreduce, whole, reduced_all,
   [](Communicator& m, const CollCall& x) { m.allreduce(x.send, x.recv, x.k.count, x.c.dtype, x.c.redop); }},
  {CollOp::allgather, "allgather", "every rank gets every rank's input, in rank order",
   false, false, false, true, InPlace::input_slot, bus_ring, gathered, each_rank_in_turn,
   [](Communicator& m, const CollCall& x) { m.allgather(x.send, x.recv, x.k.count, x.c.dtype); }},
  {CollOp::reducescatter, "reducescatter", "rank r gets part r of the reduction",
   true, false, false, true, InPlace::library, bus_ring, scattered, reduced_slot,
   [](Communicator& m, const CollCall& x) { m.reducescatter(x.send, x.recv, x.k.count, x.c.dtype, x.c.redop); }},
  {CollOp::broadcast, "broadcast", "every rank gets the root's input",
   false, true, false, false, InPlace::same, bus_one, whole, from_root,
   [](Communicator& m, const CollCall& x) { m.broadcast(x.send, x.recv, x.k.count, x.c.dtype, x.c.root); }},
  {CollOp::reduce, "reduce", "the root gets the reduction of all inputs",
   true, true, true, false, InPlace::same, bus_one, whole, reduced_all,
   [](Communicator& m, const CollCall& x) { m.reduce(x.send, x.recv, x.k.count, x.c.dtype, x.c.redop, x.c.root); }},
  {CollOp::alltoall, "alltoall", "rank r's block p goes to rank p, block r of its result",
   false, false, false, true, InPlace::same, bus_ring, per_peer, blocks_for_me,
   [](Communicator& m, const CollCall& x) { m.alltoall(x.send, x.recv, x.k.count, x.c.dtype); }},
  {CollOp::sendrecv, "sendrecv", "each rank sends to rank+1 and receives from rank-1",
   false, false, false, false, InPlace::same, bus_one, whole, from_prev,
   [](Communicator& m, const CollCall& x) { m.sendrecv(x.send, x.recv, x.k.count, x.c.dtype); }},
  {CollOp::gather, "gather", "the root gets every rank's input, in rank order",
   false, true, true, true, InPlace::input_slot, bus_ring, gathered, each_rank_in_turn,
   [](Communicator& m, const CollCall& x) { m.gather(x.send, x.recv, x.k.count, x.c.dtype, x.c.root); }},
  {CollOp::scatter, "scatter", "rank r gets part r of the root's input",
   false, true, false, true, InPlace::result_slot, bus_ring, scattered, roots_slot,
   [](Communicator& m, const CollCall& x) { m.scatter(x.send, x.recv, x.k.count, x.c.dtype, x.c.root); }},
  {CollOp::alltoallv, "alltoallv", "alltoall with uneven per-pair counts (--skew)",
   false, false, false, false, InPlace::none, bus_ring, uneven, uneven_blocks_for_me,
   call_alltoallv},
};
// clang-format on

}  // namespace

std::span<const CollSpec> collectives() { return kTable; }

const CollSpec& spec(CollOp op) {
  for (const CollSpec& s : kTable)
    if (s.op == op) return s;
  throw RuntimeError(fmt::format("collective {} has no row", static_cast<int>(op)));
}

const char* to_string(CollOp op) { return spec(op).name; }
bool is_reduction(CollOp op) { return spec(op).reduction; }
bool has_root(CollOp op) { return spec(op).rooted; }
double bus_factor(CollOp op, int n) { return spec(op).bus_factor(n); }

std::string collective_names() {
  std::string out;
  for (const CollSpec& s : kTable) out += std::string(s.name) + ", ";
  return out + "or all";
}

std::vector<CollOp> parse_collectives(const std::string& list) {
  std::vector<CollOp> out;
  auto add = [&](CollOp op) {
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  };
  for (std::size_t at = 0;;) {
    const std::size_t comma = list.find(',', at);
    const std::string name =
        list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (name == "all") {
      for (const CollSpec& s : kTable) add(s.op);
    } else {
      const auto* row = std::find_if(std::begin(kTable), std::end(kTable),
                                     [&](const CollSpec& s) { return name == s.name; });
      if (row == std::end(kTable))
        throw UsageError(
            name.empty() ? fmt::format("empty collective in '{}' ({})", list, collective_names())
                         : fmt::format("unknown collective '{}' ({})", name, collective_names()));
      add(row->op);
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

int CollCounts::ranks() const {
  int n = 0;
  while (static_cast<std::size_t>(n) * static_cast<std::size_t>(n) < pairs.size()) ++n;
  return n;
}

std::size_t CollCounts::recv_of(int rank) const {
  if (pairs.empty()) return recv;
  const auto n = static_cast<std::size_t>(ranks());
  std::size_t sum = 0;
  for (std::size_t s = 0; s < n; ++s) sum += pairs[s * n + static_cast<std::size_t>(rank)];
  return sum;
}

std::vector<std::size_t> CollCounts::send_counts(int rank) const {
  const auto n = static_cast<std::size_t>(ranks());
  const auto row = pairs.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank) * n);
  return {row, row + static_cast<std::ptrdiff_t>(n)};
}

std::vector<std::size_t> CollCounts::recv_counts(int rank) const {
  const auto n = static_cast<std::size_t>(ranks());
  std::vector<std::size_t> out(n);
  for (std::size_t s = 0; s < n; ++s) out[s] = pairs[s * n + static_cast<std::size_t>(rank)];
  return out;
}

namespace {
std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> out(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), out.begin(), std::size_t{0});
  return out;
}
}  // namespace

std::vector<std::size_t> CollCounts::send_displs(int rank) const {
  return displacements(send_counts(rank));
}
std::vector<std::size_t> CollCounts::recv_displs(int rank) const {
  return displacements(recv_counts(rank));
}

Bytes coll_unit(const CollCase& c) {
  const Bytes es = dtype_size(c.dtype);
  return spec(c.op).split ? es * static_cast<Bytes>(c.nranks) : es;
}

Bytes coll_fit(const CollCase& c, Bytes bytes) { return bytes / coll_unit(c) * coll_unit(c); }

CollCounts coll_counts(const CollCase& c, Bytes bytes) {
  const CollSpec& s = spec(c.op);
  const std::size_t es = dtype_size(c.dtype);
  if (bytes % es != 0)
    throw UsageError(fmt::format("{}: {} B is not a whole number of {} elements ({} B each)",
                                 s.name, bytes, to_string(c.dtype), es));
  const std::size_t elems = bytes / es;
  const auto n = static_cast<std::size_t>(c.nranks);
  if (s.split && elems % n != 0)
    throw UsageError(
        fmt::format("{}: {} B = {} {} elements do not split over {} ranks (use sizes that are "
                    "multiples of {} B)",
                    s.name, bytes, elems, to_string(c.dtype), c.nranks, es * n));
  return s.counts(c, elems);
}

CollCounts coll_counts(CollOp op, Bytes bytes, DType t, int nranks) {
  return coll_counts(CollCase{op, t, RedOp::sum, nranks, 0, {}}, bytes);
}

}  // namespace xb
