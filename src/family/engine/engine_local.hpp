#pragma once
// The engine client's local side: the client's memory and how its requests
// reach a server's slot, one class per lane kind (ucx, staged, ipc). A run
// has one per part (a lane to one server), each moving [base, base +
// length) of the client's slot on that server.
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "engine/ucx.hpp"
#include "family/engine/engine_bench.hpp"

namespace xb {

// A request: [offset, offset + length) of the part's memory <-> the same
// offsets past the part's base in the server's slot.
struct EngineReq {
  Bytes offset, length;
};

class EngineLocal {
 public:
  virtual ~EngineLocal() = default;
  virtual void transfer(engine::Op op, const EngineReq& r) = 0;
  virtual void post(engine::Op op, const std::vector<EngineReq>& batch) = 0;
  virtual void wait() = 0;
  // Outside timing: fill with the client's pattern (at the slot's offsets
  // base.., as the server checks it), poison, read back.
  virtual void fill() = 0;
  virtual void poison() = 0;
  virtual std::vector<std::byte> contents() = 0;
  virtual std::string transports() const = 0;
};

// One part of a run: its lane kind, where its memory lives and which bytes
// of the slot it moves.
struct EnginePart {
  EngineLane lane = EngineLane::ucx;
  bool client_device = false;
  int device = 0;
  Bytes base = 0, length = 0;
};

// The part's memory and requests, on worker `w` (ucx and staged) or the
// backend's copy engine (ipc).
std::unique_ptr<EngineLocal> make_engine_local(engine::Worker& w, Backend& be, const EnginePart& p,
                                               const engine::SegmentDescriptor& seg,
                                               const EngineClientConfig& cfg);

}  // namespace xb
