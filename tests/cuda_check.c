/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_check.c: holds the project's own declarations of the CUDA driver API
 * (lib/gpu/cuda_api.h, lib/gpu/cuda_pfn.h) against a toolkit's cuda.h and
 * cudaTypedefs.h at compile time. `make cuda-check` compiles it where the
 * toolkit is installed (make check runs it first); nothing runs. Every
 * difference fails the compile with a _Static_assert that names the
 * declaration, for example
 *   error: static assertion failed: "CUmemAllocationProp.type: offset
 *   differs from the toolkit's cuda.h"
 *
 * The project's headers use CUDA's own names, so they cannot sit beside
 * cuda.h as they are. The steps:
 *   1. The toolkit's cuda.h and cudaTypedefs.h: the reference.
 *   2. lib/gpu/cudrv.h over them, for GPUIPC_CU_FUNCS, the entry points the
 *      program resolves. Its includes of the project's headers are held back
 *      by defining their guards.
 *   3. The function-pointer types: cudaTypedefs.h's are first given tk_
 *      names; then cuda_pfn.h is included inside a function body, where its
 *      typedefs shadow the toolkit's PFN_ names while the parameter types
 *      they name (CUresult, CUmemAllocationProp, ...) are still the
 *      toolkit's. Each entry of GPUIPC_CU_FUNCS is compared with
 *      __builtin_types_compatible_p. A type in cuda_pfn.h that no entry uses
 *      is left unused, which -Werror (-Wunused-local-typedefs) makes an
 *      error: the file declares exactly the table's types. (An entry with
 *      no type there would see the toolkit's here; the program's own build
 *      fails on it instead.)
 *   4. The toolkit's types and constants are given tk_ names (typedefs and
 *      enum constants), then cuda_api.h is included with every name it
 *      declares renamed by a macro to chk_<name>, so that both sets exist
 *      side by side. The names below then mean the project's declarations,
 *      and tk_<name> the toolkit's: scalar typedefs are compared as types,
 *      enums by size and signedness, constants by value, structs by size,
 *      alignment and each member's offset and size.
 * A declaration added to cuda_api.h without a rename here collides with
 * cuda.h's (an enumerator, a struct or enum tag, a different typedef), so
 * the check cannot silently miss it; add it to the rename list and to its
 * CHK_ list below. */
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

/* ---- 2. The table of entry points, over the toolkit's declarations ----------------------- */

#define GPUIPC_CUDA_API_H
#define GPUIPC_CUDA_PFN_H
#include "gpu/cudrv.h"
#undef GPUIPC_CUDA_PFN_H

/* ---- 3. The function-pointer types ------------------------------------------------------- */

#define CHK_TK_PFN(fn, version) typedef PFN_##fn##_v##version tk_PFN_##fn##_v##version;
GPUIPC_CU_FUNCS(CHK_TK_PFN)

