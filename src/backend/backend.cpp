#include "backend/backend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "coll/fused.hpp"
#include "core/error.hpp"

namespace xb {

std::vector<std::pair<std::string, std::string>> Backend::software() const { return {}; }

const char* to_string(Method m) { return m == Method::dma ? "dma" : "core"; }

void check_range(const Buffer& b, Bytes offset, Bytes n, const char* what) {
  if (offset > b.size() || n > b.size() - offset)
    throw RuntimeError(
        fmt::format("{} of {} B at offset {} outside its {} B buffer", what, n, offset, b.size()));
}

void check_ops(std::span<const CopyOp> ops) {
  for (const auto& op : ops) {
    if (!op.src || !op.dst || op.bytes > op.src->size() || op.bytes > op.dst->size())
      throw RuntimeError("copy larger than its buffers");
    if (op.by && *op.by != op.src->device() && *op.by != op.dst->device())
      throw RuntimeError(fmt::format("a copy {}->{} cannot be driven by device {}",
                                     op.src->device(), op.dst->device(), *op.by));
  }
}

int executing_device(const CopyOp& op) {
  if (op.by && *op.by >= 0) return *op.by;
  if (op.src->device() >= 0) return op.src->device();
  return std::max(op.dst->device(), 0);
}

std::string Backend::export_buffer(const Buffer&) {
  throw NotSupported(
      fmt::format("the {} backend cannot share device memory between processes", name()));
}

std::unique_ptr<Buffer> Backend::import_buffer(const std::string&, int, Bytes) {
  throw NotSupported(
      fmt::format("the {} backend cannot share device memory between processes", name()));
}

Support Backend::copier_fits(Method, const CopierOptions&) const { return Support::yes(); }

Support Backend::communicator_fits(Runtime&) { return Support::yes(); }

LinkFacts Backend::link_facts(int) const { return {}; }

ClockHolds Backend::clock_holds(int) const {
  ClockHolds h;
  h.why = fmt::format("the {} backend has no device clocks to read", name());
  return h;
}

Support Backend::use_huge_pages() {
  return Support::no(
      fmt::format("huge host pages are not implemented on the {} backend in this version", name()));
}

std::string Backend::huge_pages_note() const { return ""; }

std::unique_ptr<Buffer> Backend::allocate_pinned_near(int, Bytes) {
  throw NotSupported(
      fmt::format("the {} backend cannot place pinned memory on a NUMA node", name()));
}

std::unique_ptr<Chain> Backend::make_chain(MemKind, int, Bytes, std::uint64_t) {
  throw NotSupported(
      fmt::format("the {} backend has no pointer-chase kernel in this version", name()));
}

Support Backend::fused_fits(Runtime&, const FusedConfig&) {
  return Support::no(fmt::format(
      "gemm-ar has no fused device operator on the {} backend in this version", name()));
}

std::unique_ptr<FusedGemmAllReduce> Backend::fused_gemm_allreduce(Runtime& rt,
                                                                  const FusedConfig& cfg) {
  throw NotSupported(fused_fits(rt, cfg).reason);
}

std::unique_ptr<Communicator> Backend::communicator(Runtime&) {
  throw UsageError(fmt::format("the {} backend has no collective library in this build", name()));
}

}  // namespace xb
