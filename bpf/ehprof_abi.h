/* Every struct and enum shared between the BPF programs and the C++ side.
 *
 * Fixed-width types and explicit padding only: the same bytes are written by
 * user space into BPF maps and read by the BPF verifier-checked code. The C++
 * side static_asserts the sizes (unwind_tables/abi_checks.h).
 */
#ifndef EHPROF_BPF_EHPROF_ABI_H_
#define EHPROF_BPF_EHPROF_ABI_H_

#ifdef __bpf__
typedef __u8 ehp_u8;
typedef __s16 ehp_s16;
typedef __u16 ehp_u16;
typedef __s32 ehp_s32;
typedef __u32 ehp_u32;
typedef __u64 ehp_u64;
#else
#include <stdint.h>
typedef uint8_t ehp_u8;
typedef int16_t ehp_s16;
typedef uint16_t ehp_u16;
typedef int32_t ehp_s32;
typedef uint32_t ehp_u32;
typedef uint64_t ehp_u64;
#endif

/* DWARF register numbers of x86-64 (System V psABI, figure 3.36). */
enum ehp_dwarf_reg {
  EHP_REG_RAX = 0,
  EHP_REG_RDX = 1,
  EHP_REG_RCX = 2,
  EHP_REG_RBX = 3,
  EHP_REG_RSI = 4,
  EHP_REG_RDI = 5,
  EHP_REG_RBP = 6,
  EHP_REG_RSP = 7,
  EHP_REG_R8 = 8,
  EHP_REG_R15 = 15,
  EHP_REG_RIP = 16, /* the return-address column */
};

/* How the canonical frame address is computed. */
enum ehp_cfa_kind {
  EHP_CFA_NONE = 0,      /* no CFI covers this address */
  EHP_CFA_REG = 1,       /* cfa = reg + offset */
  EHP_CFA_PLT_LIT11 = 2, /* cfa = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
  EHP_CFA_PLT_LIT10 = 3, /* cfa = rsp + 8 + ((rip & 15) >= 10 ? 8 : 0) */
  EHP_CFA_DEREF = 4,     /* cfa = *(reg + offset) + deref_add */
  EHP_CFA_EXPR = 5,      /* another DWARF expression: unsupported */
};

/* Where a register's caller value is (used for rbp and the return address). */
enum ehp_reg_kind {
  EHP_RULE_SAME = 0,       /* unchanged from this frame */
  EHP_RULE_CFA_OFFSET = 1, /* saved at *(cfa + offset) */
  EHP_RULE_UNDEFINED = 2,  /* not recoverable; for ra: the bottom of the stack */
  EHP_RULE_DEREF = 3,      /* saved at *(reg + offset), reg of this frame */
  EHP_RULE_OTHER = 4,      /* register, val_offset, other expression: unsupported */
};

enum ehp_rule_flags {
  EHP_RULE_FLAG_SIGNAL = 1, /* the FDE's CIE has the 'S' augmentation */
};

/* One distinct unwind rule. Tables reference rules by index, so most rows
 * share a handful of these (cfa=rsp+8..rsp+56, ra=cfa-8). */
struct ehp_rule {
  ehp_s32 cfa_offset;
  ehp_s16 cfa_deref_add;
  ehp_s16 rbp_offset;
  ehp_s16 ra_offset;
  ehp_u8 cfa_kind; /* enum ehp_cfa_kind */
  ehp_u8 cfa_reg;  /* enum ehp_dwarf_reg */
  ehp_u8 rbp_kind; /* enum ehp_reg_kind */
  ehp_u8 rbp_reg;  /* for EHP_RULE_DEREF */
  ehp_u8 ra_kind;  /* enum ehp_reg_kind */
  ehp_u8 flags;    /* enum ehp_rule_flags */
};

/* Compact table layout (per ELF file):
 *  - a dense array of pages, one per (1 << page_shift) bytes of address
 *    space from the table's start;
 *  - per page EHP_BUCKETS_PER_PAGE u16 bucket starts (see below);
 *  - per row EHP_ROW_BYTES bytes: a little-endian u16 address within its
 *    page, then a u8 index into the page's palette (the distinct rules used
 *    in that page, at most EHP_PALETTE_MAX). Interleaved so the index is in
 *    the cache line the search just read;
 *  - palettes: u16 rule indexes; rules: struct ehp_rule.
 * Every page's first row sits at offset 0 (the builder repeats the rule in
 * force there), so a lookup never has to look into an earlier page. A page
 * holds at most EHP_MAX_PAGE_ROWS rows: the page size shrinks (down to
 * 1 << EHP_PAGE_SHIFT_MIN bytes, where the bound always holds) until every
 * page fits, so in BPF maps a page's rows and palette can always be placed
 * inside one fixed-size chunk. */
#define EHP_PAGE_SHIFT_MAX 16
#define EHP_PAGE_SHIFT_MIN 8
#define EHP_PALETTE_MAX 256
#define EHP_ROW_BYTES 3
#define EHP_MAX_PAGE_ROWS 4096
/* A binary search over EHP_MAX_PAGE_ROWS rows takes at most this many
 * halvings. */
#define EHP_LOOKUP_STEPS 13
/* Each page is split into this many buckets; bucket b's entry is the
 * page-relative index of the row in force at the bucket's first address, so
 * a lookup searches one bucket's rows (a few cache lines) instead of the
 * page's. */
#define EHP_BUCKET_BITS 4
#define EHP_BUCKETS_PER_PAGE (1 << EHP_BUCKET_BITS)

struct ehp_page {
	ehp_u32 first_row;     /* index of the page's first row */
	ehp_u32 num_rows;      /* >= 1 and <= EHP_MAX_PAGE_ROWS */
	ehp_u32 first_palette; /* index of the page's first palette entry */
	ehp_u32 pad;
};

struct ehp_buckets {
	ehp_u16 start[EHP_BUCKETS_PER_PAGE];
};

#endif /* EHPROF_BPF_EHPROF_ABI_H_ */