#define CHK_PFN(fn, version)                                                               \
    _Static_assert(__builtin_types_compatible_p(PFN_##fn##_v##version,                     \
                                                tk_PFN_##fn##_v##version),                 \
                   "PFN_" #fn "_v" #version ": not the type cudaTypedefs.h gives it");

/* The shadowing is the point here, so -Wshadow (which clang applies to
 * typedefs) is quiet for it. cuda_pfn.h's own include of cuda_api.h is
 * skipped (its guard is still defined), so the types it names are the
 * toolkit's. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
__attribute__((unused)) static void check_pfn_types(void)
{
#include "gpu/cuda_pfn.h"
    GPUIPC_CU_FUNCS(CHK_PFN)
}
#pragma GCC diagnostic pop

/* cudrv.c calls cuGetProcAddress_v2 through its own get_proc_fn type, which
 * is not in the table (it resolves the table). This is that type, spelled as
 * cudrv.c spells it. */
_Static_assert(__builtin_types_compatible_p(CUresult (*)(const char *, void **, int,
                                                          cuuint64_t,
                                                          CUdriverProcAddressQueryResult *),
                                            PFN_cuGetProcAddress_v12000),
               "cudrv.c's get_proc_fn: not cudaTypedefs.h's PFN_cuGetProcAddress_v12000");

/* The CUresult values diagnose.h matches, in a layer without a driver
 * header. */
#include "session/diagnose.h"
_Static_assert(GPUIPC_DIAG_CU_NO_DEVICE == CUDA_ERROR_NO_DEVICE, "GPUIPC_DIAG_CU_NO_DEVICE");
_Static_assert(GPUIPC_DIAG_CU_INVALID_DEVICE == CUDA_ERROR_INVALID_DEVICE,
               "GPUIPC_DIAG_CU_INVALID_DEVICE");
_Static_assert(GPUIPC_DIAG_CU_INVALID_CONTEXT == CUDA_ERROR_INVALID_CONTEXT,
               "GPUIPC_DIAG_CU_INVALID_CONTEXT");
_Static_assert(GPUIPC_DIAG_CU_OPERATING_SYSTEM == CUDA_ERROR_OPERATING_SYSTEM,
               "GPUIPC_DIAG_CU_OPERATING_SYSTEM");
_Static_assert(GPUIPC_DIAG_CU_INVALID_HANDLE == CUDA_ERROR_INVALID_HANDLE,
               "GPUIPC_DIAG_CU_INVALID_HANDLE");
_Static_assert(GPUIPC_DIAG_CU_NOT_PERMITTED == CUDA_ERROR_NOT_PERMITTED,
               "GPUIPC_DIAG_CU_NOT_PERMITTED");
_Static_assert(GPUIPC_DIAG_CU_NOT_SUPPORTED == CUDA_ERROR_NOT_SUPPORTED,
               "GPUIPC_DIAG_CU_NOT_SUPPORTED");

#undef GPUIPC_CUDA_API_H

/* ---- 4. Types, constants and structs ----------------------------------------------------- */

/* Every name cuda_api.h declares, by kind. */
#define CHK_SCALARS(X)                                                                     \
    X(cuuint64_t) X(CUdeviceptr) X(CUdevice) X(CUcontext) X(CUmodule) X(CUfunction)        \
    X(CUstream) X(CUevent) X(CUmemoryPool) X(CUmemGenericAllocationHandle)

#define CHK_ENUMS(X)                                                                       \
    X(CUresult) X(CUdevice_attribute) X(CUdevice_P2PAttribute) X(CUipcMem_flags)          \
    X(CUpointer_attribute)                                                                 \
    X(CUevent_flags) X(CUcomputemode)                                                      \
    X(CUdriverProcAddress_flags) X(CUdriverProcAddressQueryResult)                          \
    X(CUmemAllocationHandleType) X(CUmemAccess_flags) X(CUmemLocationType)                  \
    X(CUmemAllocationType) X(CUmemAllocationGranularity_flags) X(CUmemAllocationCompType)

#define CHK_STRUCTS(X)                                                                     \
    X(CUuuid) X(CUipcMemHandle) X(CUipcEventHandle) X(CUmemFabricHandle) X(CUmemLocation)   \
    X(CUmemAllocationProp) X(CUmemAccessDesc) X(CUmemPoolProps) X(CUmemPoolPtrExportData)

#define CHK_CONSTANTS(X)                                                                   \
    X(CUDA_SUCCESS) X(CUDA_ERROR_INVALID_VALUE) X(CUDA_ERROR_OUT_OF_MEMORY)                 \
    X(CUDA_ERROR_NOT_INITIALIZED) X(CUDA_ERROR_NO_DEVICE) X(CUDA_ERROR_INVALID_DEVICE)      \
    X(CUDA_ERROR_INVALID_PTX) X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)                          \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) X(CUDA_ERROR_OPERATING_SYSTEM)                    \
    X(CUDA_ERROR_INVALID_HANDLE)                                                           \
    X(CUDA_ERROR_ILLEGAL_ADDRESS)                                                          \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED) X(CUDA_ERROR_LAUNCH_FAILED)                          \
    X(CUDA_ERROR_NOT_PERMITTED) X(CUDA_ERROR_NOT_SUPPORTED)                                 \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)       \
    X(CUDA_ERROR_UNKNOWN)                                                                  \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) X(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)        \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE) X(CU_COMPUTEMODE_DEFAULT)                           \
    X(CU_COMPUTEMODE_PROHIBITED) X(CU_COMPUTEMODE_EXCLUSIVE_PROCESS)                        \
    X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)                                               \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)                                         \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)                                         \
    X(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)                              \
    X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)                      \
    X(CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED)                                    \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)                                           \
    X(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)                                   \
    X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)                                     \
    X(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED) X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)          \
    X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)                    \
    X(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) X(CU_EVENT_DEFAULT)                               \
    X(CU_EVENT_DISABLE_TIMING) X(CU_EVENT_INTERPROCESS)                                     \
    X(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED)                                              \
    X(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK) X(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED) \
    X(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)                                      \
    X(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)                                                  \
    X(CU_GET_PROC_ADDRESS_DEFAULT) X(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)                  \
    X(CU_MEM_HANDLE_TYPE_NONE) X(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)                  \
    X(CU_MEM_HANDLE_TYPE_FABRIC) X(CU_MEM_ACCESS_FLAGS_PROT_READ)                           \
    X(CU_MEM_ACCESS_FLAGS_PROT_READWRITE) X(CU_MEM_LOCATION_TYPE_DEVICE)                    \
    X(CU_MEM_LOCATION_TYPE_HOST_NUMA) X(CU_MEM_ALLOCATION_TYPE_PINNED)                      \
    X(CU_MEM_ALLOC_GRANULARITY_MINIMUM) X(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)             \
    X(CU_MEM_ALLOCATION_COMP_NONE) X(CU_MEM_ALLOCATION_COMP_GENERIC)                        \
    X(CU_IPC_HANDLE_SIZE)

