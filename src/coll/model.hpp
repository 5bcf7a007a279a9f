#pragma once
// The collectives, one row each (CollSpec, in collectives.cpp): the name,
// what a "size" means in elements, the bus bandwidth factor, the exact
// result and the library call. Everything else (names, help, --help's
// footer, list, checks) is derived from the table. Byte models and bus
// factors follow nccl-tests (PERFORMANCE.md):
//   allreduce 2(n-1)/n; allgather, reducescatter, alltoall, alltoallv,
//   gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "coll/dtype.hpp"
#include "coll/skew.hpp"
#include "core/units.hpp"

namespace xb {

enum class CollOp {
  allreduce,
  allgather,
  reducescatter,
  broadcast,
  reduce,
  alltoall,
  sendrecv,
  gather,
  scatter,
  alltoallv
};

// One collective as measured: the data and where it goes.
struct CollCase {
  CollOp op;
  DType dtype;
  RedOp redop = RedOp::sum;
  int nranks = 1;
  int root = 0;
  Skew skew{};  // alltoallv only
};

// `bytes` is nccl-tests' size: the whole buffer, i.e. the gathered result
// (allgather, gather), the full input (reducescatter, alltoall, scatter),
// each rank's send total (alltoallv), else the message.
struct CollCounts {
  std::size_t send = 0;   // elements in each rank's send buffer
  std::size_t recv = 0;   // elements of the largest receive buffer over the ranks
  std::size_t count = 0;  // the "count" column: per-rank element count passed to the library
  // alltoallv: elements from rank s to rank d at [s * n + d]; empty otherwise.
  std::vector<std::size_t> pairs;

  int ranks() const;  // n, from pairs (alltoallv only)
  // Elements `rank` receives (alltoallv: its column's sum; else recv).
  std::size_t recv_of(int rank) const;
  // alltoallv: where rank `rank`'s block for/from each peer starts, in elements.
  std::vector<std::size_t> send_counts(int rank) const;
  std::vector<std::size_t> send_displs(int rank) const;
  std::vector<std::size_t> recv_counts(int rank) const;
  std::vector<std::size_t> recv_displs(int rank) const;
};

// Where an in-place call reads its input and leaves its result.
enum class InPlace {
  same,         // send == recv
  input_slot,   // send == recv + rank * send count (allgather, gather)
  result_slot,  // recv == send + rank * recv count (scatter)
  library,      // the library decides where the result is (reducescatter)
  none,         // no in-place form (alltoallv): waived
};

class Communicator;
struct CollCall {
  const CollCase& c;
  const CollCounts& k;
  const void* send;
  void* recv;
};

struct CollSpec {
  CollOp op;
  const char* name;
  const char* help;         // one line: what it does
  bool reduction;           // takes a redop
  bool rooted;              // takes -r
  bool root_only_receives;  // only the root's receive buffer is defined
  bool split;               // the size's elements must divide by the ranks
  InPlace inplace;
  double (*bus_factor)(int n);
  // Counts of `elems` elements of size.
  CollCounts (*counts)(const CollCase& c, std::size_t elems);
  // Value element i of `rank`'s receive buffer must hold afterwards.
  double (*expected)(const CollCase& c, int rank, std::size_t i, const CollCounts& k);
  void (*call)(Communicator& comm, const CollCall& call);
};

// Every row, in the order `all` runs them.
std::span<const CollSpec> collectives();
const CollSpec& spec(CollOp op);

const char* to_string(CollOp op);
// One name, a comma list, or "all". Throws UsageError for an unknown collective.
std::vector<CollOp> parse_collectives(const std::string& list);
// "allreduce, allgather, ..., or all": for help texts and errors.
std::string collective_names();
bool is_reduction(CollOp op);  // takes a redop
bool has_root(CollOp op);      // broadcast, reduce, gather, scatter

double bus_factor(CollOp op, int nranks);

// The largest size not above `bytes` that the collective can move: a whole
// number of elements, and where it splits them over the ranks, a multiple of
// the ranks (nccl-tests rounds its sizes down the same way, so a sweep runs
// at any rank count). 0 when not one element (per rank) fits.
Bytes coll_fit(const CollCase& c, Bytes bytes);
// The unit coll_fit rounds to, in bytes: one element, or one per rank.
Bytes coll_unit(const CollCase& c);

// Throws UsageError when bytes is not a whole number of elements, or the
// elements do not split evenly over the ranks where the collective needs it.
CollCounts coll_counts(const CollCase& c, Bytes bytes);
// The same for the default case of `op` (no skew).
CollCounts coll_counts(CollOp op, Bytes bytes, DType t, int nranks);

}  // namespace xb
