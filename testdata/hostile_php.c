/* hostile_php: a process of an unprivileged user that ehprof takes for PHP
 * (tests/php_hostile_priv_test.cc). It maps a real php binary as the loader
 * would (its PT_LOAD segments from the file: /proc/PID/maps names it, and
 * agent/php/ reads that binary's own offsets), spins at execute_ex's
 * dispatch jump (patched in its private copy to `jmp .`), and keeps
 * executor_globals.current_execute_data pointing at frames that lie:
 *   hostile_php PHP EG_VADDR EXECUTE_EX_VADDR VARIANT SECONDS
 *   0: frames whose functions are freed and replaced by others all the time;
 *   1: prev_execute_data loops (a frame its own, a 3-cycle);
 *   2: strings of 2^40 bytes, functions of type 7, misaligned and unmapped
 *      pointers;
 *   3: a chain 100000 frames deep, no frame beginning a VM call;
 *   4: frames on a VM stack segment whose executor_globals fields
 *      (vm_stack, vm_stack_top, vm_stack_end: the window reaches down to
 *      the segment's start) lie in turn: a segment starting on an unmapped
 *      page below the frames, unmapped, misaligned, ending below its
 *      start, 2^46 bytes long, and the true one.
 * Layout: Debian 12's php8.2 (tests/php_binary_test.cc checks the probes
 * find these offsets there). Every name it writes starts "hostile_",
 * "HostileClass::" or "/hostile/". */
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { EX_SIZE = 80, FN_SIZE = 256, CUR_EX = 488 };

static uint8_t *eg; /* the process's executor_globals */
static int variant;

static void put64(void *at, size_t off, uint64_t v) { memcpy((uint8_t *)at + off, &v, 8); }

static void *zstr(const char *text, uint64_t claimed) {
  size_t n = strlen(text);
  uint8_t *s = calloc(1, 24 + n + 1);
  put64(s, 16, claimed ? claimed : n);
  memcpy(s + 24, text, n);
  return s;
}

/* A function named name (a class method when cls), in file, of type. */
static void *func(int type, const char *name, const char *cls, const char *file) {
  uint8_t *f = calloc(1, FN_SIZE);
  f[0] = (uint8_t)type;
  put64(f, 8, (uint64_t)(uintptr_t)(name ? zstr(name, 0) : NULL));
  if (cls) {
    uint8_t *ce = calloc(1, 64);
    put64(ce, 8, (uint64_t)(uintptr_t)zstr(cls, 0));
    put64(f, 16, (uint64_t)(uintptr_t)ce);
  }
  put64(f, 152, (uint64_t)(uintptr_t)(file ? zstr(file, 0) : NULL));
  return f;
}

static void *frame(void *fn, uint32_t line, uint32_t info, void *prev) {
  uint8_t *ex = calloc(1, EX_SIZE), *op = calloc(1, 32);
  memcpy(op + 24, &line, 4);
  put64(ex, 0, (uint64_t)(uintptr_t)op);
  put64(ex, 24, (uint64_t)(uintptr_t)fn);
  memcpy(ex + 40, &info, 4);
  put64(ex, 48, (uint64_t)(uintptr_t)prev);
  return ex;
}

/* executor_globals.vm_stack_top, vm_stack_end and vm_stack: the three
 * words before vm_stack_page_size, which precedes current_execute_data. */
static void set_stack(uint64_t lo, uint64_t top, uint64_t end) {
  put64(eg, CUR_EX - 32, top);
  put64(eg, CUR_EX - 24, end);
  put64(eg, CUR_EX - 16, lo);
}

static void set_current(void *ex) { __atomic_store_n((uint64_t *)(eg + CUR_EX), (uint64_t)(uintptr_t)ex, __ATOMIC_RELEASE); }

static void *churn(void *arg) {
  char name[64];
  for (unsigned i = 0;; i++) {
    snprintf(name, sizeof(name), "hostile_fn_%u", i % 1000);
    void *top = frame(func(2, NULL, NULL, "/hostile/main.php"), 3, 1u << 17, NULL);
    void *mid = frame(func(2, "m", "HostileClass", "/hostile/c.php"), 7, 0, top);
    void *leaf = frame(func(i % 2 ? 1 : 2, name, NULL, "/hostile/f.php"), i % 50, 0, mid);
    set_current(leaf);
    usleep(200);
    set_current(NULL); /* the old ones freed, their memory reused */
    free(leaf);
    free(mid);
    free(top);
  }
  return arg;
}