/* Every member of every struct, nested ones by their path. */
#define CHK_MEMBERS(X)                                                                     \
    X(CUuuid, bytes)                                                                       \
    X(CUipcMemHandle, reserved)                                                            \
    X(CUipcEventHandle, reserved)                                                          \
    X(CUmemFabricHandle, data)                                                             \
    X(CUmemLocation, type) X(CUmemLocation, id)                                            \
    X(CUmemAllocationProp, type) X(CUmemAllocationProp, requestedHandleTypes)              \
    X(CUmemAllocationProp, location) X(CUmemAllocationProp, win32HandleMetaData)           \
    X(CUmemAllocationProp, allocFlags)                                                     \
    X(CUmemAllocationProp, allocFlags.compressionType)                                     \
    X(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)                                \
    X(CUmemAllocationProp, allocFlags.usage) X(CUmemAllocationProp, allocFlags.reserved)   \
    X(CUmemAccessDesc, location) X(CUmemAccessDesc, flags)                                 \
    X(CUmemPoolProps, allocType) X(CUmemPoolProps, handleTypes)                            \
    X(CUmemPoolProps, location) X(CUmemPoolProps, win32SecurityAttributes)                 \
    X(CUmemPoolProps, maxSize) X(CUmemPoolProps, usage) X(CUmemPoolProps, reserved)        \
    X(CUmemPoolPtrExportData, reserved)

/* The toolkit's, under tk_ names, before the renames below hide them. */
#define CHK_TK_TYPE(name) typedef name tk_##name;
#define CHK_TK_CONSTANT(name) enum { tk_##name = name };
CHK_SCALARS(CHK_TK_TYPE)
CHK_ENUMS(CHK_TK_TYPE)
CHK_STRUCTS(CHK_TK_TYPE)
CHK_CONSTANTS(CHK_TK_CONSTANT)

