/* hostile_runtime: a process of an unprivileged user that ehprof takes for
 * a JVM or for node (tests/hostile_runtimes_priv_test.cc).
 *   hostile_runtime jvm LIBJVM VARIANT SECONDS: dlopens LIBJVM (testdata's
 *     hostilejvm/libjvm.so), whose fake HotSpot (hostile_libjvm.c) gives
 *     the code to run, in its code heap;
 *   node VARIANT SECONDS (run as a copy named node): its own v8dbg_*
 *     values and fake V8 heap (hostile_v8.c).
 * main -> hostile_outer -> hostile_inner -> the runtime's code (`jmp .`,
 * in anonymous memory) until SECONDS have passed (SIGALRM ends it). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile_v8.h"
#include "td_common.h"

volatile unsigned long hostile_sink;

/* Sets the frame pointer to fp and jumps to code: a V8 frame with no
 * caller, as the fake heap lays it out. */
__attribute__((noreturn)) void hostile_v8_enter(void *code, uint64_t fp);
__asm__(".text\n.globl hostile_v8_enter\n.type hostile_v8_enter,@function\nhostile_v8_enter:\n"
        "  mov %rsi, %rbp\n  jmp *%rdi\n.size hostile_v8_enter, .-hostile_v8_enter\n");

TD_FRAME unsigned long hostile_inner(void *code) {
  unsigned long x = hostile_sink;
  ((void (*)(void))code)();
  return x + 1;
}

TD_FRAME unsigned long hostile_outer(void *code) { return hostile_inner(code) + 1; }

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "jvm") == 0) {
    void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    void *(*start)(int) = lib ? (void *(*)(int))dlsym(lib, "hostile_jvm_start") : NULL;
    void *code = start ? start(atoi(argv[3])) : NULL;
    if (!code) {
      fprintf(stderr, "hostile_runtime: %s: no fake JVM\n", argv[2]);
      return 2;
    }
    alarm((unsigned)atoi(argv[4]));
    hostile_sink = hostile_outer(code);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "node") == 0) {
    uint64_t fp = 0;
    void *code = hostile_v8_start(atoi(argv[2]), &fp);
    if (!code) return 2;
    alarm((unsigned)atoi(argv[3]));
    hostile_v8_enter(code, fp);
  }
  fprintf(stderr, "usage: hostile_runtime jvm LIBJVM VARIANT SECONDS | node VARIANT SECONDS\n");
  return 2;
}
