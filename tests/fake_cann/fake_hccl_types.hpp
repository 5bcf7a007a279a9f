#pragma once
// Part of the fake HCCL (libhccl.so, see fake_hccl.cpp): its error codes and
// the element types of its collectives (sizes, the reductions HCCL takes,
// element loads and stores, alignment), in fake_hccl_types.cpp. Hidden: none
// of it is an entry point of libhccl.so.
#include <cstddef>

#pragma GCC visibility push(hidden)
namespace fake_hccl {

// HcclResult: HCCL_SUCCESS, HCCL_E_PARA, HCCL_E_INTERNAL, HCCL_E_NOT_SUPPORT,
// HCCL_E_TIMEOUT, HCCL_E_RUNTIME.
constexpr int kOk = 0, kPara = 1, kInternal = 4, kNotSupport = 5, kTimeout = 9, kRuntime = 15;

// Bytes of an element of HcclDataType t; 0 for no such type.
std::size_t type_size(int t);
// HCCL's reduction types; prod takes neither int16 nor bf16.
bool reducible(int t, int op);
// Element i of type t at p, as a double; and x stored there in the type.
double load(int t, const char* p, std::size_t i);
void store(int t, char* p, std::size_t i, double x);
// HCCL's buffers are aligned to their element size (null ones are not looked at).
bool misaligned(int t, const void* a, const void* b = nullptr);

}  // namespace fake_hccl
#pragma GCC visibility pop
