/* What the BPF walk (bpf/walk.bpf.h and the headers it builds on) needs of
 * the kernel, for compiling that same source as ordinary C in user space
 * (bpf/host/walk_replay.c): the BPF types and map declaration macros, the
 * few kernel structs it reads (task, pt_regs, the signal frame), and the
 * helpers as functions over a captured stack and in-memory maps (struct
 * ehp_replay_env, bpf/host/walk_replay.h). Only walk_replay.c includes
 * this; nothing here is seen by the BPF build.
 *
 * The walk built here is x86-64's (captures are x86-64 stacks) on any host
 * architecture: the x86-64 user ABI structs are declared below, not taken
 * from the host's <asm/...> headers, and only architecture-neutral uapi
 * headers are included. Host and capture must share the byte order (both
 * little-endian: x86-64, arm64). */
#ifndef EHPROF_BPF_HOST_BPF_SHIM_H_
#define EHPROF_BPF_HOST_BPF_SHIM_H_

#if defined(__TARGET_ARCH_arm64)
#error "the host walk replays x86-64 captures: build it without __TARGET_ARCH_arm64"
#endif
#ifndef __TARGET_ARCH_x86
#define __TARGET_ARCH_x86 1
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "captures hold x86-64's little-endian words"
#endif

#include <linux/bpf.h>	 /* BPF_MAP_TYPE_*, BPF_ANY, BPF_RB_*: the same on every arch */
#include <linux/types.h> /* __u8 ... __s64 */
#include <stddef.h>

#define EHP_INLINE static inline __attribute__((always_inline))
#undef __always_inline /* linux/stddef.h's is a plain __inline__ */
#define __always_inline inline __attribute__((always_inline))
#define __noinline __attribute__((noinline))
#define SEC(name)
/* libbpf's BTF map definitions (bpf_helpers.h): types only, no storage. */
#define __uint(name, val) int(*name)[val]
#define __type(name, val) __typeof__(val) *name

/* The fields of the kernel's structs the walk reads. */
struct ehp_shim_thread {
	__u64 fsbase;
};
struct mm_struct {
	unsigned long arg_end;  /* 0 while exec builds the address space */
	unsigned long end_code; /* 0 until the ELF loader has built it */
};
struct task_struct {
	unsigned int flags;
	struct mm_struct *mm;
	struct ehp_shim_thread thread;
};
/* x86-64's struct pt_regs (arch/x86/include/uapi/asm/ptrace.h). */
struct pt_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
/* x86-64's struct sigcontext_64 (arch/x86/include/uapi/asm/sigcontext.h):
 * what a signal frame saves, read by bpf/walk.bpf.h through ehp_sigcontext. */
struct sigcontext_64 {
	__u64 r8, r9, r10, r11, r12, r13, r14, r15;
	__u64 di, si, bp, bx, dx, ax, cx, sp, ip, flags;
	__u16 cs, gs, fs, ss;
	__u64 err, trapno, oldmask, cr2;
	__u64 fpstate;
	__u64 reserved1[8];
};
_Static_assert(sizeof(struct sigcontext_64) == 256, "x86-64's sigcontext is 256 bytes");
_Static_assert(__builtin_offsetof(struct sigcontext_64, ip) == 128, "x86-64's sigcontext has ip at 128");
_Static_assert(sizeof(struct pt_regs) == 21 * 8, "x86-64's pt_regs is 21 words");

/* The kernel's struct ucontext (include/uapi/asm-generic/ucontext.h) up to
 * uc_mcontext; glibc's is ucontext_t, so the name is free. */
struct ucontext {
	__u64 uc_flags;
	__u64 uc_link;
	__u64 ss_sp;
	__s32 ss_flags;
	__u32 ss_pad;
	__u64 ss_size;
	struct sigcontext_64 uc_mcontext;
};
_Static_assert(__builtin_offsetof(struct ucontext, uc_mcontext) == 40,
	       "the kernel's ucontext has its mcontext at 40 on x86-64");

/* The helpers (include/uapi/linux/bpf.h's semantics), static in
 * walk_replay.c under names of their own: libbpf's user-space API has a
 * bpf_map_lookup_elem and a bpf_map_update_elem of its own, which the
 * agent's calls must keep reaching. */
#define bpf_map_lookup_elem ehp_shim_map_lookup_elem
#define bpf_map_update_elem ehp_shim_map_update_elem
#define bpf_probe_read_user ehp_shim_probe_read_user
#define bpf_loop ehp_shim_loop
#define bpf_ringbuf_output ehp_shim_ringbuf_output
#define bpf_ringbuf_query ehp_shim_ringbuf_query
#define bpf_ktime_get_ns ehp_shim_ktime_get_ns
#define bpf_get_smp_processor_id ehp_shim_get_smp_processor_id
#define bpf_get_current_comm ehp_shim_get_current_comm
#define bpf_get_stack ehp_shim_get_stack
#define bpf_get_current_task_btf ehp_shim_get_current_task_btf
#define bpf_task_pt_regs ehp_shim_task_pt_regs
static void *bpf_map_lookup_elem(void *map, const void *key);
static long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags);
static long bpf_probe_read_user(void *dst, __u32 size, const void *unsafe_ptr);
static long bpf_loop(__u32 nr_loops, void *callback_fn, void *callback_ctx, __u64 flags);
static long bpf_ringbuf_output(void *ringbuf, void *data, __u64 size, __u64 flags);
static __u64 bpf_ringbuf_query(void *ringbuf, __u64 flags);
static __u64 bpf_ktime_get_ns(void);
static __u32 bpf_get_smp_processor_id(void);
static long bpf_get_current_comm(void *buf, __u32 size_of_buf);
static long bpf_get_stack(void *ctx, void *buf, __u32 size, __u64 flags);
static struct task_struct *bpf_get_current_task_btf(void);
static long bpf_task_pt_regs(struct task_struct *task);

#endif /* EHPROF_BPF_HOST_BPF_SHIM_H_ */
