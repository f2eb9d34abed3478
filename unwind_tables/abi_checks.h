// Compile-time checks that the BPF ABI structs have the layout both sides
// assume. Included by every C++ file that copies them into maps.
#ifndef EHPROF_UNWIND_TABLES_ABI_CHECKS_H_
#define EHPROF_UNWIND_TABLES_ABI_CHECKS_H_

#include <cstddef>

#include "bpf/ehprof_abi.h"

static_assert(sizeof(ehp_rule) == 16);
static_assert(offsetof(ehp_rule, cfa_kind) == 10);
static_assert(offsetof(ehp_rule, flags) == 15);
static_assert(sizeof(ehp_page) == 16);
static_assert(sizeof(ehp_buckets) == 2 * EHP_BUCKETS_PER_PAGE);
static_assert(EHP_MAX_PAGE_ROWS <= (1u << (EHP_LOOKUP_STEPS - 1)),
              "a page's rows must be searchable in EHP_LOOKUP_STEPS halvings");
static_assert((1u << EHP_PAGE_SHIFT_MIN) <= EHP_MAX_PAGE_ROWS &&
                  (1u << EHP_PAGE_SHIFT_MIN) <= EHP_PALETTE_MAX,
              "the smallest page must always fit (one row per byte at most)");
static_assert(EHP_MAX_PAGE_ROWS - 1 <= 0xffff, "bucket starts are u16");
static_assert(EHP_PAGE_SHIFT_MIN >= EHP_BUCKET_BITS, "a bucket is at least one byte of code");

#endif  // EHPROF_UNWIND_TABLES_ABI_CHECKS_H_
