#include "engine/ucx.hpp"

#include <fmt/format.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace xb::engine {
namespace {

ucp_context_h ctx(void* p) { return static_cast<ucp_context_h>(p); }
ucp_worker_h wrk(void* p) { return static_cast<ucp_worker_h>(p); }

void ok(ucs_status_t st, const char* what) {
  if (st != UCS_OK) throw RuntimeError(fmt::format("{} failed: {}", what, ucs_status_string(st)));
}

}  // namespace

std::string ucx_version() { return ucp_get_version_string(); }

bool ucx_supports_memory(const std::string& type) {
  if (type == "host") return true;
  const ucs_memory_type_t t = type == "cuda"   ? UCS_MEMORY_TYPE_CUDA
                              : type == "rocm" ? UCS_MEMORY_TYPE_ROCM
                                               : UCS_MEMORY_TYPE_UNKNOWN;
  if (t == UCS_MEMORY_TYPE_UNKNOWN) return false;
  Worker w;  // a context of this process's UCX, with its configuration
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(static_cast<ucp_context_h>(w.context()), &attr) != UCS_OK) return false;
  return (attr.memory_types & UCS_BIT(t)) != 0;
}

Worker::Worker(const std::string& net_devices, bool tagged) {
  ucp_config_t* config = nullptr;
  ok(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  if (!net_devices.empty()) {
    if (const ucs_status_t st = ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
        st != UCS_OK) {
      ucp_config_release(config);
      ok(st, "ucp_config_modify(NET_DEVICES)");
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP | (tagged ? UCP_FEATURE_TAG : 0);
  ucp_context_h c = nullptr;
  const ucs_status_t st = ucp_init(&params, config, &c);
  ucp_config_release(config);
  ok(st, "ucp_init");
  ctx_ = c;
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w = nullptr;
  if (const ucs_status_t ws = ucp_worker_create(c, &wp, &w); ws != UCS_OK) {
    ucp_cleanup(c);
    ok(ws, "ucp_worker_create");
  }
  worker_ = w;
}

Worker::~Worker() {
  ucp_worker_destroy(wrk(worker_));
  ucp_cleanup(ctx(ctx_));
}

std::string Worker::address() const {
  ucp_address_t* addr = nullptr;
  std::size_t len = 0;
  ok(ucp_worker_get_address(wrk(worker_), &addr, &len), "ucp_worker_get_address");
  std::string out(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(wrk(worker_), addr);
  return out;
}

bool Worker::progress() { return ucp_worker_progress(wrk(worker_)) != 0; }

int Worker::event_fd() const {
  int fd = -1;
  ok(ucp_worker_get_efd(wrk(worker_), &fd), "ucp_worker_get_efd");
  return fd;
}

bool Worker::arm() {
  const ucs_status_t st = ucp_worker_arm(wrk(worker_));
  if (st == UCS_ERR_BUSY) return false;
  ok(st, "ucp_worker_arm");
  return true;
}

Region::Region(Worker& w, void* data, std::uint64_t size) : worker_(w), data_(data), size_(size) {
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = data;
  mp.length = size;
  ucp_mem_h h = nullptr;
  ok(ucp_mem_map(ctx(w.context()), &mp, &h), "ucp_mem_map");
  memh_ = h;
}

Region::Region(Worker& w, std::uint64_t size) : worker_(w), data_(nullptr), size_(size) {
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                  UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  mp.address = nullptr;
  mp.length = size;
  mp.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h h = nullptr;
  ok(ucp_mem_map(ctx(w.context()), &mp, &h), "ucp_mem_map (allocate)");
  memh_ = h;
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  if (const ucs_status_t st = ucp_mem_query(h, &attr); st != UCS_OK || attr.length < size) {
    ucp_mem_unmap(ctx(w.context()), h);
    ok(st == UCS_OK ? UCS_ERR_NO_MEMORY : st, "ucp_mem_query");
  }
  data_ = attr.address;
}

Region::~Region() { ucp_mem_unmap(ctx(worker_.context()), static_cast<ucp_mem_h>(memh_)); }

std::string Region::packed_rkey() const {
  void* buf = nullptr;
  std::size_t len = 0;
  ok(ucp_rkey_pack(ctx(worker_.context()), static_cast<ucp_mem_h>(memh_), &buf, &len),
     "ucp_rkey_pack");
  std::string out(static_cast<const char*>(buf), len);
  ucp_rkey_buffer_release(buf);
  return out;
}

SegmentDescriptor Region::describe(std::uint64_t offset, std::uint64_t length,
                                   std::uint64_t pattern_offset) const {
  if (offset > size_ || length > size_ - offset)
    throw RuntimeError("descriptor range outside the region");
  SegmentDescriptor d;
  d.worker_address = worker_.address();
  d.rkey = packed_rkey();
  d.base = reinterpret_cast<std::uint64_t>(data()) + offset;
  d.length = length;
  d.pattern_offset = pattern_offset;
  return d;
}

struct Remote::State {
  ucs_status_t status = UCS_OK;  // set by on_peer_error
};

namespace {
// UCX calls this when the peer of an endpoint fails (peer error mode).
void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  *static_cast<ucs_status_t*>(arg) = status;
}
}  // namespace

Remote::Remote(Worker& w, const SegmentDescriptor& d, double timeout_s, bool peer_errors)
    : worker_(w), seg_(d), timeout_s_(timeout_s), state_(std::make_unique<State>()) {
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(seg_.worker_address.data());
  ep.err_mode = peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  ep.err_handler.cb = on_peer_error;
  ep.err_handler.arg = &state_->status;
  ucp_ep_h h = nullptr;
  ok(ucp_ep_create(wrk(w.handle()), &ep, &h), "ucp_ep_create");
  ep_ = h;
  ucp_rkey_h rk = nullptr;
  if (const ucs_status_t st = ucp_ep_rkey_unpack(h, seg_.rkey.data(), &rk); st != UCS_OK) {
    ucp_ep_destroy(h);
    ok(st, "ucp_ep_rkey_unpack");
  }
  rkey_ = rk;
}

Remote::~Remote() {
  for (void* r : pending_) {
    ucp_request_cancel(wrk(worker_.handle()), r);
    ucp_request_free(r);
  }
  ucp_rkey_destroy(static_cast<ucp_rkey_h>(rkey_));
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* req = ucp_ep_close_nbx(static_cast<ucp_ep_h>(ep_), &rp);
  if (UCS_PTR_IS_PTR(req)) {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline)
      worker_.progress();
    ucp_request_free(req);
  }
}

void Remote::check_peer() const {
  if (state_->status != UCS_OK)
    throw RuntimeError(fmt::format("the peer failed ({}): it exited, or its link is down",
                                   ucs_status_string(state_->status)));
}

void* Remote::start(Op op, const Xfer& x) {
  if (x.remote_offset > seg_.length || x.length > seg_.length - x.remote_offset)
    throw RuntimeError("transfer outside the peer's segment");
  ucp_request_param_t rp{};
  const std::uint64_t addr = seg_.base + x.remote_offset;
  auto* rk = static_cast<ucp_rkey_h>(rkey_);
  auto* ep = static_cast<ucp_ep_h>(ep_);
  ucs_status_ptr_t r = op == Op::read ? ucp_get_nbx(ep, x.local, x.length, addr, rk, &rp)
                                      : ucp_put_nbx(ep, x.local, x.length, addr, rk, &rp);
  if (UCS_PTR_IS_ERR(r))
    throw RuntimeError(fmt::format("ucp {} failed: {}", op == Op::read ? "get" : "put",
                                   ucs_status_string(UCS_PTR_STATUS(r))));
  return r;  // nullptr: completed at once
}

void Remote::complete(void* request, const char* what) {
  if (!request) return;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s_));
  ucs_status_t st;
  while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS) {
    worker_.progress();
    if (state_->status != UCS_OK || Clock::now() > deadline) {
      // UCX may not cancel a get or put in flight (a peer that went silent,
      // a link that went down): give the cancel 2 s, then leave the request
      // to UCX (freed, it is released when it ends) rather than wait on it.
      ucp_request_cancel(wrk(worker_.handle()), request);
      const auto limit = Clock::now() + std::chrono::seconds(2);
      while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < limit)
        worker_.progress();
      ucp_request_free(request);
      check_peer();
      throw RuntimeError(fmt::format(
          "{} timed out after {} s: the server did not answer (gone, or its link is down)", what,
          timeout_s_));
    }
  }
  ucp_request_free(request);
  if (st != UCS_OK) {
    check_peer();
    throw RuntimeError(fmt::format("{} failed: {}", what, ucs_status_string(st)));
  }
}