/* cuda_api.h defines it again; compared below as a constant. CUDAAPI is
 * left defined: a definition that differs from cuda.h's is a macro
 * redefinition, an error under -Werror. */
#undef CU_IPC_HANDLE_SIZE

/* The project's, under chk_ names. Struct and enum tags are renamed too:
 * they would otherwise collide with cuda.h's. Opaque handle tags
 * (struct CUctx_st, ...) are not: both sides must point to the same one. */
#define cuuint64_t chk_cuuint64_t
#define CUdeviceptr chk_CUdeviceptr
#define CUdevice chk_CUdevice
#define CUcontext chk_CUcontext
#define CUmodule chk_CUmodule
#define CUfunction chk_CUfunction
#define CUstream chk_CUstream
#define CUevent chk_CUevent
#define CUmemoryPool chk_CUmemoryPool
#define CUmemGenericAllocationHandle chk_CUmemGenericAllocationHandle

#define cudaError_enum chk_cudaError_enum
#define CUresult chk_CUresult
#define CUDA_SUCCESS chk_CUDA_SUCCESS
#define CUDA_ERROR_INVALID_VALUE chk_CUDA_ERROR_INVALID_VALUE
#define CUDA_ERROR_OUT_OF_MEMORY chk_CUDA_ERROR_OUT_OF_MEMORY
#define CUDA_ERROR_NOT_INITIALIZED chk_CUDA_ERROR_NOT_INITIALIZED
#define CUDA_ERROR_NO_DEVICE chk_CUDA_ERROR_NO_DEVICE
#define CUDA_ERROR_INVALID_DEVICE chk_CUDA_ERROR_INVALID_DEVICE
#define CUDA_ERROR_INVALID_PTX chk_CUDA_ERROR_INVALID_PTX
#define CUDA_ERROR_JIT_COMPILER_NOT_FOUND chk_CUDA_ERROR_JIT_COMPILER_NOT_FOUND
#define CUDA_ERROR_UNSUPPORTED_PTX_VERSION chk_CUDA_ERROR_UNSUPPORTED_PTX_VERSION
#define CUDA_ERROR_OPERATING_SYSTEM chk_CUDA_ERROR_OPERATING_SYSTEM
#define CUDA_ERROR_INVALID_HANDLE chk_CUDA_ERROR_INVALID_HANDLE
#define CUDA_ERROR_ILLEGAL_ADDRESS chk_CUDA_ERROR_ILLEGAL_ADDRESS
#define CUDA_ERROR_CONTEXT_IS_DESTROYED chk_CUDA_ERROR_CONTEXT_IS_DESTROYED
#define CUDA_ERROR_LAUNCH_FAILED chk_CUDA_ERROR_LAUNCH_FAILED
#define CUDA_ERROR_NOT_PERMITTED chk_CUDA_ERROR_NOT_PERMITTED
#define CUDA_ERROR_NOT_SUPPORTED chk_CUDA_ERROR_NOT_SUPPORTED
#define CUDA_ERROR_SYSTEM_DRIVER_MISMATCH chk_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
#define CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE chk_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
#define CUDA_ERROR_UNKNOWN chk_CUDA_ERROR_UNKNOWN

#define CUdevice_attribute_enum chk_CUdevice_attribute_enum
#define CUdevice_attribute chk_CUdevice_attribute
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT chk_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE chk_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
#define CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING chk_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR                                       \
    chk_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR                                       \
    chk_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
#define CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED                            \
    chk_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
#define CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED                    \
    chk_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
#define CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED                                  \
    chk_CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED
#define CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED chk_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
#define CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES                                 \
    chk_CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES
#define CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED                                   \
    chk_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
#define CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED chk_CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
#define CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID chk_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
#define CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED                  \
    chk_CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED

