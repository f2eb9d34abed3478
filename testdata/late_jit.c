/* late_jit [SECONDS]: code called from "JIT" code placed while the process
 * runs, after a profiler read its maps (V8's code space grows as a Chromium
 * renderer starts): every 250 ms a fresh anonymous executable page gets a
 * frame-pointer stub that calls late_fp_call, which has a frame pointer and
 * no CFI (as Chromium's C++, built without unwind tables) and calls
 * late_spin. A walk from late_spin reaches late_fp_call by CFI and then,
 * through its frame pointer, a return address in the new page: until the
 * maps are read again, one in no known mapping.
 *
 * Expected chain: late_spin <- late_fp_call <- (JIT stub) <- late_round <-
 * main. x86-64 only. */
#include <string.h>
#include <sys/mman.h>

#include "td_common.h"

volatile unsigned long late_sink;

TD_FRAME void late_spin(void) {
  unsigned long x = late_sink;
  TD_SPIN(x, 200000);
  late_sink = x;
}

/* A frame-pointer frame and no .cfi directives: no FDE covers it. */
__asm__(".text\n"
        ".globl late_fp_call\n"
        ".type late_fp_call, @function\n"
        "late_fp_call:\n"
        "  push %rbp\n"
        "  mov %rsp, %rbp\n"
        "  call late_spin\n"
        "  pop %rbp\n"
        "  ret\n"
        ".size late_fp_call, .-late_fp_call\n");
void late_fp_call(void);

/* push rbp; mov rbp,rsp; call *rdi; pop rbp; ret */
static const unsigned char kStub[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};

typedef void (*stub_fn)(void (*)(void));

/* One page's 250 ms: at most 8 pages in 2 s, each page's samples before
 * the maps' next read asking for a stack copy, well inside the 16 copies a
 * second a process ehprof allows when its maps are read late (a loaded
 * machine). */
TD_FRAME int late_round(stub_fn stub) {
  int calls = 0;
  double until = td_now() + 0.25;
  while (td_now() < until) {
    stub(late_fp_call);
    calls++;
  }
  return calls;
}

int main(int argc, char **argv) {
  double end = td_now() + td_seconds(argc, argv, 1);
  long calls = 0;
  /* Pages are kept, not unmapped: a new one must not reuse an address
   * whose mapping the profiler knows already. */
  while (td_now() < end) {
    unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 1;
    memcpy(mem, kStub, sizeof(kStub));
    calls += late_round((stub_fn)mem);
  }
  return calls > 0 ? 0 : 1;
}
