#pragma once
// The CANN entry points the Ascend backend uses, opened with dlopen at run
// time: never a link-time dependency, no CANN header. Prototypes and enum
// values are written from CANN's public AscendCL and HCCL API reference.
// The table carries no version number: it is built with its loader, and the
// libraries report none to hold it against. What can be checked is: a
// missing required entry point fails the load, naming the symbol (a changed
// prototype cannot be seen from outside).
#include <cstddef>
#include <cstdint>
#include <string>

namespace xb::ascend {

using aclError = int;
using aclrtStream = void*;
using aclrtEvent = void*;
inline constexpr aclError kAclSuccess = 0;                // ACL_SUCCESS
inline constexpr aclError kAclRepeatInitialize = 100002;  // ACL_ERROR_REPEAT_INITIALIZE

enum AclMemcpyKind : int {  // aclrtMemcpyKind
  kHostToHost = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
};
inline constexpr int kAclMallocHugeFirst = 0;              // ACL_MEM_MALLOC_HUGE_FIRST
inline constexpr int kAclMallocHugeFirstP2p = 3;           // ACL_MEM_MALLOC_HUGE_FIRST_P2P
inline constexpr int kAclHbmMem = 1;                       // aclrtMemAttr ACL_HBM_MEM
inline constexpr int kAclEventComplete = 1;                // ACL_EVENT_RECORDED_STATUS_COMPLETE
inline constexpr aclError kAclStreamSyncTimeout = 507046;  // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT

// aclrtGetDevicesTopo's answer (ACL_RT_DEVS_TOPOLOGY_*).
enum AclTopology : std::uint64_t {
  kTopoHccs = 0x01,    // HCCS
  kTopoPix = 0x02,     // one PCIe switch
  kTopoPib = 0x04,     // reserved
  kTopoPhb = 0x08,     // a PCIe host bridge
  kTopoSys = 0x10,     // SMP, across NUMA nodes
  kTopoSio = 0x20,     // on-chip: the two dies of one chip
  kTopoHccsSw = 0x40,  // an HCCS switch
};

struct AclApi {
  aclError (*aclInit)(const char* config);
  aclError (*aclFinalize)();
  aclError (*aclrtGetDeviceCount)(std::uint32_t* count);
  aclError (*aclrtSetDevice)(std::int32_t device);
  aclError (*aclrtResetDevice)(std::int32_t device);
  aclError (*aclrtMalloc)(void** ptr, std::size_t size, int policy);
  aclError (*aclrtFree)(void* ptr);
  aclError (*aclrtMallocHost)(void** ptr, std::size_t size);
  aclError (*aclrtFreeHost)(void* ptr);
  aclError (*aclrtMemcpy)(void* dst, std::size_t dst_max, const void* src, std::size_t count,
                          int kind);
  aclError (*aclrtMemcpyAsync)(void* dst, std::size_t dst_max, const void* src, std::size_t count,
                               int kind, aclrtStream stream);
  aclError (*aclrtGetMemInfo)(int attr, std::size_t* free, std::size_t* total);
  aclError (*aclrtCreateStream)(aclrtStream* stream);
  aclError (*aclrtDestroyStream)(aclrtStream stream);
  aclError (*aclrtSynchronizeStream)(aclrtStream stream);
  aclError (*aclrtCreateEvent)(aclrtEvent* event);
  aclError (*aclrtDestroyEvent)(aclrtEvent event);
  aclError (*aclrtRecordEvent)(aclrtEvent event, aclrtStream stream);
  aclError (*aclrtSynchronizeEvent)(aclrtEvent event);
  aclError (*aclrtQueryEventStatus)(aclrtEvent event, int* status);
  aclError (*aclrtEventElapsedTime)(float* ms, aclrtEvent start, aclrtEvent end);
  aclError (*aclrtDeviceCanAccessPeer)(std::int32_t* can, std::int32_t device, std::int32_t peer);
  aclError (*aclrtDeviceEnablePeerAccess)(std::int32_t peer, std::uint32_t flags);
  // Optional (absent in older CANN): nullptr when missing.
  const char* (*aclrtGetSocName)();
  const char* (*aclGetRecentErrMsg)();
  aclError (*aclrtGetDevicesTopo)(std::uint32_t device, std::uint32_t other, std::uint64_t* value);
  // timeout_ms -1: forever; kAclStreamSyncTimeout when the work is not done.
  aclError (*aclrtSynchronizeStreamWithTimeout)(aclrtStream stream, std::int32_t timeout_ms);
};

// HCCL (libhccl.so).
using HcclResult = int;
using HcclComm = void*;
inline constexpr HcclResult kHcclSuccess = 0;
inline constexpr std::size_t kHcclRootInfoBytes = 4108;  // HCCL_ROOT_INFO_BYTES
struct HcclRootInfo {
  char internal[kHcclRootInfoBytes];
};
enum HcclDataType : int {
  kHcclInt8 = 0,
  kHcclInt16 = 1,
  kHcclInt32 = 2,
  kHcclFp16 = 3,
  kHcclFp32 = 4,
  kHcclInt64 = 5,
  kHcclUint64 = 6,
  kHcclUint8 = 7,
  kHcclUint16 = 8,
  kHcclUint32 = 9,
  kHcclFp64 = 10,
  kHcclBf16 = 11,
};
enum HcclReduceOp : int { kHcclSum = 0, kHcclProd = 1, kHcclMax = 2, kHcclMin = 3 };
enum HcclSendRecvType : int { kHcclSend = 0, kHcclRecv = 1 };
struct HcclSendRecvItem {
  HcclSendRecvType type;
  void* buf;
  std::uint64_t count;
  HcclDataType dtype;
  std::uint32_t remote_rank;
};

struct HcclApi {
  HcclResult (*HcclGetRootInfo)(HcclRootInfo* info);
  HcclResult (*HcclCommInitRootInfo)(std::uint32_t nranks, const HcclRootInfo* info,
                                     std::uint32_t rank, HcclComm* comm);
  HcclResult (*HcclCommDestroy)(HcclComm comm);
  HcclResult (*HcclAllReduce)(void* send, void* recv, std::uint64_t count, HcclDataType t,
                              HcclReduceOp op, HcclComm comm, aclrtStream stream);
  HcclResult (*HcclAllGather)(void* send, void* recv, std::uint64_t send_count, HcclDataType t,
                              HcclComm comm, aclrtStream stream);
  HcclResult (*HcclReduceScatter)(void* send, void* recv, std::uint64_t recv_count, HcclDataType t,
                                  HcclReduceOp op, HcclComm comm, aclrtStream stream);
  HcclResult (*HcclBroadcast)(void* buf, std::uint64_t count, HcclDataType t, std::uint32_t root,
                              HcclComm comm, aclrtStream stream);
  HcclResult (*HcclReduce)(void* send, void* recv, std::uint64_t count, HcclDataType t,
                           HcclReduceOp op, std::uint32_t root, HcclComm comm, aclrtStream stream);
  HcclResult (*HcclAlltoAll)(const void* send, std::uint64_t send_count, HcclDataType send_type,
                             const void* recv, std::uint64_t recv_count, HcclDataType recv_type,
                             HcclComm comm, aclrtStream stream);
  HcclResult (*HcclBatchSendRecv)(HcclSendRecvItem* items, std::uint32_t n, HcclComm comm,
                                  aclrtStream stream);
  // Optional: nullptr when missing.
  const char* (*HcclGetErrorString)(HcclResult code);
  // Optional (not in every CANN's libhccl): nullptr when missing. The
  // root's `send` holds nranks * recv_count elements; other ranks' may be
  // null. HCCL's public API has no gather.
  HcclResult (*HcclScatter)(void* send, void* recv, std::uint64_t recv_count, HcclDataType t,
                            std::uint32_t root, HcclComm comm, aclrtStream stream);
  // Counts and displacements: host arrays of nranks uint64_t, in elements.
  HcclResult (*HcclAlltoAllV)(const void* send, const void* send_counts, const void* send_displs,
                              HcclDataType send_type, const void* recv, const void* recv_counts,
                              const void* recv_displs, HcclDataType recv_type, HcclComm comm,
                              aclrtStream stream);
};

// The result of opening a library: the table, or why not ("libascendcl.so:
// not found in ..." / "libascendcl.so: no symbol aclrtEventElapsedTime").
template <class Api>
struct Loaded {
  const Api* api = nullptr;
  std::string path;   // the file that was opened
  std::string error;  // empty on success
};

// Opened once per process, on first use. Search order: ASCEND_HOME_PATH's
// lib64, ASCEND_TOOLKIT_HOME's lib64, /usr/local/Ascend/ascend-toolkit/latest
// and /usr/local/Ascend/latest lib64, then the plain name (LD_LIBRARY_PATH,
// the loader's cache).
const Loaded<AclApi>& acl();
const Loaded<HcclApi>& hccl();

// "aclrtMalloc failed: 207001 (<recent error message>)".
std::string acl_error_text(const char* what, aclError e);

// aclrtGetDevicesTopo's answer as a link class, named as npu-smi info -t
// topo names it: "SIO (the two dies of one chip)", "HCCS", "PIX (one PCIe
// switch)", ... One class per answer: the first bit set in HCCL's own order
// (HCCS, PIX, PIB, PHB, SYS, SIO, HCCS_SW) where several are.
std::string topology_name(std::uint64_t value);

}  // namespace xb::ascend