#define CUipcMem_flags_enum chk_CUipcMem_flags_enum
#define CUipcMem_flags chk_CUipcMem_flags
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS chk_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
#define CUcomputemode_enum chk_CUcomputemode_enum
#define CUcomputemode chk_CUcomputemode
#define CU_COMPUTEMODE_DEFAULT chk_CU_COMPUTEMODE_DEFAULT
#define CU_COMPUTEMODE_PROHIBITED chk_CU_COMPUTEMODE_PROHIBITED
#define CU_COMPUTEMODE_EXCLUSIVE_PROCESS chk_CU_COMPUTEMODE_EXCLUSIVE_PROCESS
#define CU_DEVICE_ATTRIBUTE_COMPUTE_MODE chk_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
#define CUevent_flags_enum chk_CUevent_flags_enum
#define CUevent_flags chk_CUevent_flags
#define CU_EVENT_DEFAULT chk_CU_EVENT_DEFAULT
#define CU_EVENT_DISABLE_TIMING chk_CU_EVENT_DISABLE_TIMING
#define CU_EVENT_INTERPROCESS chk_CU_EVENT_INTERPROCESS
#define CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED chk_CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED
#define CUdevice_P2PAttribute_enum chk_CUdevice_P2PAttribute_enum
#define CUdevice_P2PAttribute chk_CUdevice_P2PAttribute
#define CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK chk_CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK
#define CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED chk_CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED
#define CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED \
    chk_CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED
#define CUpointer_attribute_enum chk_CUpointer_attribute_enum
#define CUpointer_attribute chk_CUpointer_attribute
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL chk_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
#define CUdriverProcAddress_flags_enum chk_CUdriverProcAddress_flags_enum
#define CUdriverProcAddress_flags chk_CUdriverProcAddress_flags
#define CU_GET_PROC_ADDRESS_DEFAULT chk_CU_GET_PROC_ADDRESS_DEFAULT
#define CUdriverProcAddressQueryResult_enum chk_CUdriverProcAddressQueryResult_enum
#define CUdriverProcAddressQueryResult chk_CUdriverProcAddressQueryResult
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND chk_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
#define CUmemAllocationHandleType_enum chk_CUmemAllocationHandleType_enum
#define CUmemAllocationHandleType chk_CUmemAllocationHandleType
#define CU_MEM_HANDLE_TYPE_NONE chk_CU_MEM_HANDLE_TYPE_NONE
#define CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR chk_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
#define CU_MEM_HANDLE_TYPE_FABRIC chk_CU_MEM_HANDLE_TYPE_FABRIC
#define CUmemAccess_flags_enum chk_CUmemAccess_flags_enum
#define CUmemAccess_flags chk_CUmemAccess_flags
#define CU_MEM_ACCESS_FLAGS_PROT_READ chk_CU_MEM_ACCESS_FLAGS_PROT_READ
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE chk_CU_MEM_ACCESS_FLAGS_PROT_READWRITE
#define CUmemLocationType_enum chk_CUmemLocationType_enum
#define CUmemLocationType chk_CUmemLocationType
#define CU_MEM_LOCATION_TYPE_DEVICE chk_CU_MEM_LOCATION_TYPE_DEVICE
#define CU_MEM_LOCATION_TYPE_HOST_NUMA chk_CU_MEM_LOCATION_TYPE_HOST_NUMA
#define CUmemAllocationType_enum chk_CUmemAllocationType_enum
#define CUmemAllocationType chk_CUmemAllocationType
#define CU_MEM_ALLOCATION_TYPE_PINNED chk_CU_MEM_ALLOCATION_TYPE_PINNED
#define CUmemAllocationGranularity_flags_enum chk_CUmemAllocationGranularity_flags_enum
#define CUmemAllocationGranularity_flags chk_CUmemAllocationGranularity_flags
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM chk_CU_MEM_ALLOC_GRANULARITY_MINIMUM
#define CU_MEM_ALLOC_GRANULARITY_RECOMMENDED chk_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
#define CUmemAllocationCompType_enum chk_CUmemAllocationCompType_enum
#define CUmemAllocationCompType chk_CUmemAllocationCompType
#define CU_MEM_ALLOCATION_COMP_NONE chk_CU_MEM_ALLOCATION_COMP_NONE
#define CU_MEM_ALLOCATION_COMP_GENERIC chk_CU_MEM_ALLOCATION_COMP_GENERIC

