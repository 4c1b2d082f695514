/* SPDX-License-Identifier: Apache-2.0 */
/* pmix_check.c: holds the project's own declarations of the PMIx client
 * API (lib/launch/pmix_api.h, lib/launch/pmix_pfn.h) against the real
 * pmix.h at compile time, as tests/cuda_check.c does for cuda.h. `make
 * pmix-check` compiles it where the headers are installed (Debian's
 * libpmix-dev; make check runs it); nothing runs. Every difference fails the
 * compile with a _Static_assert that names the declaration, for example
 *   error: static assertion failed: "pmix_info_t.value: offset differs from
 *   pmix.h's"
 *
 * The steps:
 *   1. The real pmix.h: the reference.
 *   2. pmix_pfn.h over it, its include of pmix_api.h held back (its guard
 *      defined), so that each PFN_<function> is spelled with the real types
 *      and compared with the type of the real function.
 *   3. The integer constants pmix_api.h declares are taken into enumerators
 *      tk_<name> and #undef'd; the types it declares are renamed by macros
 *      to chk_<name>; then pmix_api.h is included, so that both sets exist
 *      side by side, and each pair is compared: scalar types as types,
 *      constants by value, structs by size, alignment and each member's
 *      offset, size and type.
 *   The keys ("pmix.job.size", ...) stay defined by both headers: a key whose
 *   text differs is a macro redefinition, which -Werror (always on for this
 *   file) makes an error naming it. So is a constant added to pmix_api.h and
 *   not to the list below, where its text differs from pmix.h's; a type
 *   added there without a rename here collides with pmix.h's (a struct tag,
 *   a different typedef). The check cannot silently miss a declaration. */
#include <stddef.h>
#include <stdint.h>

#include <pmix.h>

/* ---- 2. The function-pointer types ------------------------------------------------------- */

#define GPUIPC_PMIX_API_H
#include "launch/pmix_pfn.h"
#undef GPUIPC_PMIX_API_H

