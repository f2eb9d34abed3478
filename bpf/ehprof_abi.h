/* Every struct and enum shared between the BPF programs and the C++ side.
 *
 * Fixed-width types and explicit padding only: the same bytes are written by
 * user space into BPF maps and read by the BPF verifier-checked code. The
 * layout checks (EHP_ASSERT) sit beside each struct and are compiled by both
 * clang -target bpf and the C++ compiler.
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

/* Layout checks seen by both compilers: the BPF program and the C++ side
 * agree on these structs only if both build with the same sizes. */
#ifdef __cplusplus
#define EHP_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define EHP_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define EHP_OFFSET(type, field) __builtin_offsetof(type, field)

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

/* DWARF register numbers of AArch64 (AADWARF64): the frame record is
 * x29/x30, the return address column is x30 (LR). A rule's "rbp" fields
 * hold x29's rule on aarch64 (the frame pointer of either). */
enum ehp_a64_dwarf_reg {
	EHP_A64_REG_X29 = 29, /* fp */
	EHP_A64_REG_X30 = 30, /* lr: the return-address column */
	EHP_A64_REG_SP = 31,
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
	EHP_RULE_SAME = 0,	 /* unchanged from this frame; for ra on aarch64: still in x30 */
	EHP_RULE_CFA_OFFSET = 1, /* saved at *(cfa + offset) */
	EHP_RULE_UNDEFINED = 2,	 /* not recoverable; for ra: the bottom of the stack */
	EHP_RULE_DEREF = 3,	 /* saved at *(reg + offset), reg of this frame */
	EHP_RULE_OTHER = 4,	 /* register, val_offset, other expression: unsupported */
	/* ra only, x86-64: in register ra_offset (DWARF number, at most
	 * EHP_REG_RIP - 1) of this frame; glibc's __vfork pops its return
	 * address into rdi around the syscall. */
	EHP_RULE_REGISTER = 5,
};

enum ehp_rule_flags {
	EHP_RULE_FLAG_SIGNAL = 1, /* the FDE's CIE has the 'S' augmentation */
	/* aarch64: the return address is signed with PAC here (an odd number of
	 * DW_CFA_AARCH64_negate_ra_state so far). Informational: the walker
	 * strips the PAC bits of every return address, signed or not. */
	EHP_RULE_FLAG_RA_SIGNED = 2,
	/* The second form of a rule: rbp_offset and ra_offset of CFA_OFFSET
	 * rules count from the CFA rule's register (cfa - cfa_offset), not from
	 * the CFA. For frames bigger than s16 whose frame record sits at their
	 * bottom (aarch64: cfa=sp+192160 x29=cfa-192160 is x29=*(sp+0)). */
	EHP_RULE_FLAG_SAVED_FROM_REG = 4,
	/* x86-64, files with a CFA based on rbx (ld.so's _dl_runtime_resolve:
	 * cfa=rbx+32 while it calls _dl_fixup), whose walks must know the
	 * caller's rbx: RBX_SAVED, it is at *(save slots + cfa_deref_add)
	 * (never with EHP_CFA_DEREF, whose field that is); RBX_SAME, this frame
	 * left it as it was. A rule with neither loses rbx (every other file's
	 * rules: their frames may have saved and changed it). */
	EHP_RULE_FLAG_RBX_SAVED = 8,
	EHP_RULE_FLAG_RBX_SAME = 16,
};

/* One distinct unwind rule. Tables reference rules by index, so most rows
 * share a handful of these (cfa=rsp+8..rsp+56, ra=cfa-8). */
