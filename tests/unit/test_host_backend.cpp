#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <numeric>

#include "backend/backend.hpp"
#include "backend/host/host_internal.hpp"
#include "backend/select/select.hpp"
#include "core/error.hpp"

namespace xb {
namespace {

struct EnvDevices {
  explicit EnvDevices(const char* n) { setenv("XFERBENCH_HOST_DEVICES", n, 1); }
  ~EnvDevices() { unsetenv("XFERBENCH_HOST_DEVICES"); }
};

std::vector<std::byte> bytes_of(Backend& b, const Buffer& buf) {
  std::vector<std::byte> v(buf.size());
  b.read(buf, 0, v);
  return v;
}

void fill_iota(Backend& b, Buffer& buf, unsigned char start) {
  std::vector<std::byte> v(buf.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::byte>((start + i * 7) & 0xFF);
  b.write(buf, 0, v);
}

}  // namespace

TEST(HostBackend, DevicesAreNumaNodesOrTheRequestedCount) {
  auto one = make_backend("host");
  EXPECT_GE(one->devices().size(), 1u);
  EXPECT_EQ(one->name(), "host");
  EnvDevices env("3");
  auto three = make_backend("host");
  ASSERT_EQ(three->devices().size(), 3u);
  EXPECT_EQ(three->devices()[2].id, 2);
  EXPECT_TRUE(three->peer_access(0, 2).ok);
  EXPECT_FALSE(three->peer_access(1, 1).ok);
  EXPECT_FALSE(three->peer_access(0, 9).ok);
  EXPECT_FALSE(three->link_type(0, 1).empty());
}

TEST(HostBackend, RejectsBadDeviceCount) {
  EnvDevices env("0");
  EXPECT_THROW(make_backend("host"), UsageError);
}

TEST(HostBackend, AllocatesEveryKindAndRoundTrips) {
  auto b = make_backend("host");
  for (MemKind k : {MemKind::device, MemKind::pinned, MemKind::pageable}) {
    auto buf = b->allocate(k, 0, 10000);
    EXPECT_EQ(buf->size(), 10000u);
    EXPECT_EQ(buf->kind(), k);
    fill_iota(*b, *buf, 3);
    const auto v = bytes_of(*b, *buf);
    EXPECT_EQ(v[9999], static_cast<std::byte>((3 + 9999 * 7) & 0xFF));
  }
  EXPECT_THROW(b->allocate(MemKind::device, 5, 64), UsageError);
  auto small = b->allocate(MemKind::pageable, -1, 16);
  std::vector<std::byte> big(32);
  EXPECT_THROW(b->write(*small, 0, big), RuntimeError);
}

TEST(HostBackend, PiecesCoverTheRangeExactly) {
  for (Bytes n : {0ULL, 1ULL, 63ULL, 64ULL, 1000ULL, 1ULL << 20}) {
    for (int parts : {1, 2, 3, 7}) {
      Bytes next = 0;
      for (int i = 0; i < parts; ++i) {
        const auto p = host::piece_of(n, i, parts);
        if (p.length == 0) continue;
        EXPECT_EQ(p.offset, next);
        next += p.length;
      }
      EXPECT_EQ(next, n) << n << " " << parts;
    }
  }
}

TEST(HostBackend, StreamCopiesAsynchronouslyAndEventsOrder) {
  auto b = make_backend("host");
  auto src = b->allocate(MemKind::device, 0, 1 << 20);
  auto dst = b->allocate(MemKind::pinned, -1, 1 << 20);
  fill_iota(*b, *src, 1);
  auto s = b->create_stream(0, CopierOptions{2, 4096});
  auto start = b->create_event(), stop = b->create_event();
  s->record(*start);
  s->copy_async(*src, 0, *dst, 0, 1 << 20);
  s->record(*stop);
  stop->synchronize();
  EXPECT_TRUE(start->query());
  EXPECT_GE(stop->elapsed_us_since(*start), 0.0);
  EXPECT_EQ(bytes_of(*b, *src), bytes_of(*b, *dst));
  EXPECT_THROW(s->copy_async(*src, 1, *dst, 0, 1 << 20), RuntimeError);
}

class HostCopier : public ::testing::TestWithParam<Method> {};

TEST_P(HostCopier, ConcurrentOpsCopyEveryByteAndAreTimed) {
  EnvDevices env("2");
  auto b = make_backend("host");
  const Bytes n = 3 * 65536 + 17;  // not a multiple of the tile or the pieces
  auto a0 = b->allocate(MemKind::device, 0, n), a1 = b->allocate(MemKind::device, 1, n);
  auto b0 = b->allocate(MemKind::device, 0, n), b1 = b->allocate(MemKind::device, 1, n);
  fill_iota(*b, *a0, 5);
  fill_iota(*b, *b1, 9);
  auto c = b->copier(GetParam(), CopierOptions{2, 4096});
  EXPECT_EQ(c->method(), GetParam());
  const CopyOp ops[] = {{a0.get(), a1.get(), n}, {b1.get(), b0.get(), n}};
  const CopyTiming t = c->run(ops);
  ASSERT_EQ(t.op_us.size(), 2u);
  EXPECT_GT(t.op_us[0], 0.0);
  EXPECT_GE(t.batch_us, std::max(t.op_us[0], t.op_us[1]));
  EXPECT_EQ(bytes_of(*b, *a0), bytes_of(*b, *a1));
  EXPECT_EQ(bytes_of(*b, *b1), bytes_of(*b, *b0));
  const CopyOp too_big[] = {{a0.get(), a1.get(), n + 1}};
  EXPECT_THROW(c->run(too_big), RuntimeError);
  EXPECT_NO_THROW(c->run(ops));  // a rejected batch leaves the copier usable
}

INSTANTIATE_TEST_SUITE_P(Methods, HostCopier, ::testing::Values(Method::dma, Method::core),
                         [](const auto& p) { return std::string(to_string(p.param)); });

TEST(HostBackend, CopierOptionsAreChecked) {
  auto b = make_backend("host");
  EXPECT_THROW(b->copier(Method::dma, CopierOptions{-1, 4096}), UsageError);
  EXPECT_NO_THROW(b->copier(Method::dma, CopierOptions{0, 4096}));  // 0: the default, 1 worker
  EXPECT_THROW(b->copier(Method::core, CopierOptions{1, 8}), UsageError);
}

TEST(Backends, UnknownIsAUsageError) {
  EXPECT_THROW(make_backend("nope"), UsageError);
  EXPECT_EQ(make_backend("host")->name(), "host");
}

}  // namespace xb
