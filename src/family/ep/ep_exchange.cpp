#include "family/ep/ep_exchange.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace xb {
namespace {

// One phase's send and receive buffers in the communicator's memory.
struct PhaseBuffers {
  std::unique_ptr<Buffer> send, recv;
  const EpLayout* layout = nullptr;
};

class AlltoallvExchange final : public EpExchange {
 public:
  AlltoallvExchange(Communicator& comm, Backend& backend, const EpStep& step)
      : comm_(comm), backend_(backend) {
    setup(phases_[0], step.dispatch,
          [&](std::span<std::byte> out) { fill_dispatch_send(step.trace, step.rank, out); });
    setup(phases_[1], step.combine,
          [&](std::span<std::byte> out) { fill_combine_send(step.trace, step.rank, out); });
  }
  void run(EpPhase p) override {
    PhaseBuffers& b = of(p);
    comm_.alltoallv(b.send->data(), b.layout->send_counts, b.layout->send_displs, b.recv->data(),
                    b.layout->recv_counts, b.layout->recv_displs, DType::uint8);
  }
  void synchronize() override { comm_.synchronize(); }
  std::unique_ptr<StreamMarks> marks(int count) override {
    return comm_.on_stream() ? comm_.stream_marks(count) : nullptr;
  }
  void poison(EpPhase p) override {
    PhaseBuffers& b = of(p);
    const std::vector<std::byte> ff(b.recv->size(), std::byte{0xFF});
    backend_.write(*b.recv, 0, ff);
  }
  void read(EpPhase p, std::span<std::byte> out) override {
    backend_.read(*of(p).recv, 0, out.first(std::min(out.size(), of(p).recv->size())));
  }

 private:
  template <class Fill>
  void setup(PhaseBuffers& b, const EpLayout& l, Fill fill) {
    b.layout = &l;
    const MemKind kind = comm_.buffer_kind();
    b.send = backend_.allocate(kind, comm_.device(), std::max<Bytes>(l.send_bytes(), 1));
    b.recv = backend_.allocate(kind, comm_.device(), std::max<Bytes>(l.recv_bytes(), 1));
    std::vector<std::byte> host(b.send->size());
    fill(std::span(host.data(), l.send_bytes()));
    backend_.write(*b.send, 0, host);
    // receive pages touched now, not inside the first timed call
    const std::vector<std::byte> zero(b.recv->size());
    backend_.write(*b.recv, 0, zero);
  }
  PhaseBuffers& of(EpPhase p) { return phases_[p == EpPhase::dispatch ? 0 : 1]; }