struct ehp_rule {
	ehp_s32 cfa_offset;
	ehp_s16 cfa_deref_add;
	ehp_s16 rbp_offset;
	ehp_s16 ra_offset;
	ehp_u8 cfa_kind; /* enum ehp_cfa_kind */
	ehp_u8 cfa_reg;	 /* enum ehp_dwarf_reg */
	ehp_u8 rbp_kind; /* enum ehp_reg_kind */
	ehp_u8 rbp_reg;	 /* for EHP_RULE_DEREF */
	ehp_u8 ra_kind;	 /* enum ehp_reg_kind */
	ehp_u8 flags;	 /* enum ehp_rule_flags */
};
EHP_ASSERT(sizeof(struct ehp_rule) == 16, "ehp_rule is 16 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_rule, cfa_kind) == 10, "ehp_rule.cfa_kind at 10");
EHP_ASSERT(EHP_OFFSET(struct ehp_rule, flags) == 15, "ehp_rule.flags at 15");

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
#define EHP_BUCKET_BITS 8
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
EHP_ASSERT(sizeof(struct ehp_page) == 16, "ehp_page is 16 bytes");
EHP_ASSERT(sizeof(struct ehp_buckets) == 2 * EHP_BUCKETS_PER_PAGE, "ehp_buckets is u16s only");
/* The search-step bounds the BPF loops rely on. */
EHP_ASSERT(EHP_MAX_PAGE_ROWS <= (1u << (EHP_LOOKUP_STEPS - 1)),
	   "a page's rows must be searchable in EHP_LOOKUP_STEPS halvings");
EHP_ASSERT((1u << EHP_PAGE_SHIFT_MIN) <= EHP_MAX_PAGE_ROWS &&
	       (1u << EHP_PAGE_SHIFT_MIN) <= EHP_PALETTE_MAX,
	   "the smallest page must always fit (one row per byte at most)");
EHP_ASSERT(EHP_MAX_PAGE_ROWS - 1 <= 0xffff, "bucket starts are u16");
EHP_ASSERT(EHP_PAGE_SHIFT_MIN >= EHP_BUCKET_BITS, "a bucket is at least one byte of code");

/* ---- The in-kernel walker ------------------------------------------------ */

/* BPF keeps rows in fixed chunks (array-map values are capped and 8-byte
 * rounded); the loader places each page's rows inside one chunk, so one map
 * lookup serves a whole search. Palettes are read one entry per lookup, so
 * they are packed EHP_PALETTE_PER_WORD u16 rule ids to a u64 word and
 * allocated per table, not per chunk (a chunk per table capped how many
 * small libraries fit). */
#define EHP_ROW_CHUNK_ROWS 4096
#define EHP_PALETTE_PER_WORD 4

#define EHP_MAX_USER_FRAMES 1024
#define EHP_MAX_KERNEL_FRAMES 127 /* perf_event_max_stack's default */
#define EHP_MAX_MAPPINGS 1024	  /* executable mappings per process */
#define EHP_MAPPING_SEARCH_STEPS 11
#define EHP_COMM_LEN 16
EHP_ASSERT(EHP_MAX_MAPPINGS == (1u << (EHP_MAPPING_SEARCH_STEPS - 1)),
	   "the mapping search halves EHP_MAX_MAPPINGS in EHP_MAPPING_SEARCH_STEPS steps");
EHP_ASSERT((EHP_MAX_MAPPINGS & (EHP_MAX_MAPPINGS - 1)) == 0, "mapping indexes are masked");
EHP_ASSERT((EHP_ROW_CHUNK_ROWS & (EHP_ROW_CHUNK_ROWS - 1)) == 0, "row indexes are masked");
EHP_ASSERT(EHP_MAX_PAGE_ROWS <= EHP_ROW_CHUNK_ROWS, "a page's rows fit in one chunk");

/* User frame addresses are below 2^47; the walker marks how it found each
 * one in the top bits. */
#define EHP_FRAME_EXACT (1ull << 63) /* an interrupted pc, not a return address */
#define EHP_FRAME_FP (1ull << 62)    /* found by the frame-pointer fallback */
#define EHP_FRAME_ADDR_MASK ((1ull << 62) - 1)

/* A Python frame (bpf/python.bpf.h): bit 61 set; the code object's
 * address >> 3 in bits 0-43 (objects are 8-aligned, below 2^47); in bits
 * 44-60 the instruction position as the interpreter keeps it (3.10: the
 * f_lasti index; 3.11+: bytes from the code object to the instruction),
 * EHP_PY_OFFSET_UNKNOWN when it does not fit. Code 0 marks where the
 * Python walk stopped, the offset then being an enum ehp_py_stop. User
 * space turns the code address into an index of the code objects it read
 * (agent/python/) before anything else sees the sample. */
#define EHP_FRAME_PYTHON (1ull << 61)
#define EHP_PY_CODE_BITS 44
#define EHP_PY_CODE_MASK ((1ull << EHP_PY_CODE_BITS) - 1)
#define EHP_PY_OFFSET_BITS 17
#define EHP_PY_OFFSET_UNKNOWN ((1u << EHP_PY_OFFSET_BITS) - 1)
#define EHP_PY_FRAME(code, off)                                                                    \
	(EHP_FRAME_PYTHON | ((ehp_u64)(off) << EHP_PY_CODE_BITS) | (((code) >> 3) & EHP_PY_CODE_MASK))
/* A user frame value that is a Python frame, not a native frame's address
 * (the walk never sets the exact or frame-pointer bit on one). */
#define EHP_IS_PY_FRAME(v) (((v) & (EHP_FRAME_PYTHON | EHP_FRAME_EXACT | EHP_FRAME_FP)) == EHP_FRAME_PYTHON)
#define EHP_PY_FRAME_CODE(v) (((v) & EHP_PY_CODE_MASK) << 3)
#define EHP_PY_FRAME_OFFSET(v) (((v) >> EHP_PY_CODE_BITS) & EHP_PY_OFFSET_UNKNOWN)
EHP_ASSERT(EHP_PY_CODE_BITS + EHP_PY_OFFSET_BITS == 61, "a Python frame's fields below bit 61");

/* Why the Python walk of a sample stopped early (a Python frame with code 0). */
enum ehp_py_stop {
	EHP_PY_STOP_NO_THREAD = 1,   /* no thread state of this thread found */
	EHP_PY_STOP_READ_FAULT = 2,  /* a thread state or frame could not be read */
	EHP_PY_STOP_FRAMES_END = 3,  /* the eval loop had no Python frame left */
	EHP_PY_STOP_BAD_FRAME = 4,   /* a frame without a code object */
};

/* How an interpreter links its frames. */
enum ehp_py_layout {
	EHP_PY_FRAME_OBJECTS = 1, /* 3.10: a PyFrameObject per eval call, f_back */
	EHP_PY_IS_ENTRY = 2,	  /* 3.11: _PyInterpreterFrame, is_entry ends an eval call */
	EHP_PY_CSTACK_OWNER = 3,  /* 3.12+: an entry frame owned by the C stack ends it */
};

/* One Python process as the walk needs it (py_procs[pid]): where its eval
 * loop is (runtime addresses: the function, then its .cold part or zeros)
 * and the offsets, per interpreter binary, of what leads from a thread to
 * its frames. */
struct ehp_py_proc {
	ehp_u64 eval_begin[2];
	ehp_u64 eval_end[2];
	ehp_u64 interp_head; /* address of _PyRuntime.interpreters.head */
	ehp_u16 interp_next;
	ehp_u16 interp_threads; /* threads.head */
	ehp_u16 tstate_next;
	ehp_u16 tstate_thread_id; /* pthread_self() of the thread: x86-64's fsbase */
	ehp_u16 tstate_frame;	  /* 3.11/3.12: cframe; else the current frame */
	ehp_u16 cframe_frame;	  /* cframe's current_frame; EHP_PY_NO_CFRAME */
	ehp_u16 frame_code;
	ehp_u16 frame_previous;
	ehp_u16 frame_instr;	/* 3.10: int f_lasti; else the instruction pointer */
	ehp_u16 frame_entry;	/* is_entry or owner byte */
	ehp_u16 frame_read;	/* bytes read per frame (<= EHP_PY_FRAME_READ_MAX) */
	ehp_u8 layout;		/* enum ehp_py_layout */
	ehp_u8 owner_cstack;	/* FRAME_OWNED_BY_CSTACK */
	/* 3.11+: the thread state's datastack_chunk, followed by
	 * datastack_top and datastack_limit; EHP_PY_NO_DATASTACK on 3.10. */
	ehp_u16 tstate_datastack;
	/* Low bits of the frame's code field that are tags, not address:
	 * 3.14's f_executable is a _PyStackRef (Py_TAG_BITS 3); 0 before. */
	ehp_u8 code_tags;
	ehp_u8 pad8;
	ehp_u16 pad[2];
};
#define EHP_PY_NO_CFRAME 0xffff
#define EHP_PY_NO_DATASTACK 0xffff
#define EHP_PY_FRAME_READ_MAX 128
#define EHP_PY_PROCS 1024
#define EHP_PY_THREADS 16384
/* Thread states looked at per sample before the walk gives up on a thread. */
#define EHP_PY_THREAD_SEARCH 256
EHP_ASSERT(sizeof(struct ehp_py_proc) == 72, "ehp_py_proc is 72 bytes");

/* ---- HotSpot JVMs (bpf/hotspot.bpf.h, agent/jvm/) ---------------------- */

/* A Java frame: bit 60 set; the frame's Method* >> 3 in bits 0-43 (Method
 * is 8-aligned metaspace, below 2^47); bit 59 set for a compiled frame
 * (C1, C2 or a native method's wrapper: the method, bci field 0, the pc
 * in the EHP_JVM_PC word that follows it);
 * bits 44-58 the bytecode index of an interpreted frame, EHP_JVM_BCI_UNKNOWN
 * when it is not known or does not fit. Method 0 is a frame of JVM code
 * that runs no Java method (a stub, an adapter, the interpreter without a
 * readable method); its bci field is then an enum ehp_jvm_blob. User space
 * turns the Method* into an index of the methods it named (agent/jvm/)
 * before anything else sees the sample. */
#define EHP_FRAME_JVM (1ull << 60)
#define EHP_JVM_COMPILED (1ull << 59)
#define EHP_JVM_METHOD_BITS 44
#define EHP_JVM_METHOD_MASK ((1ull << EHP_JVM_METHOD_BITS) - 1)
#define EHP_JVM_BCI_BITS 15
#define EHP_JVM_BCI_UNKNOWN ((1u << EHP_JVM_BCI_BITS) - 1)
#define EHP_JVM_FRAME(method, bci, compiled)                                                      \
	(EHP_FRAME_JVM | ((compiled) ? EHP_JVM_COMPILED : 0) |                                     \
	 ((ehp_u64)((bci) & EHP_JVM_BCI_UNKNOWN) << EHP_JVM_METHOD_BITS) |                          \
	 (((method) >> 3) & EHP_JVM_METHOD_MASK))
/* A user frame value that is a Java frame (never with a native frame's
 * exact, frame-pointer or Python bit). */
#define EHP_IS_JVM_FRAME(v)                                                                        \
	(((v) & (EHP_FRAME_JVM | EHP_FRAME_PYTHON | EHP_FRAME_EXACT | EHP_FRAME_FP)) == EHP_FRAME_JVM)
#define EHP_JVM_FRAME_METHOD(v) (((v) & EHP_JVM_METHOD_MASK) << 3)
#define EHP_JVM_FRAME_BCI(v) ((ehp_u32)((v) >> EHP_JVM_METHOD_BITS) & EHP_JVM_BCI_UNKNOWN)
#define EHP_JVM_FRAME_COMPILED(v) (((v) & EHP_JVM_COMPILED) != 0)
EHP_ASSERT(EHP_JVM_METHOD_BITS + EHP_JVM_BCI_BITS == 59, "a Java frame's fields below bit 59");
/* The word after a compiled frame (room allowing): bit 60, the compiled
 * bit and bit 58 (which a compiled frame, its bci field 0, never sets),
 * with the pc the frame ran at in bits 0-46 (its return address, or the
 * interrupted pc: at the leaf, or under a signal handler's frame), bit 47
 * set for an interrupted one (EHP_JVM_PC_EXACT). User space finds the
 * nmethod at that pc, checks it still runs the frame's method, and expands
 * the methods inlined at the pc into frames of their own; no other stage
 * sees it. */
#define EHP_JVM_PC_MARK (1ull << 58)
#define EHP_JVM_PC_BITS 47
#define EHP_JVM_PC_EXACT (1ull << EHP_JVM_PC_BITS)
#define EHP_JVM_PC_WORD(pc, exact)                                                                 \
	(EHP_FRAME_JVM | EHP_JVM_COMPILED | EHP_JVM_PC_MARK | ((exact) ? EHP_JVM_PC_EXACT : 0) |    \
	 ((pc) & ((1ull << EHP_JVM_PC_BITS) - 1)))
#define EHP_IS_JVM_PC(v)                                                                           \
	(((v) & (EHP_FRAME_JVM | EHP_FRAME_PYTHON | EHP_FRAME_EXACT | EHP_FRAME_FP | EHP_JVM_COMPILED |  \
		 EHP_JVM_PC_MARK)) == (EHP_FRAME_JVM | EHP_JVM_COMPILED | EHP_JVM_PC_MARK))
#define EHP_JVM_PC_OF(v) ((v) & ((1ull << EHP_JVM_PC_BITS) - 1))

/* What runs at a Java frame of method 0. */
enum ehp_jvm_blob {
	EHP_JVM_BLOB_STUB = 1,	      /* a stub, adapter or other JVM code blob */
	EHP_JVM_BLOB_INTERPRETER = 2, /* the interpreter, its method unreadable */
	EHP_JVM_BLOB_UNKNOWN = 3,     /* in the code cache, no blob found at pc */
};

/* One code heap of a JVM's code cache: code in [low, high), and its
 * segment map, one byte per 1 << log2_segment bytes from low: 0xff a free
 * segment, 0 a block's first, else how many segments back to go (again
 * until 0) to reach it (HotSpot's CodeHeap::find_block_for). */
struct ehp_jvm_heap {
	ehp_u64 low;
	ehp_u64 high;
	ehp_u64 segmap;
};
#define EHP_JVM_HEAPS 4
/* Segment-map hops the walk takes before it gives up on a pc. */
#define EHP_JVM_SEGMAP_HOPS 32

/* One JVM process as the walk needs it (jvm_procs[pid]), read from the
 * process's own gHotSpotVMStructs and gHotSpotVMTypes (agent/jvm/): its
 * code heaps and the offsets, in bytes, of the fields the walk reads. */
struct ehp_jvm_proc {
	struct ehp_jvm_heap heaps[EHP_JVM_HEAPS];
	ehp_u64 code_lo, code_hi; /* the heaps' hull: the walk's first test */
	ehp_u8 nheaps;
	ehp_u8 log2_segment;
	/* 1: CodeBlob's code start is an i32 offset from the blob (JDK 23+);
	 * 0: a pointer (_code_begin). */
	ehp_u8 code_begin_is_offset;
	/* 1: CodeBlob::_frame_complete_offset is an i16 (JDK 24+: the compact
	 * CodeBlob puts _kind right after it); 0: an i32. */
	ehp_u8 blob_frame_complete_i16;
	ehp_u16 heap_block;	     /* sizeof(HeapBlock): the blob follows it */
	ehp_u16 blob_name;	     /* CodeBlob::_name (const char*) */
	ehp_u16 blob_frame_size;     /* CodeBlob::_frame_size (i32, words) */
	ehp_u16 blob_frame_complete; /* CodeBlob::_frame_complete_offset (i32 or i16) */
	ehp_u16 blob_code_begin;     /* CodeBlob::_code_begin or _code_offset */
	ehp_u16 nmethod_method;	     /* nmethod::_method (Method*) */
	ehp_u16 method_const;	     /* Method::_constMethod */
	ehp_u16 const_method_size;   /* sizeof(ConstMethod): the bytecodes follow */
	/* An interpreted frame's slots below its frame pointer (bytes). */
	ehp_u8 interp_method;	 /* Method* at fp - this */
	ehp_u8 interp_bcp;	 /* the bytecode pointer at fp - this */
	ehp_u8 interp_sender_sp; /* the caller's unextended sp at fp - this */
	ehp_u8 pad1;
};
#define EHP_JVM_PROCS 1024
EHP_ASSERT(sizeof(struct ehp_jvm_heap) == 24, "ehp_jvm_heap is 24 bytes");
EHP_ASSERT(sizeof(struct ehp_jvm_proc) == 136, "ehp_jvm_proc is 136 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_jvm_proc, heap_block) == 116, "ehp_jvm_proc.heap_block at 116");

/* ---- V8 (node) JavaScript frames (bpf/v8.bpf.h, agent/v8/) -------------- */
/* A JavaScript frame: bit 58 set (bits 59-61 clear: not a JVM or Python
 * frame); the untagged address of the function's SharedFunctionInfo >> 3
 * in bits 0-43 (heap objects are 8-aligned, below 2^47); in bits 44-57 the
 * interpreted frame's bytecode offset slot as a Smi's value (the offset
 * plus BytecodeArray's header size minus its tag), EHP_V8_OFFSET_UNKNOWN
 * for a compiled frame or a value that does not fit. The walk pushes it
 * after the native frame of the pc that ran in the JavaScript frame. User
 * space turns the address into an index of the functions it named
 * (agent/v8/) before anything else sees the sample; index 0 names an
 * unreadable function ("[v8 unknown]"). */
#define EHP_FRAME_V8 (1ull << 58)
#define EHP_V8_SFI_BITS 44
#define EHP_V8_SFI_MASK ((1ull << EHP_V8_SFI_BITS) - 1)
#define EHP_V8_OFFSET_BITS 14
#define EHP_V8_OFFSET_UNKNOWN ((1u << EHP_V8_OFFSET_BITS) - 1)
#define EHP_V8_FRAME(sfi_untagged, off)                                                           \
	(EHP_FRAME_V8 | ((ehp_u64)((off) & EHP_V8_OFFSET_UNKNOWN) << EHP_V8_SFI_BITS) |            \
	 (((sfi_untagged) >> 3) & EHP_V8_SFI_MASK))
#define EHP_IS_V8_FRAME(v)                                                                         \
	(((v) & (EHP_FRAME_V8 | EHP_FRAME_JVM | EHP_FRAME_PYTHON | EHP_FRAME_EXACT | EHP_FRAME_FP |     \
		 EHP_JVM_COMPILED)) == EHP_FRAME_V8)
#define EHP_V8_FRAME_SFI(v) (((v) & EHP_V8_SFI_MASK) << 3)
#define EHP_V8_FRAME_OFFSET(v) ((ehp_u32)((v) >> EHP_V8_SFI_BITS) & EHP_V8_OFFSET_UNKNOWN)
EHP_ASSERT(EHP_V8_SFI_BITS + EHP_V8_OFFSET_BITS == 58, "a V8 frame's fields below bit 58");

/* One V8 process as the walk needs it (v8_procs[pid]), read from its V8
 * binary's v8dbg_* postmortem metadata (agent/v8/). Frame slots are byte
 * offsets from a JavaScript frame's frame pointer; object fields are byte
 * offsets from an untagged heap object. */
struct ehp_v8_proc {
	ehp_s16 off_fp_marker;		/* context, or a typed frame's Smi marker */
	ehp_s16 off_fp_function;	/* the JSFunction */
	ehp_s16 off_fp_bytecode_array;	/* an interpreted frame's BytecodeArray */
	ehp_s16 off_fp_bytecode_offset; /* its bytecode offset, a Smi */
	ehp_u16 off_map;		/* HeapObject::map */
	ehp_u16 off_instance_type;	/* Map::instance_type, a u16 */
	ehp_u16 off_function_shared;	/* JSFunction::shared */
	ehp_u16 type_shared_info;	/* SHARED_FUNCTION_INFO_TYPE */
	ehp_u16 type_bytecode_array;	/* BYTECODE_ARRAY_TYPE */
	ehp_u8 heap_object_tag;		/* 1 */
	ehp_u8 heap_object_tag_mask;	/* 3 */
	ehp_u8 smi_shift;		/* a Smi's value is raw >> this (32, or 1) */
	ehp_u8 pad[3];
};
#define EHP_V8_PROCS 1024
EHP_ASSERT(sizeof(struct ehp_v8_proc) == 24, "ehp_v8_proc is 24 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_v8_proc, heap_object_tag) == 18, "ehp_v8_proc.heap_object_tag at 18");

/* ---- Other interpreters' frames (Ruby, PHP, Perl) -------------------- */
/* An interpreter frame: bit 59 set with bits 60 and 61 clear (a Java
 * frame has 60, a Python frame 61, whose fields reach up to bit 60), never
 * the exact or frame-pointer bit; its runtime (enum ehp_interp_kind) in
 * bits 57-58; in bits 0-43 the address >> 3 of the object that names the
 * frame (Ruby: its iseq or method entry; PHP: its zend_function), in bits
 * 44-56 a runtime's own small field (an instruction index or line that
 * fits, else EHP_INTERP_AUX_UNKNOWN). Object 0 marks where that runtime's
 * walk stopped, aux then being the runtime's stop reason. The walk pushes
 * an interpreter call's frames leaf-side of the native frame of its
 * interpreter loop, as Python's. User space (agent/interp/, a tracker per
 * runtime) rewrites bits 0-56 to an index into the interpreter frame table
 * before anything else sees the sample; the marker and kind bits stay. */
#define EHP_FRAME_INTERP (1ull << 59)
#define EHP_INTERP_KIND_SHIFT 57
#define EHP_INTERP_OBJECT_BITS 44
#define EHP_INTERP_OBJECT_MASK ((1ull << EHP_INTERP_OBJECT_BITS) - 1)
#define EHP_INTERP_AUX_BITS 13
#define EHP_INTERP_AUX_UNKNOWN ((1u << EHP_INTERP_AUX_BITS) - 1)
enum ehp_interp_kind {
	EHP_INTERP_RUBY = 0,
	EHP_INTERP_PHP = 1,
	EHP_INTERP_PERL = 2,
};
#define EHP_INTERP_FRAME(kind, object, aux)                                                        \
	(EHP_FRAME_INTERP | ((ehp_u64)(kind) << EHP_INTERP_KIND_SHIFT) |                            \
	 ((ehp_u64)((aux) & EHP_INTERP_AUX_UNKNOWN) << EHP_INTERP_OBJECT_BITS) |                      \
	 (((object) >> 3) & EHP_INTERP_OBJECT_MASK))
#define EHP_IS_INTERP_FRAME(v)                                                                     \
	(((v) & (EHP_FRAME_INTERP | EHP_FRAME_JVM | EHP_FRAME_PYTHON | EHP_FRAME_EXACT | EHP_FRAME_FP)) == \
	 EHP_FRAME_INTERP)
#define EHP_INTERP_FRAME_KIND(v) ((ehp_u32)((v) >> EHP_INTERP_KIND_SHIFT) & 3)
#define EHP_INTERP_FRAME_OBJECT(v) (((v) & EHP_INTERP_OBJECT_MASK) << 3)
#define EHP_INTERP_FRAME_AUX(v) ((ehp_u32)((v) >> EHP_INTERP_OBJECT_BITS) & EHP_INTERP_AUX_UNKNOWN)
/* A named interpreter frame (after user space's rewrite): its table index
 * in bits 0-56. */
#define EHP_INTERP_INDEX_MASK ((1ull << EHP_INTERP_KIND_SHIFT) - 1)
EHP_ASSERT(EHP_INTERP_OBJECT_BITS + EHP_INTERP_AUX_BITS == EHP_INTERP_KIND_SHIFT,
	   "an interpreter frame's fields below its kind");
EHP_ASSERT(EHP_INTERP_KIND_SHIFT + 2 == 59, "the kind below the marker bit");

/* ---- Ruby (bpf/ruby.bpf.h, agent/ruby/) --------------------------------- */
/* A Ruby frame (EHP_INTERP_FRAME with EHP_INTERP_RUBY): object the
 * method entry (ep[-2]) of a Ruby method's frame (the iseq is its
 * definition's), the control frame's iseq for another Ruby frame (a block,
 * <main>, a class body), the method entry for a C method's frame; aux
 * (pc >> 3) % EHP_RUBY_PC_MOD for a Ruby frame (user space, knowing the
 * iseq's iseq_encoded, turns it into the instruction index: exact while
 * the iseq is shorter than EHP_RUBY_PC_MOD words), EHP_INTERP_AUX_UNKNOWN
 * for a C method. A frame whose env leads to a method's (a block's) is
 * followed by a word with aux EHP_RUBY_AUX_METHOD and that method's entry
 * (ep[-2]), which user space reads with it (the class it names) and drops.
 * Object 0: the Ruby walk stopped, aux an enum ehp_ruby_stop. */
#define EHP_RUBY_AUX_METHOD (EHP_INTERP_AUX_UNKNOWN - 1)
#define EHP_RUBY_PC_MOD EHP_RUBY_AUX_METHOD
/* (pc >> 3) % EHP_RUBY_PC_MOD without a division, which BPF's JIT makes
 * the CPU's divide (tens of cycles, once a frame): 2^13 is 2 modulo 8190,
 * so a word's bits from 13 up, doubled, added to its low 13 bits keep its
 * residue; five such folds take 61 bits to at most 8195, one subtraction the
 * rest of the way, without a branch (x + 2 reaches 2^13 from 8190 up, as
 * far as 16381): a branch would double the verifier's paths through a
 * loop that takes frames. Always inlined: a BPF subprogram of its own would be a
 * fourth call in the sampler's chain, past 6.1's 512 bytes of stack. */
EHP_ASSERT(EHP_RUBY_PC_MOD == 8190, "ehp_ruby_pc_aux folds by 2^13 = 2 (mod 8190)");
static inline __attribute__((always_inline)) ehp_u64 ehp_ruby_pc_aux(ehp_u64 pc)
{
	ehp_u64 x = pc >> 3;
	x = ((x >> 13) << 1) + (x & 8191);
	x = ((x >> 13) << 1) + (x & 8191);
	x = ((x >> 13) << 1) + (x & 8191);
	x = ((x >> 13) << 1) + (x & 8191);
	x = ((x >> 13) << 1) + (x & 8191);
	return x - ((x + 2) >> 13) * EHP_RUBY_PC_MOD;
}
enum ehp_ruby_stop {
	EHP_RUBY_STOP_NO_EC = 1,      /* the thread's execution context unreadable */
	EHP_RUBY_STOP_READ_FAULT = 2, /* a control frame or its env unreadable */
	EHP_RUBY_STOP_BAD_FRAME = 3,  /* a control frame outside the thread's VM stack */
	EHP_RUBY_STOP_FRAMES_END = 4, /* the VM loop has no control frame left */
	EHP_RUBY_STOP_JIT_EXIT = 5,   /* JIT code with no call into it found on the stack */
};
/* How the walk finds the thread's rb_execution_context_t: libruby's TLS
 * variable ruby_current_ec, through glibc's DTV (fsbase + 8 -> dtv, dtv +
 * 16 * tls_module -> libruby's TLS block of this thread, + tls_offset), or
 * at fsbase - tls_back once the walk has learned it. */
struct ehp_ruby_proc {
	ehp_u64 vm_begin; /* vm_exec_core, [begin, end) in the process */
	ehp_u64 vm_end;
	ehp_u64 tls_module;
	ehp_u64 tls_offset;
	ehp_u16 ec_vm_stack; /* rb_execution_context_t: VALUE *vm_stack */
	ehp_u16 ec_vm_stack_size; /* its size in VALUEs */
	ehp_u16 ec_cfp;      /* the current control frame */
	ehp_u16 cfp_size;    /* sizeof(rb_control_frame_t) */
	ehp_u16 cfp_pc;
	ehp_u16 cfp_iseq;
	ehp_u16 cfp_ep;
	ehp_u16 iseq_body;    /* rb_iseq_t's body */
	ehp_u16 body_encoded; /* the body's iseq_encoded */
	ehp_u16 pad;
	/* Learned by the walk, 0 from user space: fsbase - the address of the
	 * ruby_current_ec slot, when libruby's TLS block is in the static TLS
	 * below the thread pointer (the same distance for every thread of a
	 * process), so later walks skip the DTV. */
	ehp_u32 tls_back;
};
EHP_ASSERT(sizeof(struct ehp_ruby_proc) == 56, "ehp_ruby_proc is 56 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_ruby_proc, tls_back) == 52, "ehp_ruby_proc.tls_back at 52");
#define EHP_RUBY_PROCS 1024


/* ---- PHP (bpf/php.bpf.h, agent/php/) ------------------------------------ */
/* Code ranges of one PHP process whose native frames are the VM's. */
#define EHP_PHP_VM_RANGES 4
/* One PHP process as the walk needs it (php_procs[pid]), read from its php
 * binary or libphp.so (agent/php/): the VM loop's ranges and the offsets of
 * the structures the walk follows. An NTS build only: current_execute_data
 * is a field of the global executor_globals (a ZTS build keeps it in each
 * thread's TSRM block, at tsrm_get_ls_cache() + executor_globals_offset,
 * which this does not read). Addresses are the process's. */
struct ehp_php_proc {
	/* [vm_begin[i], vm_end[i]): code that runs PHP frames of its own: [0]
	 * execute_ex; [1] opcache's JIT code when jit_resume is set; [2], [3]
	 * execute_ex's other parts (GCC's execute_ex.cold: its slow paths,
	 * jumped to, on execute_ex's frame); 0, 0 where there is none. */
	ehp_u64 vm_begin[EHP_PHP_VM_RANGES];
	ehp_u64 vm_end[EHP_PHP_VM_RANGES];
	ehp_u64 current_execute_data; /* &executor_globals.current_execute_data */
	/* An address in execute_ex's body (its dispatch jump). The hybrid VM's
	 * JIT code runs on execute_ex's own stack frame, jumped to, never
	 * called: a native step from JIT code is execute_ex's step from here. */
	ehp_u64 jit_resume;
	ehp_u16 ex_opline;	      /* zend_execute_data.opline */
	ehp_u16 ex_func;	      /* .func */
	ehp_u16 ex_call_info;	      /* .This.u1.type_info: ZEND_CALL_* bits */
	ehp_u16 ex_prev;	      /* .prev_execute_data */
	/* The registers (DWARF numbers) the VM keeps its execute_data and opline
	 * in (GCC's hybrid VM on x86-64: r14, r15), 0 when not known: at a leaf
	 * pc in the VM the opline register is the current one, where the
	 * frame's own opline field is saved only before calls. */
	ehp_u8 reg_ex;
	ehp_u8 reg_opline;
	ehp_u16 pad;
	ehp_u32 call_top;	      /* ZEND_CALL_TOP: this frame began its execute_ex call */
};
EHP_ASSERT(sizeof(struct ehp_php_proc) == 96, "ehp_php_proc is 96 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_php_proc, call_top) == 92, "ehp_php_proc.call_top at 92");
#define EHP_PHP_PROCS 1024
/* PHP frames of one sample at most (a reference cycle in a process's memory
 * ends there). */
#define EHP_PHP_MAX_FRAMES 512
/* zend_function.type of an internal (C) function; user code is 2, eval 4. */
#define EHP_PHP_INTERNAL_FUNCTION 1
/* Why the PHP walk stopped: the aux of a stop marker (object 0). */
enum ehp_php_stop {
	EHP_PHP_STOP_READ_FAULT = 1,   /* a frame or its function could not be read */
	EHP_PHP_STOP_BAD_FRAME = 2,    /* a frame or function pointer no VM makes */
	EHP_PHP_STOP_NO_FRAMES = 3,    /* the VM ran with no current frame */
	EHP_PHP_STOP_TOO_DEEP = 4,     /* EHP_PHP_MAX_FRAMES */
};
/* aux of a PHP frame: EHP_INTERP_AUX_UNKNOWN where it has no opline, else
 * (opline >> EHP_PHP_OP_SHIFT) & EHP_PHP_OPLINE_MASK, the opline's index
 * in its function's opcodes (zend_op arrays of 32-byte zend_ops) modulo
 * EHP_PHP_OPLINE_MASK + 1 offset by the array's address: user space, which
 * reads the function's opcodes, turns it into the opline's index and line
 * (exact while the function has at most EHP_PHP_OPLINE_MASK + 1 oplines;
 * beyond, no line). No line read in the walk. */
#define EHP_PHP_OP_SHIFT 5
#define EHP_PHP_OPLINE_MASK 0xfffu
EHP_ASSERT(EHP_PHP_OPLINE_MASK < EHP_INTERP_AUX_UNKNOWN, "an opline's aux below the unknown one");

/* ---- Perl (bpf/perl.bpf.h, agent/perl/) ---------------------------------- */
/* One Perl process as the walk needs it (perl_procs[pid]), read from its
 * libperl (agent/perl/): the run loop's range, how a thread finds its
 * interpreter (PL_current_context, libperl's TLS variable that
 * PERL_SET_CONTEXT sets for each thread of an ithreads build, read through
 * glibc's DTV as Ruby's ruby_current_ec), and the offsets the walk
 * follows, probed from libperl's code. A Perl frame (EHP_INTERP_FRAME with
 * EHP_INTERP_PERL): object a sub's CV, aux the line of its current
 * statement (EHP_INTERP_AUX_UNKNOWN when none, or at or past
 * EHP_PERL_AUX_BLOCK); or object a COP, aux EHP_PERL_AUX_BLOCK (code that
 * runs outside any sub of its own: the main program, a sort block) or
 * EHP_PERL_AUX_EVAL (an eval's code); object 0: the walk stopped, aux an
 * enum ehp_perl_stop. */
struct ehp_perl_proc {
	ehp_u64 runops_begin; /* Perl_runops_standard, [begin, end) in the process */
	ehp_u64 runops_end;
	ehp_u64 tls_module;   /* PL_current_context: libperl's TLS module id */
	ehp_u64 tls_offset;   /* and its offset in the module's block */
	ehp_u16 i_curstackinfo; /* PerlInterpreter: PL_curstackinfo */
	ehp_u16 i_curcop;     /* PL_curcop */
	ehp_u16 si_cxstack;   /* struct stackinfo: the context array */
	ehp_u16 si_prev;      /* the stackinfo this one was pushed over */
	ehp_u16 si_cxix;      /* the top context's index, an I32 */
	ehp_u16 cx_size;      /* sizeof(PERL_CONTEXT) */
	ehp_u16 cx_oldcop;    /* blk_oldcop: the statement that entered the block */
	ehp_u16 cx_retop;     /* blk_sub.retop: 0 when C code called the sub */
	ehp_u16 cx_cv;        /* blk_sub.cv */
	ehp_u16 cop_line;     /* COP's cop_line, a u32 */
	/* 0 from user space; the walk writes the distance below the thread
	 * pointer of the PL_current_context slot when libperl's TLS block is
	 * static (as ehp_ruby_proc.tls_back), so later walks skip the DTV. */
	ehp_u32 tls_back;
};
EHP_ASSERT(sizeof(struct ehp_perl_proc) == 56, "ehp_perl_proc is 56 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_perl_proc, cop_line) == 50, "ehp_perl_proc.cop_line at 50");
EHP_ASSERT(EHP_OFFSET(struct ehp_perl_proc, tls_back) == 52, "ehp_perl_proc.tls_back at 52");
#define EHP_PERL_PROCS 1024
/* The bytes of a stackinfo and of a context the walk reads: every field it
 * takes lies below (user space checks the offsets against them). */
#define EHP_PERL_SI_READ 48
#define EHP_PERL_CX_READ 80
#define EHP_PERL_AUX_BLOCK (EHP_INTERP_AUX_UNKNOWN - 2)
#define EHP_PERL_AUX_EVAL (EHP_INTERP_AUX_UNKNOWN - 1)
/* Why the Perl walk stopped: the aux of a stop marker (object 0). */
enum ehp_perl_stop {
	EHP_PERL_STOP_NO_INTERP = 1,  /* the thread's interpreter or its stackinfo unreadable */
	EHP_PERL_STOP_READ_FAULT = 2, /* a context or stackinfo could not be read */
	EHP_PERL_STOP_BAD_CONTEXT = 3, /* a context index or size no interpreter makes */
	EHP_PERL_STOP_TOO_DEEP = 4,   /* EHP_PERL_MAX_CONTEXTS looked at, or 64 in a row with no frame */
};
#define EHP_PERL_MAX_CONTEXTS 512

/* Why a user walk stopped: X(enumerator, value, name for reports). The one
 * list: the enum below and StopReasonName (bpf/stop_reasons.h)
 * are both made from it, so a new reason cannot go unnamed. */
#define EHP_STOP_REASONS(X)                                                                        \
	X(EHP_STOP_NONE, 0, "none") /* still walking (internal) */                                 \
	/* return address undefined: _start, clone3 */                                             \
	X(EHP_STOP_END_OF_STACK, 1, "end of stack")                                                \
	X(EHP_STOP_NO_PROC, 2, "process not yet known")                                            \
	/* pc in no known executable mapping */                                                    \
	X(EHP_STOP_NO_MAPPING, 3, "pc outside known mappings")                                     \
	/* mapping known, its table not loaded */                                                  \
	X(EHP_STOP_NO_TABLE, 4, "table not loaded yet")                                            \
	/* (before the frame-pointer fallback; now 13 or 14) */                                    \
	X(EHP_STOP_NO_CFI, 5, "no CFI for pc")                                                     \
	/* expression, unknown register, ... */                                                    \
	X(EHP_STOP_UNSUPPORTED_RULE, 6, "unsupported CFI rule")                                    \
	X(EHP_STOP_READ_FAULT, 7, "stack read fault")                                              \
	X(EHP_STOP_DEPTH_LIMIT, 8, "depth limit")                                                  \
	/* zero pc, stack not growing */                                                           \
	X(EHP_STOP_BAD_FRAME, 9, "bad frame")                                                      \
	/* rbp 0 */                                                                                \
	X(EHP_STOP_FP_END, 10, "frame-pointer chain ended")                                        \
	X(EHP_STOP_NO_USER_STACK, 11, "no user stack (kernel thread, exiting, exec replacing it)")   \
	X(EHP_STOP_NOT_WALKED, 12, "user stack not requested")                                     \
	/* pc without CFI in a mapping with a table; rbp no frame pointer */                       \
	X(EHP_STOP_NO_CFI_BAD_FP, 13, "no CFI for pc, frame pointer implausible")                  \
	/* the frame-pointer fallback's return address in no executable mapping */                 \
	X(EHP_STOP_FP_RA_UNMAPPED, 14, "no CFI for pc, frame pointer leads outside the mappings") \
	/* the event's walks used cfg.walk_budget_ns (EHP_STAT_BUDGET_CUTS) */                      \
	X(EHP_STOP_TIME_BUDGET, 15, "time budget spent")                                           \
	/* a walk finished late (agent/deferred) met an interpreter's loop: the */                 \
	/* runtime's frames there were not kept, so the stack ends before it */                    \
	X(EHP_STOP_LATE_RUNTIME, 16, "runtime frames not kept (walk finished late)")

#define EHP_STOP_ENUMERATOR_(name, value, text) name = value,
enum ehp_stop_reason {
	EHP_STOP_REASONS(EHP_STOP_ENUMERATOR_) EHP_STOP_REASON_COUNT = 17,
};
#undef EHP_STOP_ENUMERATOR_

enum ehp_unwinder {
	EHP_UNWINDER_DWARF = 0, /* CFI tables, frame pointers where no CFI */
	EHP_UNWINDER_FP = 1,
	EHP_UNWINDER_BOTH = 2, /* both walks of the same sample */
};

enum ehp_mapping_flags {
	EHP_MAPPING_HAS_TABLE = 1,
	EHP_MAPPING_PENDING = 2, /* its table is being built: stop, don't guess */
	EHP_MAPPING_ANON = 4,    /* anonymous memory (JIT code): no file behind it */
};

/* One executable mapping: ELF address = pc - bias. */
struct ehp_mapping {
	ehp_u64 begin;
	ehp_u64 end;
	ehp_u64 bias;
	ehp_u32 table_id;
	ehp_u32 flags; /* enum ehp_mapping_flags */
};
EHP_ASSERT(sizeof(struct ehp_mapping) == 32, "ehp_mapping is 32 bytes");

/* Mappings the kernel side adds itself (exec, mmap of a file whose table
 * is loaded) between two of user space's reads of /proc/PID/maps. */
#define EHP_KERNEL_MAPPINGS 32

/* A process's executable mappings: `mappings` sorted by begin and
 * non-overlapping, as user space last read them; `kernel` unsorted, newest
 * last, searched when `mappings` holds no match (n_kernel may run past
 * EHP_KERNEL_MAPPINGS: slots are claimed by an atomic add; user space
 * writes it back to 0 with the next full entry). */
struct ehp_proc {
	ehp_u32 n_mappings;
	ehp_u32 n_kernel;
	struct ehp_mapping mappings[EHP_MAX_MAPPINGS];
	struct ehp_mapping kernel[EHP_KERNEL_MAPPINGS];
};
EHP_ASSERT(EHP_OFFSET(struct ehp_proc, mappings) == 8, "ehp_proc's mappings after 8 bytes");
EHP_ASSERT(sizeof(struct ehp_proc) == 8 + 32 * (EHP_MAX_MAPPINGS + EHP_KERNEL_MAPPINGS),
	   "ehp_proc: counts, sorted mappings, kernel-added ones");
EHP_ASSERT(EHP_OFFSET(struct ehp_proc, kernel) == 8 + 32 * EHP_MAX_MAPPINGS,
	   "the walk indexes kernel[] as mappings[EHP_MAX_MAPPINGS...]");

/* A file as the kernel names it: its superblock's dev_t in the kernel's
 * encoding (major << 20 | minor, the numbers /proc/PID/maps prints) and
 * its inode number. The file_tables map's key. */
struct ehp_file_key {
	ehp_u64 dev;
	ehp_u64 ino;
};
EHP_ASSERT(sizeof(struct ehp_file_key) == 16, "ehp_file_key is 16 bytes");
#define EHP_KDEV(major, minor) (((ehp_u64)(major) << 20) | (minor))
/* file_tables' key for the vDSO, which no file holds: (0, 1). */
#define EHP_VDSO_KEY_DEV 0
#define EHP_VDSO_KEY_INO 1

/* What the exec and mmap programs need to map a file into a process
 * without a round trip to user space (file_tables[key]). User space writes
 * it when it first sees the file, whatever its table's state, rewrites it
 * when that changes, and deletes it before it forgets the file or unloads
 * its table: a process mapping a file whose table is still being built
 * gets a PENDING mapping (its walk is finished late), one of a file
 * without CFI a frame-pointer one, and user space hears of both. ELF
 * addresses are page-aligned as the loader maps them. */
struct ehp_file_info {
	ehp_u32 table_id; /* with EHP_MAPPING_HAS_TABLE */
	ehp_u32 flags;	  /* enum ehp_mapping_flags: a mapping of the file's */
	ehp_u64 size;	     /* i_size: a reused inode number is another file */
	ehp_u64 entry;	     /* e_entry: an executable's bias is AT_ENTRY - entry */
	ehp_u64 first_vaddr; /* the first PT_LOAD's vaddr: an interpreter's bias is AT_BASE - this */
	ehp_u64 x_begin;     /* the executable PT_LOAD, [x_begin, x_end) */
	ehp_u64 x_end;
	ehp_u64 x_offset;	   /* its file offset: an mmap at this offset maps x_begin */
	struct ehp_file_key interp; /* executables: the interpreter seen with them, or zeros */
};
EHP_ASSERT(sizeof(struct ehp_file_info) == 72, "ehp_file_info is 72 bytes");

/* Where one file's compact table sits in the global maps. Pages'
 * first_row / first_palette are global indexes there. */
struct ehp_table_info {
	ehp_u64 start;
	ehp_u64 end;
	ehp_u32 page_shift;
	ehp_u32 num_pages;
	ehp_u32 page_base;
	ehp_u32 rule_base;
};
EHP_ASSERT(sizeof(struct ehp_table_info) == 32, "ehp_table_info is 32 bytes");

enum ehp_event_kind {
	EHP_EVENT_SAMPLE = 1,
	EHP_EVENT_UNKNOWN_PID = 2, /* a sampled process user space has no tables for */
	EHP_EVENT_UNKNOWN_PC = 3,  /* a pc outside every known mapping */
	EHP_EVENT_EXEC = 4,
	EHP_EVENT_EXIT = 5,
	EHP_EVENT_FORK = 6,   /* a followed process forked */
	EHP_EVENT_VERIFY = 7, /* registers + stack copy of the sample before it */
	EHP_EVENT_MAPPING = 8, /* struct ehp_mapping_event */
	EHP_EVENT_DEFERRED = 9, /* struct ehp_deferred: the sample after it, to finish later */
	/* A followed process mapped a file's code that file_tables does not
	 * hold (addr: where): user space has not met the file, and a plugin
	 * dlopen'd and closed in a millisecond is only seen in the maps now. */
	EHP_EVENT_NEW_FILE = 10,
};

/* --verify: every cfg.verify_every-th sample is followed by a VERIFY event
 * (struct ehp_event, then this, then stack_len bytes of the user stack from
 * regs[EHP_REG_RSP]) for an unwind in user space with libdwfl. */
#define EHP_VERIFY_STACK_MAX (64 * 1024)
#define EHP_VERIFY_PAGES (EHP_VERIFY_STACK_MAX / 4096 + 1)
struct ehp_verify {
	ehp_u64 regs[EHP_REG_RIP + 1]; /* DWARF numbering */
	ehp_u32 stack_len;
	ehp_u32 leaf_exact; /* the leaf pc was interrupted, not a syscall's return */
};
EHP_ASSERT(sizeof(struct ehp_verify) == 8 * (EHP_REG_RIP + 1) + 8, "ehp_verify: regs, len, pad");

/* A sample whose walk stopped because its table was not loaded yet, its
 * process was not known yet or its pc, or the return address its frame
 * pointer led to, was in no mapping the entry has (EHP_STOP_NO_TABLE,
 * EHP_STOP_NO_PROC, EHP_STOP_NO_MAPPING, EHP_STOP_FP_RA_UNMAPPED) is sent
 * right after an EHP_EVENT_DEFERRED record (struct ehp_event with the
 * sample's pid, tid, cpu and time, then this, then stack_len bytes of the
 * user stack from regs[EHP_REG_RSP]): the walk's state where it stopped,
 * which user space continues with the same walk (bpf/host/) once the table
 * exists (agent/deferred/). Each CPU's copies are bounded by a token bucket
 * of cfg.deferred_rate bytes a second. */
/* 64 KiB, as --verify copies: a compiler's main thread (clang's parser and
 * Sema) stops 20-35 frames deep with more than 16 KiB of stack above it. A
 * copy ends at the first unreadable page (the stack's top), so a shallow
 * stack pays for what it has. */
#define EHP_DEFERRED_STACK_MAX (64 * 1024)
#define EHP_DEFERRED_PAGES (EHP_DEFERRED_STACK_MAX / 4096 + 1)
/* The bucket holds this many seconds of cfg.deferred_rate. */
#define EHP_DEFERRED_BURST_S 2
/* Copies for EHP_STOP_NO_MAPPING and EHP_STOP_FP_RA_UNMAPPED a process may
 * send a second: a library or JIT code just mapped stops a few samples
 * before user space reads it, while a
 * process whose stack leads to unmapped addresses (crafted or garbage)
 * would stop every one and spend every CPU's bucket. */
#define EHP_DEFERRED_NOMAP_PER_S 16
/* Processes whose NO_MAPPING copies are counted at once (an LRU map). */
#define EHP_DEFERRED_NOMAP_PROCS 4096
struct ehp_deferred {
	ehp_u64 regs[EHP_REG_RIP + 1]; /* DWARF numbering; regs[EHP_REG_RIP] the pc */
	ehp_u32 valid;		       /* bit per register of regs known */
	ehp_u32 exact;		       /* the pc is an interrupted one, not a return address */
	ehp_u32 stack_len;
	ehp_u16 n_user;	     /* the user frames the kernel's walk found */
	ehp_u8 stop_reason;  /* one of the four above */
	ehp_u8 pad;
};
EHP_ASSERT(sizeof(struct ehp_deferred) == 8 * (EHP_REG_RIP + 1) + 16, "ehp_deferred: regs, state, len");
EHP_ASSERT((EHP_DEFERRED_STACK_MAX & (EHP_DEFERRED_STACK_MAX - 1)) == 0, "deferred copies are masked");

enum ehp_sample_flags {
	EHP_SAMPLE_USER_MODE = 1, /* the sample hit user mode */
	/* An off-CPU event, not a timer sample: the task blocked for addr
	 * nanoseconds with these stacks (switched out, then back in). */
	EHP_SAMPLE_OFF_CPU = 2,
	/* A probe hit (uprobe, uretprobe, USDT, tracepoint), counted. */
	EHP_SAMPLE_PROBE = 4,
	/* Set by user space, never by BPF: the user walk was finished after
	 * the sample, from its EHP_EVENT_DEFERRED copy (agent/deferred/). */
	EHP_SAMPLE_FINISHED_LATE = 8,
	/* cfg.interp_alternate: this sample's walk left the interpreters'
	 * frames out (Python, Ruby, PHP, Perl: native frames only). */
	EHP_SAMPLE_INTERP_OFF = 16,
};

/* Which switched-out tasks off-CPU time is charged for, by the state they
 * left the CPU in (cfg.offcpu_states, a mask). */
enum ehp_offcpu_state {
	EHP_OFFCPU_PREEMPTED = 1,	/* still runnable: waited for a CPU */
	EHP_OFFCPU_SLEEPING = 2,	/* TASK_INTERRUPTIBLE */
	EHP_OFFCPU_UNINTERRUPTIBLE = 4, /* TASK_UNINTERRUPTIBLE (D): I/O, some locks */
	EHP_OFFCPU_ALL_STATES = 7,
};

/* Every ring-buffer record starts with this; samples are followed by
 * n_kernel kernel frames, n_user user frames, then n_user_fp frames of the
 * frame-pointer walk (with --unwinder both), each a u64. */
struct ehp_event {
	ehp_u32 kind; /* enum ehp_event_kind */
	ehp_u32 pid;  /* tgid */
	ehp_u32 tid;
	ehp_u32 cpu;
	ehp_u64 time_ns;
	ehp_u64 addr; /* UNKNOWN_PC: the pc; FORK: the child pid; OFF_CPU: ns */
	char comm[EHP_COMM_LEN];
	ehp_u16 n_kernel;
	ehp_u16 n_user;
	ehp_u16 n_user_fp;
	ehp_u8 stop_reason;    /* enum ehp_stop_reason */
	ehp_u8 fp_stop_reason; /* for the frame-pointer walk */
	ehp_u32 flags;	       /* enum ehp_sample_flags */
	ehp_u32 bpf_ns;	       /* time spent in the program before sending */
};
EHP_ASSERT(sizeof(struct ehp_event) == 64, "ehp_event is 64 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_event, comm) == 32, "ehp_event.comm at 32");
EHP_ASSERT(EHP_OFFSET(struct ehp_event, n_kernel) == 48, "ehp_event.n_kernel at 48");
EHP_ASSERT(EHP_OFFSET(struct ehp_event, flags) == 56, "ehp_event.flags at 56");

/* EHP_EVENT_MAPPING: a mapping the kernel side added to a process entry
 * (at exec, at an mmap), so user space can resolve its addresses even when
 * the process is gone before /proc/PID/maps is read. ev.addr: the
 * mapping's file offset. */
struct ehp_mapping_event {
	struct ehp_event ev;
	struct ehp_mapping m;
	struct ehp_file_key file;
};
EHP_ASSERT(sizeof(struct ehp_mapping_event) == 64 + 32 + 16, "ehp_mapping_event: header, mapping, file");

#define EHP_MAX_EVENT_FRAMES (EHP_MAX_KERNEL_FRAMES + 2 * EHP_MAX_USER_FRAMES)

/* Counters in the per-CPU stats map, summed by user space. */
enum ehp_stat {
	EHP_STAT_SAMPLES = 0,
	EHP_STAT_RINGBUF_DROPS = 1,
	EHP_STAT_EVENT_DROPS = 2,
	EHP_STAT_FILTERED = 3,
	EHP_STAT_OFFCPU_EVENTS = 4,    /* blocks over the threshold, sent */
	EHP_STAT_OFFCPU_UNTRACKED = 5, /* switch-outs the full offcpu_tasks map lost */
	EHP_STAT_OFFCPU_UNSEEN = 6,    /* blocks whose switch-in no sched_switch showed */
	EHP_STAT_BUDGET_CUTS = 7,      /* walks stopped by cfg.walk_budget_ns */
	EHP_STAT_DEFERRED_SENT = 8,    /* EHP_EVENT_DEFERRED copies sent */
	EHP_STAT_DEFERRED_BUDGET = 9,  /* copies cfg.deferred_rate's bucket had no room for */
	EHP_STAT_COUNT = 10,
};

/* Load-time settings (the program's .rodata). */
struct ehp_config {
	ehp_u32 unwinder;      /* enum ehp_unwinder */
	ehp_u32 user_stacks;   /* 0 with -K */
	ehp_u32 kernel_stacks; /* 0 with -U */
	ehp_u32 filter_pids;   /* only pids in the targets map */
	ehp_u32 max_frames;    /* <= EHP_MAX_USER_FRAMES */
	ehp_u32 self_pid;      /* never sampled */
	ehp_u32 verify_every;  /* 0: off; N: capture every Nth sample (per CPU) */
	ehp_u32 offcpu_states; /* enum ehp_offcpu_state mask */
	ehp_u64 offcpu_min_ns; /* shorter blocks are not sent */
	/* Filters every program applies (--cgroup, -C, --comm, --include-idle). */
	ehp_u64 cgroup_id;     /* 0: any; else this cgroup v2 or one below it */
	ehp_u32 cgroup_level;  /* its depth below the root (bpf ancestor level) */
	ehp_u32 filter_cpus;   /* only CPUs marked in the cpu_filter map */
	ehp_u32 include_idle;  /* also sample the idle task (pid 0) */
	ehp_u32 filter_comm;   /* only tasks whose comm is comm */
	char comm[EHP_COMM_LEN];
	/* Entries made and extended in the kernel at fork, exec and mmap
	 * (bpf/proc_learn.bpf.h); 0: only from user space's /proc reads. */
	ehp_u32 learn_maps;
	/* Python frames from the interpreters in py_procs (bpf/python.bpf.h);
	 * 0 with --no-python. */
	ehp_u32 python;
	/* What one CPU's events may take in every EHP_BUDGET_WINDOW_NS; past
	 * it their walks stop with EHP_STOP_TIME_BUDGET. A sample's program
	 * runs in the timer's interrupt, taking the CPU from the interrupted
	 * task, and the kernel's throttling for a handler's time
	 * (perf_sample_event_took) sees only NMI-driven events, not the
	 * hrtimer of cpu-clock. 0: no limit. */
	ehp_u64 walk_budget_ns;
	/* Bytes a second each CPU may copy for walks to finish later
	 * (EHP_EVENT_DEFERRED); 0: none. */
	ehp_u32 deferred_rate;
	/* --alternate-interp-walks: every other sample of a CPU walks no
	 * interpreter's frames (EHP_SAMPLE_INTERP_OFF), so the walks' cost is
	 * the two halves' difference within one run; 0: every sample. */
	ehp_u32 interp_alternate;
};
EHP_ASSERT(sizeof(struct ehp_config) == 104, "ehp_config is 104 bytes");
EHP_ASSERT(EHP_OFFSET(struct ehp_config, deferred_rate) == 96, "ehp_config.deferred_rate at 96");
EHP_ASSERT(EHP_OFFSET(struct ehp_config, walk_budget_ns) == 88, "ehp_config.walk_budget_ns at 88");
EHP_ASSERT(EHP_OFFSET(struct ehp_config, offcpu_min_ns) == 32, "ehp_config.offcpu_min_ns at 32");
EHP_ASSERT(EHP_OFFSET(struct ehp_config, cgroup_id) == 40, "ehp_config.cgroup_id at 40");
EHP_ASSERT(EHP_OFFSET(struct ehp_config, comm) == 64, "ehp_config.comm at 64");

/* The value stored in the targets map (key: a pid or tid to sample); the
 * BPF side tests only presence, the value says what user space put there
 * (children found by the fork tracepoint are processes). */
enum ehp_target {
	EHP_TARGET_PROCESS = 1, /* -p, the command, a followed fork's child */
	EHP_TARGET_THREAD = 2,	/* -t */
};

/* Default BPF map sizes: the BPF object's compiled-in max_entries and the
 * C++ defaults (MapSizes, agent/tables/map_sizes.h) both come from here;
 * user space resizes the table maps from --table-memory before loading. */
#define EHP_DEFAULT_TABLES 4096
#define EHP_DEFAULT_PAGES (1 << 16)	    /* each up to 64 KiB of code */
#define EHP_DEFAULT_ROW_CHUNKS 1024	    /* EHP_ROW_CHUNK_ROWS rows each */
#define EHP_DEFAULT_PALETTE_WORDS (1 << 16) /* EHP_PALETTE_PER_WORD entries each */
#define EHP_DEFAULT_RULES (1 << 16)
#define EHP_DEFAULT_PROCS 4096
#define EHP_DEFAULT_RINGBUF_BYTES (16 << 20)
#define EHP_MAX_TARGETS 65536
#define EHP_NOTIFIED_ENTRIES 4096
/* Threads sampled between an exec's start_thread and its exec event. */
#define EHP_EXEC_START_ENTRIES 1024
/* CPUs -C can name (the cpu_filter map's size). */
#define EHP_MAX_FILTER_CPUS 4096
/* Threads switched out at once whose off-CPU time and stacks are kept. */
#define EHP_OFFCPU_THREADS 16384

/* The tail-call build's walk (kernels without bpf_loop, bpf/tailwalk.bpf.h):
 * the leaf, then EHP_TAIL_FRAMES steps in each of at most EHP_TAIL_CALLS
 * tail-called programs (the kernel's MAX_TAIL_CALL_CNT). */
#define EHP_TAIL_FRAMES 31
#define EHP_TAIL_CALLS 33
#define EHP_TAIL_MAX_USER_FRAMES (1 + EHP_TAIL_CALLS * EHP_TAIL_FRAMES)

/* The window of ehp_config.walk_budget_ns (bpf/walk.bpf.h). */
#define EHP_BUDGET_WINDOW_NS 100000000ull

#endif /* EHPROF_BPF_EHPROF_ABI_H_ */
