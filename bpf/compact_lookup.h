/* The compact-table row search, shared verbatim by the BPF unwinder and the
 * user-space lookup (unwind_tables/compact_table.cc), so the code that is
 * benchmarked and tested without root is the code that runs in the kernel.
 *
 * Plain C; no helpers, no recursion, a fixed bound on iterations.
 */
#ifndef EHPROF_BPF_COMPACT_LOOKUP_H_
#define EHPROF_BPF_COMPACT_LOOKUP_H_

#include "bpf/ehprof_abi.h"

#ifndef EHP_INLINE
#define EHP_INLINE static inline __attribute__((always_inline))
#endif

/* Index, relative to `rows`, of the last of the first `n` rows whose
 * address-within-page is <= key. Requires n >= 1 and rows[0] == 0 (every
 * page starts with a row at offset 0), so the answer always exists.
 * Branch-free halving: the loop runs a fixed number of times, which both the
 * verifier and the CPU's branch predictor like. */
EHP_INLINE ehp_u32 ehp_search_page(const ehp_u16 *rows, ehp_u32 n, ehp_u16 key)
{
	ehp_u32 base = 0;
	for (int i = 0; i < EHP_LOOKUP_STEPS; i++) {
		ehp_u32 half = n >> 1;
		if (half == 0)
			break;
		base = rows[base + half] <= key ? base + half : base;
		n -= half;
	}
	return base;
}

/* Page of `pc` given the table's start and shift; returns 0 (and leaves
 * *page untouched) when pc is outside [start, end). */
EHP_INLINE int ehp_page_of(ehp_u64 pc, ehp_u64 start, ehp_u64 end,
			   ehp_u32 page_shift, ehp_u32 *page, ehp_u16 *key)
{
	if (pc < start || pc >= end)
		return 0;
	ehp_u64 rel = pc - start;
	*page = (ehp_u32)(rel >> page_shift);
	*key = (ehp_u16)(rel & ((1u << page_shift) - 1));
	return 1;
}

#endif /* EHPROF_BPF_COMPACT_LOOKUP_H_ */
