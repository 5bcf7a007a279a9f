#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "engine/bootstrap.hpp"
#include "engine/wire.hpp"
#include "family/engine/engine_bench.hpp"
#include "family/engine/engine_records.hpp"

namespace xb::engine {

TEST(EngineWire, DescriptorRoundTrip) {
  SegmentDescriptor d{std::string("\x01\x00\xff"
                                  "addr",
                                  7),
                      std::string(300, 'k'), 0x7f0000001000ULL, 1ULL << 30, 4096};
  const SegmentDescriptor back = decode_descriptor(encode(d));
  EXPECT_EQ(back.worker_address, d.worker_address);
  EXPECT_EQ(back.rkey, d.rkey);
  EXPECT_EQ(back.base, d.base);
  EXPECT_EQ(back.length, d.length);
  EXPECT_EQ(back.pattern_offset, d.pattern_offset);
}

TEST(EngineWire, MalformedDescriptorsAreRefused) {
  const std::string good = encode({"addr", "rkey", 4096, 100, 0});
  for (std::size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_THROW(decode_descriptor(good.substr(0, cut)), ProtocolError) << cut;  // every truncation
  EXPECT_THROW(decode_descriptor(good + "x"), ProtocolError);                    // trailing bytes
  EXPECT_THROW(decode_descriptor(encode({"", "rkey", 0, 1, 0})), ProtocolError);  // no address
  EXPECT_THROW(decode_descriptor(encode({"a", "k", ~0ULL - 5, 100, 0})),
               ProtocolError);                         // range wraps
  std::string huge = Writer().u64(1ULL << 40).take();  // absurd length
  EXPECT_THROW(decode_descriptor(huge), ProtocolError);
}

TEST(EngineWire, Frames) {
  const std::string bytes = encode_frame({MsgType::hello, "payload"});
  ASSERT_EQ(bytes.size(), 12u + 7u);
  const std::string header = bytes.substr(0, 12);
  EXPECT_EQ(payload_length(header), 7u);
  const Frame f = decode_frame(header, bytes.substr(12));
  EXPECT_EQ(f.type, MsgType::hello);
  EXPECT_EQ(f.payload, "payload");
  std::string bad = header;
  bad[0] = 'Y';
  EXPECT_THROW(payload_length(bad), ProtocolError);  // magic
  bad = header;
  bad[4] = 9;
  EXPECT_THROW(payload_length(bad), ProtocolError);  // version
  bad = header;
  bad[6] = 42;
  EXPECT_THROW(payload_length(bad), ProtocolError);  // type
  bad = header;
  bad[11] = 0x7f;
  EXPECT_THROW(payload_length(bad), ProtocolError);  // oversized
  EXPECT_THROW(payload_length(header.substr(0, 5)), ProtocolError);
  EXPECT_THROW(encode_frame({MsgType::hello, std::string(kMaxPayload + 1, 'x')}), ProtocolError);
}

// The hello carries the bytes of its slot the client needs; a hello of an
// earlier build (without them) still decodes, as 0.
TEST(EngineWire, HelloCarriesTheClientsNeed) {
  const Hello h = decode_hello(encode_hello({"tok", "digest", "host", 3ULL << 30}));
  EXPECT_EQ(h.token, "tok");
  EXPECT_EQ(h.kind, "host");
  EXPECT_EQ(h.need, 3ULL << 30);
  const Hello old = decode_hello(Writer().str("tok").str("d").str("device").take());
  EXPECT_EQ(old.kind, "device");
  EXPECT_EQ(old.need, 0u);
  EXPECT_THROW(decode_hello(encode_hello({"t", "d", "host", 1}) + "x"), ProtocolError);
}

// A token file that exists must hold a token: an empty one is not
// overwritten, a binary or oversized one is not taken as the token.
TEST(EngineToken, AFileThatExistsMustHoldAToken) {
  char dir[] = "/tmp/xb_token_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string base = dir;
  const auto put = [](const std::string& path, const std::string& bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  put(base + "/good", "0123abcd\n");
  EXPECT_EQ(load_token(base + "/good"), "0123abcd");
  put(base + "/empty", "");
  EXPECT_THROW(load_token(base + "/empty"), UsageError);
  put(base + "/blank", " \n");
  EXPECT_THROW(load_token(base + "/blank"), UsageError);
  put(base + "/binary", std::string("ab\0\xff", 4));
  EXPECT_THROW(load_token(base + "/binary"), UsageError);
  put(base + "/big", std::string(kMaxToken + 1, 'a'));
  EXPECT_THROW(load_token(base + "/big"), UsageError);
  put(base + "/max", std::string(kMaxToken, 'a'));
  EXPECT_EQ(load_token(base + "/max").size(), kMaxToken);
  for (const char* f : {"good", "empty", "blank", "binary", "big", "max"})
    std::remove((base + "/" + f).c_str());
  rmdir(dir);
}

TEST(EngineWire, Endpoints) {
  EXPECT_EQ(parse_endpoint("127.0.0.1:20000", "--listen"),
            std::make_pair(std::string("127.0.0.1"), 20000));
  EXPECT_EQ(parse_endpoint("[::1]:5", "--listen").second, 5);
  EXPECT_THROW(parse_endpoint("localhost", "--connect"), UsageError);
  EXPECT_THROW(parse_endpoint("h:99999", "--connect"), UsageError);
  EXPECT_THROW(parse_endpoint(":80", "--connect"), UsageError);
  EXPECT_EQ(make_token().size(), 32u);
  EXPECT_NE(make_token(), make_token());
}

TEST(EngineWire, BlockSteps) {
  EngineClientConfig c;
  c.total = 1 << 20;
  c.block = 64 << 10;
  c.block_steps = 5;
  EXPECT_EQ(engine_blocks(c),
            (std::vector<Bytes>{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20}));
  c.block_steps = 6;
  EXPECT_THROW(engine_blocks(c), UsageError);  // 2 MiB > -t
  c.block_steps = 1;
  c.total = 3 << 20;
  c.block = 2 << 20;
  EXPECT_THROW(engine_blocks(c), UsageError);  // not a multiple
}

}  // namespace xb::engine

// ---- the client's lanes (family/engine) ------------------------------------

#include "family/engine/engine_bench.hpp"

namespace xb {

LaneFacts facts(bool client_device, bool registrable, const char* backend) {
  LaneFacts f;
  f.client_device = client_device;
  f.device_registrable = registrable;
  f.backend = backend;
  return f;
}

TEST(EngineLanes, AutomaticRegistersWhatUcxCanAndStagesTheRest) {
  EXPECT_EQ(choose_lane(EngineLane::automatic, facts(false, false, "cuda")), EngineLane::ucx);
  EXPECT_EQ(choose_lane(EngineLane::automatic, facts(true, true, "host")), EngineLane::ucx);
  EXPECT_EQ(choose_lane(EngineLane::automatic, facts(true, false, "cuda")), EngineLane::staged);
  EXPECT_EQ(choose_lane(EngineLane::staged, facts(true, true, "host")), EngineLane::staged);
  EXPECT_THROW(choose_lane(EngineLane::ucx, facts(true, false, "cuda")), UsageError);
  EXPECT_THROW(choose_lane(EngineLane::staged, facts(false, true, "host")), UsageError);
}

TEST(EngineLanes, IpcWhereTheServerExportsItsRegionOnThisNode) {
  LaneFacts f = facts(true, false, "cuda");
  f.server_ipc = true;
  f.same_node = true;
  f.can_import = true;
  EXPECT_EQ(choose_lane(EngineLane::automatic, f), EngineLane::ipc);
  EXPECT_EQ(choose_lane(EngineLane::staged, f), EngineLane::staged);  // forced still wins
  f.server_rkey = false;  // GPU memory UCX cannot register: IPC or nothing
  EXPECT_EQ(choose_lane(EngineLane::automatic, f), EngineLane::ipc);
  f.same_node = false;
  EXPECT_THROW(choose_lane(EngineLane::automatic, f), UsageError);
  EXPECT_THROW(choose_lane(EngineLane::ipc, f), UsageError);
  f.same_node = true;
  f.can_import = false;  // the host backend maps no IPC handles
  EXPECT_THROW(choose_lane(EngineLane::ipc, f), UsageError);
  LaneFacts h = facts(false, true, "host");  // a host region has no handle
  EXPECT_THROW(choose_lane(EngineLane::ipc, h), UsageError);
}

TEST(EngineWire, DescriptorCarriesTheIpcHandleAndNode) {
  engine::SegmentDescriptor d;
  d.worker_address = "addr";
  d.base = 4096;
  d.length = 1 << 20;
  d.ipc = std::string(64, '\x01');
  d.ipc_size = 4 << 20;
  d.ipc_offset = 1 << 20;
  d.node = "boot-id";
  const auto e = engine::decode_descriptor(engine::encode(d));  // no rkey: IPC only
  EXPECT_EQ(e.ipc, d.ipc);
  EXPECT_EQ(e.ipc_size, d.ipc_size);
  EXPECT_EQ(e.ipc_offset, d.ipc_offset);
  EXPECT_EQ(e.node, "boot-id");
  d.ipc_offset = 4 << 20;  // the range leaves the exported region
  EXPECT_THROW(engine::decode_descriptor(engine::encode(d)), engine::ProtocolError);
  d.ipc.clear();  // neither rkey nor handle
  d.ipc_offset = 0;
  EXPECT_THROW(engine::decode_descriptor(engine::encode(d)), engine::ProtocolError);
}

TEST(EngineWire, FrameReaderTakesFramesInPieces) {
  engine::FrameReader r;
  const std::string a = engine::encode_frame({engine::MsgType::hello, "first"});
  const std::string b = engine::encode_frame({engine::MsgType::bye, ""});
  const std::string both = a + b;
  for (std::size_t i = 0; i < 5; ++i) r.feed(both.data() + i, 1);  // part of a header
  EXPECT_FALSE(r.next());
  r.feed(both.data() + 5, a.size() - 6);  // all but the last byte of the first frame
  EXPECT_FALSE(r.next());
  r.feed(both.data() + a.size() - 1, both.size() - a.size() + 1);
  auto f = r.next();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, engine::MsgType::hello);
  EXPECT_EQ(f->payload, "first");
  f = r.next();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, engine::MsgType::bye);
  EXPECT_TRUE(r.empty());
  engine::FrameReader bad;
  bad.feed("GET / HTTP/1.0\r\n", 16);  // a bad header fails as soon as it is in
  EXPECT_THROW(bad.next(), engine::ProtocolError);
}

TEST(EngineLanes, NodeAndProcessIdentity) {
  const std::string me = engine::process_id();
  EXPECT_EQ(me, engine::process_id());  // drawn once per process
  // "<boot id>/<pid>/<nonce>": a same-pid process in another container differs.
  EXPECT_EQ(me.rfind(engine::node_id() + "/" + std::to_string(getpid()) + "/", 0), 0u);
  EXPECT_GT(me.size(), engine::node_id().size() + std::to_string(getpid()).size() + 2 + 8);
  EXPECT_TRUE(engine::on_this_node(me));
  EXPECT_TRUE(engine::on_this_node(engine::node_id() + "/1"));
  EXPECT_FALSE(engine::on_this_node("another-boot-id/" + std::to_string(getpid())));
  EXPECT_FALSE(engine::on_this_node(""));
}

TEST(EngineLanes, StageChunksCoverTheRequestWithAPartialLastOne) {
  using C = std::vector<std::pair<Bytes, Bytes>>;
  EXPECT_EQ(stage_chunks(64, 24), (C{{0, 24}, {24, 24}, {48, 16}}));
  EXPECT_EQ(stage_chunks(48, 24), (C{{0, 24}, {24, 24}}));
  EXPECT_EQ(stage_chunks(10, 24), (C{{0, 10}}));
  EXPECT_TRUE(stage_chunks(0, 24).empty());
  EXPECT_TRUE(stage_chunks(10, 0).empty());
}

TEST(EngineModes, LettersNameEachSide) {
  EXPECT_FALSE(client_on_device(EngineMode::h2d));
  EXPECT_TRUE(server_on_device(EngineMode::h2d));
  EXPECT_TRUE(client_on_device(EngineMode::d2h));
  EXPECT_FALSE(server_on_device(EngineMode::d2h));
  EXPECT_TRUE(client_on_device(EngineMode::d2d) && server_on_device(EngineMode::d2d));
}

// --lanes x servers split -t evenly, whole blocks each; every refusal is a
// usage error naming the split.
TEST(EngineLanes, PartLength) {
  EngineClientConfig c;
  c.total = 8 << 20;
  c.block = 1 << 20;
  c.block_steps = 2;
  c.lanes = 2;
  EXPECT_EQ(engine_part_length(c, 1), 4u << 20);
  EXPECT_EQ(engine_part_length(c, 2), 2u << 20);
  EXPECT_THROW(engine_part_length(c, 8), UsageError);  // 16 parts, 4 blocks of 2 MiB
  c.lanes = 3;
  EXPECT_THROW(engine_part_length(c, 1), UsageError);  // 8 MiB in 3 parts
  c.lanes = 0;
  EXPECT_THROW(engine_part_length(c, 1), UsageError);
  c.lanes = kEngineMaxLanes + 1;
  EXPECT_THROW(engine_part_length(c, 1), UsageError);
  c.lanes = 1;
  c.total = 3 << 20;
  c.block_steps = 1;
  EXPECT_EQ(engine_part_length(c, 1), 3u << 20);  // one part: -t as it is
  EXPECT_EQ(engine_part_length(c, 3), 1u << 20);
}

TEST(EngineFanin, JainIndex) {
  EXPECT_DOUBLE_EQ(jain_index({5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index({8, 0, 0, 0}), 0.25);
  EXPECT_NEAR(jain_index({1, 2}), 9.0 / 10.0, 1e-12);
  EXPECT_EQ(jain_index({}), 0.0);
}

Record client_record(double loop_us, Bytes bytes) {
  Record r;
  r.kase = "read";
  r.method = "sync";
  r.bytes = bytes;
  r.verified = true;
  const std::vector<double> loops{loop_us, loop_us};
  r.set_samples(loops);
  r.set(engine_field::block, std::int64_t{1 << 20});
  return r;
}

TEST(EngineFanin, SharesTotalAndFairness) {
  const Bytes b = 4 << 20;
  std::vector<Record> clients{client_record(1000, b), client_record(3000, b)};
  const auto out = fanin_records(clients, {{1000, 1000}, {3000, 2000}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].get(engine_field::client), 0);
  EXPECT_EQ(out[1].get(engine_field::client), 1);
  EXPECT_NEAR(*out[0].get(engine_field::share), 0.75, 1e-9);  // 3x the other's GB/s
  EXPECT_NEAR(*out[1].get(engine_field::share), 0.25, 1e-9);
  const Record& total = out[2];
  EXPECT_EQ(total.get(engine_field::client), -1);
  EXPECT_EQ(total.bytes, 2 * b);
  EXPECT_EQ(total.get(engine_field::requests), 8);
  // each loop ends with the slowest client: 3000 and 2000 us, median 2500
  EXPECT_DOUBLE_EQ(total.time_us.median, 2500);
  EXPECT_NEAR(*total.get(engine_field::fairness), jain_index({b / 1000e3, b / 3000e3}), 1e-12);
  EXPECT_EQ(total.verified, true);
}

TEST(EngineFanin, AFailedClientFailsTheTotal) {
  std::vector<Record> clients{client_record(1000, 1 << 20), client_record(1000, 1 << 20)};
  clients[1].status = Status::failed;
  clients[1].reason = "the peer failed";
  const auto out = fanin_records(clients, {{1000, 1000}, {}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].status, Status::failed);
  EXPECT_NE(out[2].reason.find("client 1: the peer failed"), std::string::npos);
  EXPECT_FALSE(out[0].get(engine_field::share).has_value());
}

// A lane's NIC fields: the asked NIC's deltas, the WARN where its bytes went
// through another NIC, none where its NIC has no counters.
TEST(EngineNic, ALaneRecordsItsNicAndTheWarn) {
  const NicDelta xb0{"xb0", "netdev", 300, 1200, true, false, {{"rx_dropped", 2}}};
  const NicDelta xb1{"xb1", "netdev", 81821, 50832527, true, false, {}};
  const Bytes lane = 50'000'000;
  Record r;
  EXPECT_EQ(set_nic_fields(r, {xb0, xb1}, "xb1", lane, 100'000), "");
  EXPECT_EQ(r.get(engine_field::nic), "xb1");
  EXPECT_EQ(r.get(engine_field::nic_rx_bytes), 50832527);
  EXPECT_EQ(r.get(engine_field::nic_tx_bytes), 81821);
  EXPECT_NEAR(*r.get(engine_field::wire_gbps), 50832527 / 100e6, 1e-9);  // B/us / 1e3 = GB/s
  EXPECT_EQ(r.get(engine_field::nic_errors), "");
  EXPECT_FALSE(r.get(engine_field::nic_warning));

  Record astray;
  const std::string warn = set_nic_fields(astray, {xb0, xb1}, "xb0", lane, 100'000);
  EXPECT_NE(warn.find("went through xb1"), std::string::npos) << warn;
  EXPECT_EQ(astray.get(engine_field::nic_warning), warn);
  EXPECT_EQ(astray.get(engine_field::nic_rx_bytes), 1200);
  EXPECT_EQ(astray.get(engine_field::nic_errors), "rx_dropped +2");

  Record none;  // no counters for the lane's NIC: no fields at all
  EXPECT_EQ(set_nic_fields(none, {xb1}, "mlx5_0:1", lane, 100'000), "");
  EXPECT_TRUE(none.extra.empty());
  Record shm;  // no --nic and no NIC moved half the bytes (shared memory)
  EXPECT_EQ(set_nic_fields(shm, {xb0}, "", lane, 100'000), "");
  EXPECT_TRUE(shm.extra.empty());
  Record busiest;  // no --nic: the NIC that carried them, never a WARN
  EXPECT_EQ(set_nic_fields(busiest, {xb0, xb1}, "", lane, 100'000), "");
  EXPECT_EQ(busiest.get(engine_field::nic), "xb1");
}

}  // namespace xb