#define CUuuid_st chk_CUuuid_st
#define CUuuid chk_CUuuid
#define CUipcMemHandle_st chk_CUipcMemHandle_st
#define CUipcMemHandle chk_CUipcMemHandle
#define CUipcEventHandle_st chk_CUipcEventHandle_st
#define CUipcEventHandle chk_CUipcEventHandle
#define CUmemFabricHandle_st chk_CUmemFabricHandle_st
#define CUmemFabricHandle chk_CUmemFabricHandle
#define CUmemLocation_st chk_CUmemLocation_st
#define CUmemLocation chk_CUmemLocation
#define CUmemAllocationProp_st chk_CUmemAllocationProp_st
#define CUmemAllocationProp chk_CUmemAllocationProp
#define CUmemAccessDesc_st chk_CUmemAccessDesc_st
#define CUmemAccessDesc chk_CUmemAccessDesc
#define CUmemPoolProps_st chk_CUmemPoolProps_st
#define CUmemPoolProps chk_CUmemPoolProps
#define CUmemPoolPtrExportData_st chk_CUmemPoolPtrExportData_st
#define CUmemPoolPtrExportData chk_CUmemPoolPtrExportData

#include "gpu/cuda_api.h"

/* From here on a name is the project's declaration and tk_<name> the
 * toolkit's. A macro argument next to # or ## is not expanded, so #name and
 * tk_##name keep the name as written. */
#define CHK_SCALAR(name)                                                                   \
    _Static_assert(__builtin_types_compatible_p(name, tk_##name),                          \
                   #name ": not the type the toolkit's cuda.h gives it");

/* Two enum types are never the same type; what the ABI sees is their size and
 * whether the values are signed ((type)-1 is above zero only if unsigned). */
#define CHK_ENUM(name)                                                                     \
    _Static_assert(sizeof(name) == sizeof(tk_##name),                                      \
                   #name ": size differs from the toolkit's cuda.h");                      \
    _Static_assert(((name)-1 > (name)0) == ((tk_##name)-1 > (tk_##name)0),                 \
                   #name ": signedness differs from the toolkit's cuda.h");

/* The values are compared as numbers: each side is of its own enum type. */
#define CHK_CONSTANT(name)                                                                 \
    _Static_assert((long long)name == (long long)tk_##name,                                \
                   #name ": value differs from the toolkit's cuda.h");

#define CHK_STRUCT(name)                                                                   \
    _Static_assert(sizeof(name) == sizeof(tk_##name),                                      \
                   #name ": size differs from the toolkit's cuda.h");                      \
    _Static_assert(_Alignof(name) == _Alignof(tk_##name),                                  \
                   #name ": alignment differs from the toolkit's cuda.h");

#define CHK_MEMBER(type, member)                                                           \
    _Static_assert(offsetof(type, member) == offsetof(tk_##type, member),                  \
                   #type "." #member ": offset differs from the toolkit's cuda.h");         \
    _Static_assert(sizeof(((type *)0)->member) == sizeof(((tk_##type *)0)->member),        \
                   #type "." #member ": size differs from the toolkit's cuda.h");

CHK_SCALARS(CHK_SCALAR)
CHK_ENUMS(CHK_ENUM)
CHK_CONSTANTS(CHK_CONSTANT)
CHK_STRUCTS(CHK_STRUCT)
CHK_MEMBERS(CHK_MEMBER)
