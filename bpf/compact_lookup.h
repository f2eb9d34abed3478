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

/* Row indexes are masked before every access. User space keeps a table's
 * rows in one array (no mask); the BPF side keeps them in chunks of
 * EHP_ROW_CHUNK_ROWS rows that no page straddles and defines the mask to
 * the chunk size, which changes nothing for valid tables but lets the
 * verifier prove every access in bounds. */
#ifndef EHP_ROW_INDEX_MASK
#define EHP_ROW_INDEX_MASK 0xffffffffu
#endif

/* The address-within-page of packed row i. */
EHP_INLINE ehp_u16 ehp_row_addr(const ehp_u8 *rows, ehp_u32 i)
{
	ehp_u32 at = (i & EHP_ROW_INDEX_MASK) * EHP_ROW_BYTES;
	return (ehp_u16)(rows[at] | (rows[at + 1] << 8));
}

EHP_INLINE ehp_u8 ehp_row_palette(const ehp_u8 *rows, ehp_u32 i)
{
	return rows[(i & EHP_ROW_INDEX_MASK) * EHP_ROW_BYTES + 2];
}

/* Index of the last of rows [first, first + n) whose address-within-page
 * is <= key. Requires n >= 1 and the row at `first` <= key (a page's first
 * row is at offset 0; a bucket's first row is the one in force at its
 * start), so the answer always exists. Branch-free halving with a fixed
 * bound, which both the verifier and the CPU's branch predictor like. */
EHP_INLINE ehp_u32 ehp_search_rows(const ehp_u8 *rows, ehp_u32 first, ehp_u32 n,
				   ehp_u16 key)
{
	ehp_u32 base = first;
	for (int i = 0; i < EHP_LOOKUP_STEPS; i++) {
		ehp_u32 half = n >> 1;
		if (half == 0)
			break;
		base = ehp_row_addr(rows, base + half) <= key ? base + half : base;
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

/* The page-relative rows [*lo, *hi) that hold the answer for `key`, from
 * the page's bucket starts and its row count. The row at *lo is <= key. */
EHP_INLINE void ehp_bucket_range(const struct ehp_buckets *buckets, ehp_u32 page_rows,
				 ehp_u32 page_shift, ehp_u16 key,
				 ehp_u32 *lo, ehp_u32 *hi)
{
	ehp_u32 b = (ehp_u32)key >> (page_shift - EHP_BUCKET_BITS);
	b &= EHP_BUCKETS_PER_PAGE - 1;
	*lo = buckets->start[b];
	/* The next bucket's first row may start exactly at its boundary, so
	 * it is included; the search never picks it for a smaller key. */
	*hi = b + 1 < EHP_BUCKETS_PER_PAGE
		      ? (ehp_u32)buckets->start[(b + 1) & (EHP_BUCKETS_PER_PAGE - 1)] + 1
		      : page_rows;
	if (*hi > page_rows)
		*hi = page_rows;
}

#endif /* EHPROF_BPF_COMPACT_LOOKUP_H_ */