static void *lie(void *arg) {
  if (variant == 1) {
    uint8_t *a = frame(func(2, "hostile_a", NULL, "/hostile/a.php"), 1, 0, NULL);
    uint8_t *b = frame(func(2, "hostile_b", NULL, "/hostile/b.php"), 2, 0, a);
    uint8_t *c = frame(func(2, "hostile_c", NULL, "/hostile/c.php"), 3, 0, b);
    put64(a, 48, (uint64_t)(uintptr_t)c); /* a -> c -> b -> a */
    uint8_t *self = frame(func(2, "hostile_self", NULL, "/hostile/s.php"), 4, 0, NULL);
    put64(self, 48, (uint64_t)(uintptr_t)self);
    set_current(frame(func(2, "hostile_top", NULL, "/hostile/t.php"), 5, 0, a));
    for (;;) { /* the chain with the 3-cycle and the frame that is its own caller, in turn */
      usleep(1000);
      set_current(self);
      usleep(1000);
      set_current(a);
    }
  } else if (variant == 2) {
    uint8_t *f = func(2, "hostile_big", NULL, "/hostile/big.php");
    put64((void *)(uintptr_t)*(uint64_t *)(f + 8), 16, 1ull << 40);
    void *bad = frame(func(7, "hostile_type7", NULL, NULL), 1, 0, frame((void *)0x10, 2, 0, (void *)0x1003));
    set_current(frame(f, 5, 0, frame((void *)0xdead0000, 6, 0, bad)));
  } else if (variant == 4) {
    /* An unmapped page, then two pages of 24 frames, each caller below
     * its callee, the lowest beginning the VM call. */
    uint8_t *r = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED || mprotect(r, 4096, PROT_NONE)) return arg;
    uint8_t *seg = r + 4096, *ex = NULL;
    void *fn = func(2, "hostile_seg", NULL, "/hostile/seg.php");
    for (int i = 0; i < 24; i++) {
      uint8_t *f = seg + 64 + (size_t)i * 320;
      uint8_t *op = calloc(1, 32);
      uint32_t line = (uint32_t)i, info = i == 0 ? 1u << 17 : 0;
      memcpy(op + 24, &line, 4);
      put64(f, 0, (uint64_t)(uintptr_t)op);
      put64(f, 24, (uint64_t)(uintptr_t)fn);
      memcpy(f + 40, &info, 4);
      put64(f, 48, (uint64_t)(uintptr_t)ex);
      ex = f;
    }
    uint64_t top = (uint64_t)(uintptr_t)(ex + 320), end = (uint64_t)(uintptr_t)(r + 3 * 4096);
    const uint64_t lies[6][3] = {
        {(uint64_t)(uintptr_t)r, top, end},        /* from the unmapped page */
        {0xdead0000, top, end},                    /* unmapped */
        {(uint64_t)(uintptr_t)seg + 4, top, end},  /* misaligned */
        {top, (uint64_t)(uintptr_t)seg, end},      /* ends below its start */
        {8, 1ull << 46, 1ull << 46},               /* 2^46 bytes */
        {(uint64_t)(uintptr_t)seg, top, end},      /* the truth */
    };
    set_current(ex);
    for (unsigned i = 0;; i++) {
      set_stack(lies[i % 6][0], lies[i % 6][1], lies[i % 6][2]);
      usleep(700);
    }
  } else if (variant == 3) {
    void *fn = func(2, "hostile_deep", NULL, "/hostile/deep.php"), *ex = NULL;
    for (int i = 0; i < 100000; i++) ex = frame(fn, (uint32_t)i, 0, ex);
    set_current(ex);
  }
  return arg;
}

/* Maps path's PT_LOAD segments (writable, text too: it is patched);
 * returns the bias. */
static uint8_t *load(const char *path) {
  int fd = open(path, O_RDONLY);
  Elf64_Ehdr eh;
  if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) return NULL;
  Elf64_Phdr ph[32];
  if (eh.e_phnum > 32 || pread(fd, ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff) <= 0) return NULL;
  uint64_t end = 0;
  for (int i = 0; i < eh.e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > end) end = ph[i].p_vaddr + ph[i].p_memsz;
  uint8_t *base = mmap(NULL, end + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  for (int i = 0; i < eh.e_phnum; i++) {
    if (ph[i].p_type != PT_LOAD) continue;
    uint64_t page = ph[i].p_vaddr & ~4095ull, off = ph[i].p_offset & ~4095ull;
    uint64_t file_end = ph[i].p_vaddr + ph[i].p_filesz, mem_end = ph[i].p_vaddr + ph[i].p_memsz;
    int prot = PROT_READ | PROT_WRITE | ((ph[i].p_flags & PF_X) ? PROT_EXEC : 0);
    if (mmap(base + page, file_end - page, prot, MAP_PRIVATE | MAP_FIXED, fd, off) == MAP_FAILED) return NULL;
    uint64_t anon = (file_end + 4095) & ~4095ull;
    if (mem_end > anon &&
        mmap(base + anon, mem_end - anon, prot, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
      return NULL;
    if (mem_end > file_end) memset(base + file_end, 0, ((file_end + 4095) & ~4095ull) - file_end);
  }
  close(fd);
  return base;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: hostile_php PHP EG_VADDR EXECUTE_EX_VADDR VARIANT SECONDS\n");
    return 2;
  }
  uint8_t *base = load(argv[1]);
  if (!base) {
    fprintf(stderr, "hostile_php: %s: cannot map it\n", argv[1]);
    return 2;
  }
  eg = base + strtoull(argv[2], NULL, 0);
  uint8_t *spin = base + strtoull(argv[3], NULL, 0) + 0x45;
  variant = atoi(argv[4]);
  spin[0] = 0xeb; /* jmp . */
  spin[1] = 0xfe;
  pthread_t t;
  pthread_create(&t, NULL, variant == 0 ? churn : lie, NULL);
  alarm((unsigned)atoi(argv[5]));
  ((void (*)(void))spin)();
  return 0;
}
