// Part of the fake HCCL (libhccl.so; its rules are listed in fake_hccl.cpp):
// the element types of its collectives, their sizes, the reductions HCCL
// takes, element loads and stores (fp16 and bf16 through xferbench's
// coll/fp16.hpp), alignment, and HcclGetErrorString's text for its codes.
#include "fake_hccl_types.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "coll/fp16.hpp"

namespace fake_hccl {

std::size_t type_size(int t) {
  switch (t) {
    case 0:
    case 7:
      return 1;  // int8, uint8
    case 1:
    case 3:
    case 8:
    case 11:
      return 2;  // int16, fp16, uint16, bf16
    case 2:
    case 4:
    case 9:
      return 4;  // int32, fp32, uint32
    case 5:
    case 6:
    case 10:
      return 8;  // int64, uint64, fp64
    default:
      return 0;
  }
}

// HCCL's reduction types; prod takes neither int16 nor bf16.
bool reducible(int t, int op) {
  if (op < 0 || op > 3) return false;
  if (op == 1 && (t == 1 || t == 11)) return false;
  return t == 0 || t == 1 || t == 2 || t == 3 || t == 4 || t == 5 || t == 11;
}

double load(int t, const char* p, std::size_t i) {
  switch (t) {
    case 0: {
      std::int8_t v;
      std::memcpy(&v, p + i, 1);
      return v;
    }
    case 1: {
      std::int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case 2: {
      std::int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case 5: {
      std::int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
    case 4: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case 3: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return xb::half_to_float(v);
    }
    case 11: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return xb::bf16_to_float(v);
    }
    default:
      return 0;
  }
}

void store(int t, char* p, std::size_t i, double x) {
  switch (t) {
    case 0: {
      auto v = static_cast<std::int8_t>(x);
      std::memcpy(p + i, &v, 1);
      break;
    }
    case 1: {
      auto v = static_cast<std::int16_t>(x);
      std::memcpy(p + 2 * i, &v, 2);
      break;
    }
    case 2: {
      auto v = static_cast<std::int32_t>(x);
      std::memcpy(p + 4 * i, &v, 4);
      break;
    }
    case 5: {
      auto v = static_cast<std::int64_t>(x);
      std::memcpy(p + 8 * i, &v, 8);
      break;
    }
    case 4: {
      auto v = static_cast<float>(x);
      std::memcpy(p + 4 * i, &v, 4);
      break;
    }
    case 3: {
      auto v = xb::float_to_half(static_cast<float>(x));
      std::memcpy(p + 2 * i, &v, 2);
      break;
    }
    case 11: {
      auto v = xb::float_to_bf16(static_cast<float>(x));
      std::memcpy(p + 2 * i, &v, 2);
      break;
    }
    default:
      break;
  }
}

// HCCL's buffers are aligned to their element size (null ones are not looked at).
bool misaligned(int t, const void* a, const void* b) {
  const std::size_t size = type_size(t);
  return reinterpret_cast<std::uintptr_t>(a) % size || reinterpret_cast<std::uintptr_t>(b) % size;
}

}  // namespace fake_hccl

using namespace fake_hccl;

extern "C" {

const char* HcclGetErrorString(int code) {
  switch (code) {
    case kPara:
      return "parameter error";
    case kInternal:
      return "internal error";
    case kNotSupport:
      return "not supported";
    case kTimeout:
      return "timeout";
    case kRuntime:
      return "call runtime api fail";
    default:
      return "error";
  }
}

}  // extern "C"
