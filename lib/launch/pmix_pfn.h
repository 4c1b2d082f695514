/* SPDX-License-Identifier: Apache-2.0 */
/* pmix_pfn.h: the types of the PMIx client entry points gpuipc_test calls,
 * as pmix.h declares the functions, for the table launch/pmix.c fills with
 * dlsym(). `make pmix-check` holds each against the real declaration. */
#ifndef GPUIPC_PMIX_PFN_H
#define GPUIPC_PMIX_PFN_H

#include "launch/pmix_api.h"

typedef pmix_status_t (*PFN_PMIx_Init)(pmix_proc_t *proc, pmix_info_t info[], size_t ninfo);
typedef pmix_status_t (*PFN_PMIx_Finalize)(const pmix_info_t info[], size_t ninfo);
typedef pmix_status_t (*PFN_PMIx_Put)(pmix_scope_t scope, const char key[], pmix_value_t *val);
typedef pmix_status_t (*PFN_PMIx_Commit)(void);
typedef pmix_status_t (*PFN_PMIx_Fence)(const pmix_proc_t procs[], size_t nprocs,
                                        const pmix_info_t info[], size_t ninfo);
typedef pmix_status_t (*PFN_PMIx_Get)(const pmix_proc_t *proc, const char key[],
                                      const pmix_info_t info[], size_t ninfo,
                                      pmix_value_t **val);
typedef const char *(*PFN_PMIx_Get_version)(void);
typedef const char *(*PFN_PMIx_Error_string)(pmix_status_t status);
/* Frees what a value holds (not the value itself): PMIX_VALUE_RELEASE is a
 * macro around it and free(). Exported as PMIx_Value_destruct from PMIx 4
 * on; some PMIx 3 releases export it as pmix_value_destruct, older ones
 * only had the macro (launch/pmix.c then frees a string value itself). */
typedef void (*PFN_PMIx_Value_destruct)(pmix_value_t *val);


/* Every entry point launch/pmix.c resolves, with 1 where the program needs
 * it and 0 where it does without (PMIx_Error_string: its own names;
 * PMIx_Value_destruct: see above). The member of the table is named after
 * the function, and its type is PFN_<function>. */
#define GPUIPC_PMIX_FUNCS(X)                                                                \
    X(PMIx_Get_version, 1) X(PMIx_Init, 1) X(PMIx_Finalize, 1) X(PMIx_Put, 1)             \
    X(PMIx_Commit, 1) X(PMIx_Fence, 1) X(PMIx_Get, 1) X(PMIx_Error_string, 0)            \
    X(PMIx_Value_destruct, 0)

#endif