#define CHK_PFN(fn, required)                                                               \
    _Static_assert(__builtin_types_compatible_p(PFN_##fn, __typeof__(&fn)),                \
                   "PFN_" #fn ": not the type pmix.h gives " #fn);
GPUIPC_PMIX_FUNCS(CHK_PFN)

/* ---- 3. Constants, types and structs ----------------------------------------------------- */

/* Every integer constant pmix_api.h declares. PMIX_RANK_WILDCARD is
 * 0xfffffffe: taken as an int, both sides wrap alike, and both are
 * pmix_rank_t values (32 bits), so comparing them as ints is exact. */
#define CHK_CONSTANTS(X)                                                                    \
    X(PMIX_MAX_NSLEN) X(PMIX_MAX_KEYLEN) X(PMIX_SUCCESS) X(PMIX_ERROR) X(PMIX_ERR_TIMEOUT)  \
    X(PMIX_ERR_UNREACH) X(PMIX_ERR_BAD_PARAM) X(PMIX_ERR_INIT) X(PMIX_ERR_NOT_FOUND)        \
    X(PMIX_ERR_NOT_SUPPORTED) X(PMIX_ERR_COMM_FAILURE) X(PMIX_ERR_LOST_CONNECTION)          \
    X(PMIX_RANK_WILDCARD) X(PMIX_GLOBAL) X(PMIX_BOOL) X(PMIX_STRING) X(PMIX_INT)            \
    X(PMIX_UINT8) X(PMIX_UINT16) X(PMIX_UINT32)

#define CHK_TAKE(name) tk_##name = (int)(name),
enum { CHK_CONSTANTS(CHK_TAKE) };
#undef PMIX_MAX_NSLEN
#undef PMIX_MAX_KEYLEN
#undef PMIX_SUCCESS
#undef PMIX_ERROR
#undef PMIX_ERR_TIMEOUT
#undef PMIX_ERR_UNREACH
#undef PMIX_ERR_BAD_PARAM
#undef PMIX_ERR_INIT
#undef PMIX_ERR_NOT_FOUND
#undef PMIX_ERR_NOT_SUPPORTED
#undef PMIX_ERR_COMM_FAILURE
#undef PMIX_ERR_LOST_CONNECTION
#undef PMIX_RANK_WILDCARD
#undef PMIX_GLOBAL
#undef PMIX_BOOL
#undef PMIX_STRING
#undef PMIX_INT
#undef PMIX_UINT8
#undef PMIX_UINT16
#undef PMIX_UINT32

/* Every type pmix_api.h declares, renamed while it is included. */
#define pmix_status_t chk_pmix_status_t
#define pmix_rank_t chk_pmix_rank_t
#define pmix_data_type_t chk_pmix_data_type_t
#define pmix_scope_t chk_pmix_scope_t
#define pmix_info_directives_t chk_pmix_info_directives_t
#define pmix_nspace_t chk_pmix_nspace_t
#define pmix_key_t chk_pmix_key_t
#define pmix_proc chk_pmix_proc
#define pmix_proc_t chk_pmix_proc_t
#define pmix_value chk_pmix_value
#define pmix_value_t chk_pmix_value_t
#define pmix_info chk_pmix_info
#define pmix_info_t chk_pmix_info_t
#include "launch/pmix_api.h"
#undef pmix_status_t
#undef pmix_rank_t
#undef pmix_data_type_t
#undef pmix_scope_t
#undef pmix_info_directives_t
#undef pmix_nspace_t
#undef pmix_key_t
#undef pmix_proc
#undef pmix_proc_t
#undef pmix_value
#undef pmix_value_t
#undef pmix_info
#undef pmix_info_t

#define CHK_CONSTANT(name) _Static_assert(tk_##name == (int)(name), #name ": not pmix.h's value");
CHK_CONSTANTS(CHK_CONSTANT)

#define CHK_SCALARS(X)                                                                      \
    X(pmix_status_t) X(pmix_rank_t) X(pmix_data_type_t) X(pmix_scope_t)                     \
    X(pmix_info_directives_t) X(pmix_nspace_t) X(pmix_key_t)
#define CHK_SCALAR(t)                                                                       \
    _Static_assert(__builtin_types_compatible_p(chk_##t, t), #t ": not pmix.h's type");
CHK_SCALARS(CHK_SCALAR)

/* A struct's size and alignment, and one member's offset, size and type. */
#define CHK_STRUCT(t)                                                                       \
    _Static_assert(sizeof(chk_##t) == sizeof(t), #t ": size differs from pmix.h's");       \
    _Static_assert(_Alignof(chk_##t) == _Alignof(t), #t ": alignment differs from pmix.h's");
#define CHK_MEMBER(t, m)                                                                    \
    _Static_assert(offsetof(chk_##t, m) == offsetof(t, m),                                 \
                   #t "." #m ": offset differs from pmix.h's");                            \
    _Static_assert(sizeof(((chk_##t *)0)->m) == sizeof(((t *)0)->m),                      \
                   #t "." #m ": size differs from pmix.h's");
#define CHK_MEMBER_TYPE(t, m)                                                               \
    CHK_MEMBER(t, m)                                                                        \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((chk_##t *)0)->m),             \
                                                __typeof__(((t *)0)->m)),                  \
                   #t "." #m ": type differs from pmix.h's");

CHK_STRUCT(pmix_proc_t)
CHK_MEMBER_TYPE(pmix_proc_t, nspace)
CHK_MEMBER_TYPE(pmix_proc_t, rank)

CHK_STRUCT(pmix_value_t)
CHK_MEMBER_TYPE(pmix_value_t, type)
CHK_MEMBER(pmix_value_t, data) /* the union: the project's has fewer members */
CHK_MEMBER_TYPE(pmix_value_t, data.flag)
CHK_MEMBER_TYPE(pmix_value_t, data.uint8)
CHK_MEMBER_TYPE(pmix_value_t, data.string)
CHK_MEMBER_TYPE(pmix_value_t, data.integer)
CHK_MEMBER_TYPE(pmix_value_t, data.uint16)
CHK_MEMBER_TYPE(pmix_value_t, data.uint32)

CHK_STRUCT(pmix_info_t)
CHK_MEMBER_TYPE(pmix_info_t, key)
CHK_MEMBER_TYPE(pmix_info_t, flags)
CHK_MEMBER(pmix_info_t, value) /* chk_pmix_value_t vs pmix_value_t, compared above */

/* The sizes measured on PMIx 4.2.2 and read in the v5 and v6 headers. */
_Static_assert(sizeof(pmix_proc_t) == 260, "pmix_proc_t: not 260 bytes");
_Static_assert(sizeof(pmix_value_t) == 32, "pmix_value_t: not 32 bytes");
_Static_assert(sizeof(pmix_info_t) == 552, "pmix_info_t: not 552 bytes");