void Remote::transfer(Op op, const Xfer& x) {
  check_peer();
  complete(start(op, x), op == Op::read ? "read" : "write");
  if (op == Op::write) {
    ucp_request_param_t rp{};
    complete(ucp_ep_flush_nbx(static_cast<ucp_ep_h>(ep_), &rp), "flush");
  }
}

void Remote::post(Op op, const std::vector<Xfer>& batch) {
  check_peer();
  for (const auto& x : batch)
    if (void* r = start(op, x)) pending_.push_back(r);
  pending_writes_ = pending_writes_ || op == Op::write;
}

void Remote::wait() {
  std::vector<void*> reqs;
  reqs.swap(pending_);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    try {
      complete(reqs[i], "request");
    } catch (...) {
      pending_.assign(reqs.begin() + static_cast<long>(i) + 1, reqs.end());
      throw;
    }
  }
  if (pending_writes_) {
    pending_writes_ = false;
    ucp_request_param_t rp{};
    complete(ucp_ep_flush_nbx(static_cast<ucp_ep_h>(ep_), &rp), "flush");
  }
}

void Remote::wait_first(std::size_t n) {
  n = std::min(n, pending_.size());
  for (std::size_t i = 0; i < n; ++i) {
    void* r = pending_.front();
    pending_.erase(pending_.begin());
    complete(r, "request");
  }
}

void Remote::flush() {
  pending_writes_ = false;
  ucp_request_param_t rp{};
  complete(ucp_ep_flush_nbx(static_cast<ucp_ep_h>(ep_), &rp), "flush");
}

std::string Remote::transports() const {
  char* buf = nullptr;
  std::size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return "unknown";
  ucp_ep_print_info(static_cast<ucp_ep_h>(ep_), f);
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  // Lane lines name "transport/device" pairs; keep each once.
  std::set<std::string> seen;
  std::string out;
  std::istringstream in(text);
  for (std::string tok; in >> tok;) {
    const auto slash = tok.find('/');
    if (slash == std::string::npos || slash == 0 || tok.find("md[") != std::string::npos) continue;
    const auto colon = tok.find(':');
    std::string tl = colon != std::string::npos && colon < slash ? tok.substr(colon + 1) : tok;
    while (!tl.empty() && (tl.back() == ',' || tl.back() == ')')) tl.pop_back();
    if (tl.find('.') != std::string::npos) tl = tl.substr(0, tl.find('.'));
    if (seen.insert(tl).second) out += (out.empty() ? "" : " ") + tl;
  }
  return out.empty() ? "unknown" : out;
}

}  // namespace xb::engine
