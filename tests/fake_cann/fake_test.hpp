#pragma once
// What the tests of the fake CANN runtime share: the fake's error codes they
// expect, its own entry points (fake_runtime.hpp) found by name in the
// loaded library, the runtime brought up through the backend, and device
// memory for a scope.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "backend/ascend/ascend_backend.hpp"
#include "backend/ascend/ascend_internal.hpp"
#include "fake_runtime.hpp"

namespace xb {

constexpr int kNoContext = 107002, kStreamContext = 107003, kInvalidParam = 100000;
constexpr int kInjected = 507000, kStreamSyncTimeout = 507046, kEventSyncTimeout = 507047;
constexpr int kHcclPara = 1, kHcclInternal = 4, kHcclRuntime = 15;

// An entry point of the loaded fake, by name (nullptr when it lacks it).
template <class Fn>
Fn sym(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// How many rules were broken; the first message into *first.
inline int rules_broken(std::string* first = nullptr) {
  auto fn = sym<decltype(&fake_acl_rules_broken)>("fake_acl_rules_broken");
  if (!fn) return -1;
  char buf[512] = {};
  const int n = fn(buf, sizeof buf);
  if (first) *first = buf;
  return n;
}
// How much advice was not followed; the first message into *first.
inline int advice(std::string* first = nullptr) {
  auto fn = sym<decltype(&fake_acl_advice)>("fake_acl_advice");
  if (!fn) return -1;
  char buf[512] = {};
  const int n = fn(buf, sizeof buf);
  if (first) *first = buf;
  return n;
}
inline void clear_rules() {
  auto fn = sym<decltype(&fake_acl_clear_rules)>("fake_acl_clear_rules");
  ASSERT_NE(fn, nullptr);
  fn();
}
inline int current_device() {
  auto fn = sym<decltype(&fake_acl_current_device)>("fake_acl_current_device");
  return fn ? fn() : -2;
}

// The runtime, initialised.
inline const ascend::AclApi& acl_up() {
  EXPECT_TRUE(probe_ascend().available);
  return ascend::api();
}

// aclrtMalloc on `device` (made current), freed at the end of the scope.
struct DeviceMemory {
  void* p = nullptr;
  DeviceMemory(int device, std::size_t n, int policy = 0) {
    EXPECT_EQ(ascend::api().aclrtSetDevice(device), 0);
    EXPECT_EQ(ascend::api().aclrtMalloc(&p, n, policy), 0);
  }
  ~DeviceMemory() { (void)ascend::api().aclrtFree(p); }
};

}  // namespace xb
