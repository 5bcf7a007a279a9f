#include "engine/ucx_tag.hpp"

#include <fmt/format.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace xb::engine {
namespace {

ucp_worker_h wrk(void* p) { return static_cast<ucp_worker_h>(p); }

// The sender's rank in the upper 32 bits, the tag in the lower.
ucp_tag_t tag_of(int from, int tag) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32) |
         static_cast<std::uint32_t>(tag);
}

void on_peer_error(void* arg, ucp_ep_h, ucs_status_t) { *static_cast<int*>(arg) = 1; }

// Gives a request `ms` milliseconds to end, driving the worker.
bool settle(void* worker, void* request, int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (ucp_request_check_status(request) == UCS_INPROGRESS) {
    if (Clock::now() > until) return false;
    ucp_worker_progress(wrk(worker));
  }
  return true;
}

}  // namespace

TagChannel::TagChannel(const std::string& nic, int rank) : worker_(nic, true), rank_(rank) {}

TagChannel::~TagChannel() {
  for (void* ep : eps_) {
    if (!ep) continue;
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(static_cast<ucp_ep_h>(ep), &rp);
    if (UCS_PTR_IS_PTR(req)) {
      settle(worker_.handle(), req, 2000);
      ucp_request_free(req);
    }
  }
}

void TagChannel::set_peers(std::vector<std::string> addresses) {
  peers_ = std::move(addresses);
  eps_.assign(peers_.size(), nullptr);
  peer_failed_.assign(peers_.size(), 0);
}

void* TagChannel::endpoint(int peer) {
  const auto i = static_cast<std::size_t>(peer);
  if (peer < 0 || i >= peers_.size() || peers_[i].empty())
    throw RuntimeError(fmt::format("rank {} has no address on this rail", peer));
  if (!eps_[i]) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(peers_[i].data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_peer_error;
    ep.err_handler.arg = &peer_failed_[i];
    ucp_ep_h h = nullptr;
    const ucs_status_t st = ucp_ep_create(wrk(worker_.handle()), &ep, &h);
    if (st != UCS_OK)
      throw RuntimeError(
          fmt::format("ucp_ep_create to rank {} failed: {}", peer, ucs_status_string(st)));
    eps_[i] = h;
  }
  return eps_[i];
}

std::unique_ptr<TagChannel::Message> TagChannel::isend(std::span<const std::byte> data, int peer,
                                                       int tag) {
  ucp_request_param_t rp{};
  ucs_status_ptr_t r = ucp_tag_send_nbx(static_cast<ucp_ep_h>(endpoint(peer)), data.data(),
                                        data.size(), tag_of(rank_, tag), &rp);
  auto m = std::make_unique<Message>(*this, UCS_PTR_IS_PTR(r) ? r : nullptr);
  if (UCS_PTR_IS_ERR(r)) {
    m->error_ = fmt::format("send to rank {}: {}", peer, ucs_status_string(UCS_PTR_STATUS(r)));
    m->request_ = nullptr;
    m->failed_ = true;
  }
  return m;
}

std::unique_ptr<TagChannel::Message> TagChannel::irecv(std::span<std::byte> data, int peer,
                                                       int tag) {
  ucp_request_param_t rp{};
  ucs_status_ptr_t r = ucp_tag_recv_nbx(wrk(worker_.handle()), data.data(), data.size(),
                                        tag_of(peer, tag), ~ucp_tag_t{0}, &rp);
  auto m = std::make_unique<Message>(*this, UCS_PTR_IS_PTR(r) ? r : nullptr);
  if (UCS_PTR_IS_ERR(r)) {
    m->error_ = fmt::format("receive from rank {}: {}", peer, ucs_status_string(UCS_PTR_STATUS(r)));
    m->failed_ = true;
  }
  return m;
}

TagChannel::Message::~Message() {
  if (!request_) return;
  // Still in flight: cancelled; UCX releases a freed request when it ends.
  ucp_request_cancel(wrk(ch_.worker_.handle()), request_);
  ucp_request_free(request_);
}

bool TagChannel::Message::done() {
  if (failed_) return false;
  if (!request_) return true;
  ch_.worker_.progress();
  const ucs_status_t st = ucp_request_check_status(request_);
  if (st == UCS_INPROGRESS) return false;
  ucp_request_free(request_);
  request_ = nullptr;
  if (st == UCS_OK) return true;
  error_ = ucs_status_string(st);
  failed_ = true;
  return false;
}

bool TagChannel::Message::cancel() {
  if (done() || failed_) return true;
  ucp_request_cancel(wrk(ch_.worker_.handle()), request_);
  if (!settle(ch_.worker_.handle(), request_, 200)) return false;
  ucp_request_free(request_);
  request_ = nullptr;
  return true;
}

}  // namespace xb::engine