  Communicator& comm_;
  Backend& backend_;
  PhaseBuffers phases_[2];
};

// The window: [flags: 2 phases x ranks x 8 B][dispatch slots][combine
// slots]. A phase's slots at rank d are d's receive layout; the sender finds
// its slot there from the plan (every rank knows every layout). Each run of
// a phase bumps its sequence number: a sender puts its bytes, completes them
// at the target, then puts the number into its flag; the receiver polls
// until every source's flag has reached it.
class PutExchange final : public EpExchange {
 public:
  PutExchange(Runtime& rt, const EpStep& step) : rt_(rt), n_(step.plan.ranks), me_(step.rank) {
    std::size_t most_d = 0, most_c = 0;
    for (int d = 0; d < n_; ++d) {
      layouts_[0].push_back(dispatch_layout(step.trace, step.plan, d));
      layouts_[1].push_back(combine_layout(step.trace, step.plan, d));
      most_d = std::max(most_d, layouts_[0].back().recv_bytes());
      most_c = std::max(most_c, layouts_[1].back().recv_bytes());
    }
    base_[0] = 2 * static_cast<std::size_t>(n_) * sizeof(std::uint64_t);
    base_[1] = base_[0] + (most_d + 63) / 64 * 64;
    const std::size_t size = base_[1] + std::max<std::size_t>(most_c, 1);
    win_ = rt.allocate_window(size, rt.single_host() ? Transport::shm : Transport::rma);
    std::memset(win_->local(), 0, size);
    send_[0].resize(step.dispatch.send_bytes());
    send_[1].resize(step.combine.send_bytes());
    fill_dispatch_send(step.trace, me_, send_[0]);
    fill_combine_send(step.trace, me_, send_[1]);
    win_->sync();
    rt.barrier(Runtime::Wait::idle);  // every window zeroed before any put
    win_->sync();
  }
  void run(EpPhase p) override {
    const int k = p == EpPhase::dispatch ? 0 : 1;
    const std::uint64_t seq = ++seq_[k];
    const EpLayout& mine = layouts_[k][static_cast<std::size_t>(me_)];
    std::vector<std::unique_ptr<Window::Request>> reqs;
    for (int d = 0; d < n_; ++d) {
      const auto q = static_cast<std::size_t>(d);
      if (mine.send_counts[q] == 0) continue;
      const std::size_t slot = base_[k] + layouts_[k][q].recv_displs[static_cast<std::size_t>(me_)];
      reqs.push_back(
          win_->rput(send_[k].data() + mine.send_displs[q], d, slot, mine.send_counts[q]));
    }
    win_->wait_all(reqs);  // complete at every target before the flags
    for (int d = 0; d < n_; ++d)
      win_->put(reinterpret_cast<const std::byte*>(&seq), d, flag_offset(k, me_), sizeof seq);
    wait_flags(k, seq);
  }
  void synchronize() override {}
  std::unique_ptr<StreamMarks> marks(int) override { return nullptr; }
  void poison(EpPhase p) override {
    const int k = p == EpPhase::dispatch ? 0 : 1;
    const EpLayout& mine = layouts_[k][static_cast<std::size_t>(me_)];
    std::memset(win_->local() + base_[k], 0xFF, mine.recv_bytes());
    win_->sync();
    rt_.barrier(Runtime::Wait::idle);  // poisoned everywhere before the next puts
    win_->sync();
  }
  void read(EpPhase p, std::span<std::byte> out) override {
    const int k = p == EpPhase::dispatch ? 0 : 1;
    const EpLayout& mine = layouts_[k][static_cast<std::size_t>(me_)];
    win_->sync();
    std::memcpy(out.data(), win_->local() + base_[k], std::min(out.size(), mine.recv_bytes()));
  }

 private:
  std::size_t flag_offset(int k, int src) const {
    return (static_cast<std::size_t>(k) * static_cast<std::size_t>(n_) +
            static_cast<std::size_t>(src)) *
           sizeof(std::uint64_t);
  }
  // Polls this rank's flags of phase k until every source reached `seq`;
  // a flag that never comes is an error after a minute, not a hang.
  void wait_flags(int k, std::uint64_t seq) {
    const auto start = Clock::now();
    for (int s = 0; s < n_;) {
      win_->poll();
      // 8-byte aligned (the window starts on a page): one load, never torn
      auto* flag = reinterpret_cast<std::uint64_t*>(win_->local() + flag_offset(k, s));
      const std::uint64_t v = std::atomic_ref<std::uint64_t>(*flag).load(std::memory_order_acquire);
      if (v >= seq) {
        ++s;
        continue;
      }
      if (elapsed_us(start, Clock::now()) > 60e6)
        throw RuntimeError(fmt::format(
            "ep put: rank {}'s flag for {} #{} did not arrive within 60 s (it holds #{})", s,
            k == 0 ? "dispatch" : "combine", seq, v));
    }
  }

  Runtime& rt_;
  int n_, me_;
  std::vector<EpLayout> layouts_[2];  // every rank's, per phase
  std::size_t base_[2] = {0, 0};
  std::vector<std::byte> send_[2];
  std::unique_ptr<Window> win_;
  std::uint64_t seq_[2] = {0, 0};
};

}  // namespace

std::unique_ptr<EpExchange> make_alltoallv_exchange(Communicator& comm, Backend& backend,
                                                    const EpStep& step) {
  return std::make_unique<AlltoallvExchange>(comm, backend, step);
}

std::unique_ptr<EpExchange> make_put_exchange(Runtime& rt, const EpStep& step) {
  return std::make_unique<PutExchange>(rt, step);
}

}  // namespace xb
