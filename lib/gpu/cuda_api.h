/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_api.h: the CUDA driver API's types and constants that gpuipc_test
 * uses, declared by the project itself, so that building needs no CUDA
 * toolkit: the driver is loaded at run time (cudrv.h), and the toolkit's
 * cuda.h was only ever needed for these declarations. As FFmpeg's
 * nv-codec-headers do, this file holds exactly what the code uses, under
 * CUDA's own names, written from the documented driver API; anything new the
 * code needs is added here. The function-pointer types are in cuda_pfn.h.
 *
 * Every declaration here is part of the driver's ABI, which NVIDIA keeps
 * stable: a value or a layout never changes once released. Where a toolkit's
 * cuda.h is present, `make cuda-check` (tests/cuda_check.c, run by make
 * check) compares every declaration with it at compile time: each typedef,
 * each constant's value, each struct's size and member offsets, and each
 * function-pointer type of cuda_pfn.h. */
#ifndef GPUIPC_CUDA_API_H
#define GPUIPC_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* The CUDA driver API version whose cuda.h these declarations follow and were
 * checked against: CUDA 13.0, as CUDA_VERSION encodes it (1000 * major + 10 *
 * minor). It says which headers the build is equivalent to; the ABI version
 * each entry point is called with is in GPUIPC_CU_FUNCS (cudrv.h), and the
 * oldest driver that runs the program is GPUIPC_CU_MIN_DRIVER. */
#define GPUIPC_CUDA_API_VERSION 13000

/* The calling convention of the driver's entry points: the C one on Linux
 * (cuda.h has __stdcall only for Windows, which this program does not run
 * on). */
#define CUDAAPI

/* ---- Scalars and handles ----------------------------------------------------------------- */

typedef uint64_t cuuint64_t;

/* A device address. cuda.h makes it as wide as a host pointer; the program is
 * built for 64-bit Linux only, where that is unsigned long long. */
typedef unsigned long long CUdeviceptr;
_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "CUdeviceptr: 64-bit hosts only");

typedef int CUdevice; /* a device ordinal */

/* Opaque handles: pointers to structs the driver never shows. */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

/* The handle of a physical allocation (cuMemCreate, cuMemImport...). */
typedef unsigned long long CUmemGenericAllocationHandle;

/* ---- Enums ------------------------------------------------------------------------------- */

/* What every driver call returns. Only the codes the program names are
 * declared; any other arrives as its number and is named by cuGetErrorName. */
typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* The attributes cuDeviceGetAttribute is asked for. */
typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
    CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = 107,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES = 119,
    CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED = 125,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128,
    CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 132,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = 134,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 141
} CUdevice_attribute;

/* CU_DEVICE_ATTRIBUTE_COMPUTE_MODE's values: who may hold a context. */
typedef enum CUcomputemode_enum {
    CU_COMPUTEMODE_DEFAULT = 0,
    CU_COMPUTEMODE_PROHIBITED = 2,
    CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
} CUcomputemode;

/* The attributes cuDeviceGetP2PAttribute is asked for. */
typedef enum CUdevice_P2PAttribute_enum {
    CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1,
    CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED = 2,
    CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 3
} CUdevice_P2PAttribute;

/* The attribute cuPointerGetAttribute is asked for: the ordinal of the
 * device the memory was allocated on (an int). */
typedef enum CUpointer_attribute_enum {
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
} CUpointer_attribute;

/* cuIpcOpenMemHandle's flags. */
typedef enum CUipcMem_flags_enum {
    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1
} CUipcMem_flags;

/* cuEventCreate's flags. */
typedef enum CUevent_flags_enum {
    CU_EVENT_DEFAULT = 0x0,
    CU_EVENT_DISABLE_TIMING = 0x2,
    CU_EVENT_INTERPROCESS = 0x4 /* needs CU_EVENT_DISABLE_TIMING too */
} CUevent_flags;

/* cuGetProcAddress's flags, and what it reports having found. */
typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1
} CUdriverProcAddressQueryResult;

/* The OS handle an allocation or a pool can be exported as (a bit mask in
 * CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES). */
typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0x0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    CU_MEM_HANDLE_TYPE_FABRIC = 0x8
} CUmemAllocationHandleType;

/* The protection cuMemSetAccess grants a location over a mapped range. */
typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3
} CUmemAccess_flags;

/* Where memory lives: CUmemLocation.id is a device ordinal or a NUMA node. */
typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_PINNED = 0x1
} CUmemAllocationType;

/* cuMemGetAllocationGranularity's question. */
typedef enum CUmemAllocationGranularity_flags_enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

/* The values of CUmemAllocationProp.allocFlags.compressionType. */
typedef enum CUmemAllocationCompType_enum {
    CU_MEM_ALLOCATION_COMP_NONE = 0x0,
    CU_MEM_ALLOCATION_COMP_GENERIC = 0x1
} CUmemAllocationCompType;

/* ---- Structs ----------------------------------------------------------------------------- */

/* The bytes of the opaque handles below. */
#define CU_IPC_HANDLE_SIZE 64

typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

/* A legacy IPC handle (cuIpcGetMemHandle): opaque bytes, sent as they are. */
typedef struct CUipcMemHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;

/* A legacy IPC event handle (cuIpcGetEventHandle): opaque bytes as well. */
typedef struct CUipcEventHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcEventHandle;

/* What cuMemExportToShareableHandle writes for CU_MEM_HANDLE_TYPE_FABRIC. */
typedef struct CUmemFabricHandle_st {
    unsigned char data[CU_IPC_HANDLE_SIZE];
} CUmemFabricHandle;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;
} CUmemLocation;

/* What cuMemCreate makes, and what cuMemGetAllocationPropertiesFromHandle
 * reports. Fields the program leaves zero must stay in place: the structure
 * is passed by address, so its layout is the driver's. */
typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData; /* Windows only; NULL here */
    struct {
        unsigned char compressionType; /* a CUmemAllocationCompType */
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;

/* cuMemPoolCreate's properties. */
typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes; /* Windows only; NULL here */
    size_t maxSize;                /* 0: the system's default */
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

/* What cuMemPoolExportPointer writes: opaque bytes, sent as they are. */
typedef struct CUmemPoolPtrExportData_st {
    unsigned char reserved[64];
} CUmemPoolPtrExportData;

#endif
