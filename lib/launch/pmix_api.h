/* SPDX-License-Identifier: Apache-2.0 */
/* pmix_api.h: the PMIx client API's types and constants that gpuipc_test
 * uses, declared by the project itself under PMIx's own names, so that
 * building needs no PMIx headers: libpmix.so.2 is loaded at run time
 * (launch/pmix.c), as gpu/cuda_api.h does for libcuda. It holds exactly what
 * the code uses; the function-pointer types are in pmix_pfn.h.
 *
 * These are PMIx's ABI: pmix_proc_t is 260 bytes, pmix_value_t 32 and
 * pmix_info_t 552 in PMIx 4.2.2 (Debian 12's libpmix-dev), and the layout is
 * the same in the v3, v5 and v6 headers. Where the PMIx headers are present,
 * `make pmix-check` (tests/pmix_check.c, run by make check) compares every
 * declaration with them at compile time: each typedef, each constant's
 * value, each key's text, each struct's size and member offsets, and each
 * function-pointer type of pmix_pfn.h. */
#ifndef GPUIPC_PMIX_API_H
#define GPUIPC_PMIX_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Scalars ------------------------------------------------------------------------------- */

typedef int pmix_status_t;        /* what every call returns: PMIX_SUCCESS or an error */
typedef uint32_t pmix_rank_t;     /* a process's rank in its namespace (job) */
typedef uint16_t pmix_data_type_t; /* the type of a pmix_value_t's datum */
typedef uint8_t pmix_scope_t;     /* who a PMIx_Put value is shared with */
typedef uint32_t pmix_info_directives_t;

#define PMIX_MAX_NSLEN 255
#define PMIX_MAX_KEYLEN 511

typedef char pmix_nspace_t[PMIX_MAX_NSLEN + 1];
typedef char pmix_key_t[PMIX_MAX_KEYLEN + 1];

/* ---- Constants --------------------------------------------------------------------------- */

/* Status codes: the few the program names itself; any other is named by
 * PMIx_Error_string where the library has it. */
#define PMIX_SUCCESS 0
#define PMIX_ERROR -1
#define PMIX_ERR_TIMEOUT -24
#define PMIX_ERR_UNREACH -25
#define PMIX_ERR_BAD_PARAM -27
#define PMIX_ERR_INIT -31
#define PMIX_ERR_NOT_FOUND -46
#define PMIX_ERR_NOT_SUPPORTED -47
#define PMIX_ERR_COMM_FAILURE -49
#define PMIX_ERR_LOST_CONNECTION -61

/* Every rank of a namespace, in a pmix_proc_t: a fence over the whole job, or
 * a job-level key (PMIX_JOB_SIZE). */
#define PMIX_RANK_WILDCARD (UINT32_MAX - 1)

/* PMIx_Put scope: shared with the processes on this node and on others. */
#define PMIX_GLOBAL 3

/* Data type codes of a pmix_value_t. */
#define PMIX_BOOL 1
#define PMIX_STRING 3
#define PMIX_INT 6
#define PMIX_UINT8 12
#define PMIX_UINT16 13
#define PMIX_UINT32 14

/* The keys the program reads or passes, with the type PMIx gives them. */
#define PMIX_JOB_SIZE "pmix.job.size"     /* uint32: processes in the job */
#define PMIX_LOCAL_RANK "pmix.lrank"      /* uint16: rank among the job's on this node */
#define PMIX_LOCAL_SIZE "pmix.local.size" /* uint32: the job's processes on this node */
#define PMIX_TIMEOUT "pmix.timeout"       /* int: seconds before a fence or get fails */
#define PMIX_COLLECT_DATA "pmix.collect"  /* bool: a fence gathers everyone's Put data */

/* ---- Structs ----------------------------------------------------------------------------- */

/* A process: its namespace (the job) and its rank in it. 260 bytes. */
typedef struct pmix_proc {
    pmix_nspace_t nspace;
    pmix_rank_t rank;
} pmix_proc_t;

/* A typed datum. The members are those the program reads and writes; the
 * real union has many more, the largest of which (pmix_envar_t: two
 * pointers and a char) makes it 24 bytes, hence the padding member. 32
 * bytes in all. */
typedef struct pmix_value {
    pmix_data_type_t type;
    union {
        bool flag;
        uint8_t uint8;
        char *string;
        int integer;
        uint16_t uint16;
        uint32_t uint32;
        unsigned char pad[24];
    } data;
} pmix_value_t;

/* A directive to a call (PMIX_TIMEOUT, PMIX_COLLECT_DATA): key and value.
 * 552 bytes. */
typedef struct pmix_info {
    pmix_key_t key;
    pmix_info_directives_t flags;
    pmix_value_t value;
} pmix_info_t;

#endif
