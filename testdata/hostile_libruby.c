/* libruby-hostile.so: what ehprof takes for libruby (it exports
 * rb_vm_exec, whose largest callee is the "VM loop", ruby_current_ec in
 * TLS, rb_vm_get_ruby_level_next_cfp with its 64-byte control frame step,
 * ruby_global_symbols holding "+" and "-"), with control frames and
 * objects that lie (tests/hostile_ruby_priv_test.cc). hostile_ruby_run
 * (VARIANT, SECONDS) spins in the VM loop under frames that
 *   0: name one iseq "hostile_ok" (hostile.rb:7) between frames whose
 *      labels claim 2^40 bytes at unmapped addresses, iseqs whose body is
 *      unmapped, method entries whose IDs lie, a last env in nothing;
 *   1: run on past the VM stack's end (a stack size of 2^23 VALUEs of
 *      garbage); 2: the frames of 0, rewritten with random words and the
 *      objects' page unmapped and mapped again, by a second thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__thread void *ruby_current_ec;
struct {
  uint32_t last_id;
  void *str_sym;
  uint64_t ids;
  uint64_t dsymbol_fstr_hash;
} ruby_global_symbols;
const int ruby_api_version[3] = {9, 9, 0};

#define T_STRING 0x05u
#define T_ARRAY 0x07u
#define T_IMEMO 0x1au
#define NCFP 40
#define CFP_WORDS 8

static uint64_t *objs;  /* a page of fake objects (hostile 2 unmaps it) */
static uint64_t ec[4], vm_stack[4096];
static uint64_t ids_top[5], ids_elems[1], ids_unit[5], id_entries[1024], str_plus[4], str_minus[4];
static volatile int stop_churn;

/* The cfp step rb_vm_get_ruby_level_next_cfp has in libruby: add $0x40. */
void *rb_vm_get_ruby_level_next_cfp(const uint64_t *e, const uint64_t *cfp) {
  const uint64_t *end = (const uint64_t *)e[0] + e[1];
  for (; cfp < end; cfp += CFP_WORDS) {
    if (cfp[2]) return (void *)cfp;
  }
  return 0;
}

/* The "VM loop": large (past the 4 KiB ehprof asks of it) and busy. */
__attribute__((noinline)) static uint64_t vm_exec_core(volatile uint64_t *until) {
  uint64_t n = 0;
  __asm__ volatile("jmp 1f\n.skip 8192, 0x90\n1:");
  while ((uint64_t)time(NULL) < *until) n++;
  return n;
}

__attribute__((noinline)) uint64_t rb_vm_exec(volatile uint64_t *until) {
  uint64_t n = vm_exec_core(until);
  return n + 1;
}

static uint64_t *embedded_string(uint64_t *at, const char *s) {
  at[0] = T_STRING | ((uint64_t)strlen(s) << 14);
  memcpy(&at[2], s, strlen(s));
  return at;
}

static void make_symbols(void) {
  ids_top[0] = T_ARRAY; /* heap: len 1, ptr -> [the unit] */
  ids_top[2] = 1;
  ids_top[4] = (uint64_t)ids_elems;
  ids_elems[0] = (uint64_t)ids_unit;
  ids_unit[0] = T_ARRAY;
  ids_unit[2] = 1024;
  ids_unit[4] = (uint64_t)id_entries;
  id_entries['+' * 2] = (uint64_t)embedded_string(str_plus, "+");
  id_entries['-' * 2] = (uint64_t)embedded_string(str_minus, "-");
  id_entries[100] = (uint64_t)0xdead0000; /* an ID whose name is nowhere */
  ruby_global_symbols.ids = (uint64_t)ids_top;
  ruby_global_symbols.last_id = 1000000; /* past what the table holds */
}

/* objs: [0..) a good iseq "hostile_ok", a liar whose label claims 2^40
 * bytes, an iseq with an unmapped body, a method entry whose definition's
 * ID names an unmapped string. */
static void make_objects(void) {
  uint64_t *o = objs;
  uint64_t *good = o, *body = o + 8, *label = o + 40, *path = o + 48, *info = o + 56;
  good[0] = T_IMEMO | (7u << 12);
  good[2] = (uint64_t)body;
  body[0] = (uint64_t)16 << 32;
  body[1] = (uint64_t)(o + 64); /* iseq_encoded */
  body[8] = (uint64_t)embedded_string(path, "hostile.rb");
  body[10] = (uint64_t)embedded_string(label, "hostile_ok");
  body[15] = (uint64_t)info; /* insns_info at 120: one entry, line 7 */
  body[17] = 1;
  info[0] = 7;
  uint64_t *liar = o + 100, *lbody = o + 110, *lstr = o + 140;
  liar[0] = T_IMEMO | (7u << 12);
  liar[2] = (uint64_t)lbody;
  lbody[10] = (uint64_t)lstr;
  lstr[0] = T_STRING | (1u << 13); /* NOEMBED */
  lstr[2] = 1ull << 40;
  lstr[3] = 0x10000;
  uint64_t *unmapped = o + 160;
  unmapped[0] = T_IMEMO | (7u << 12);
  unmapped[2] = 0x7ff000000000ull;
  uint64_t *me = o + 170, *def = o + 180;
  me[0] = T_IMEMO | (6u << 12);
  me[2] = (uint64_t)def;
  def[0] = 1;            /* VM_METHOD_TYPE_CFUNC */
  def[4] = 100 << 4 | 1; /* original_id: serial 100 */
}

static void make_frames(int variant) {
  ec[0] = (uint64_t)vm_stack;
  ec[1] = variant == 1 ? (1u << 23) : 4096;
  uint64_t *cfp = vm_stack + 4096 - NCFP * CFP_WORDS;
  ec[2] = (uint64_t)cfp;
  for (int i = 0; i < NCFP; i++) {
    uint64_t *f = cfp + i * CFP_WORDS;
    uint64_t *ep = vm_stack + 3 + 3 * i; /* ep[-2], ep[-1], ep[0] */
    /* 0 the good iseq, 1 the liar, 2 the unmapped body, 3 a C method;
     * variant 1 all good and no FINISH: on past the stack's end. */
    const int kind = variant == 1 ? 0 : i % 4;
    f[0] = (uint64_t)(objs + 64 + 2); /* pc */
    f[2] = (uint64_t)(kind == 1 ? objs + 100 : kind == 2 ? objs + 160 : objs);
    f[4] = (uint64_t)ep;
    ep[0] = kind == 3 ? 0x55550001 : 0x11110001; /* CFUNC or METHOD */
    ep[-2] = (uint64_t)(objs + 170);
    if (i == NCFP - 1 && variant != 1) {
      ep[0] |= 0x20; /* FINISH */
      if (variant == 0) f[4] = 0x10; /* an env in nothing */
    }
  }
}

static void *churn(void *arg) {
  (void)arg;
  unsigned seed = 1;
  while (!stop_churn) {
    vm_stack[4096 - 1 - rand_r(&seed) % (NCFP * CFP_WORDS)] = ((uint64_t)rand_r(&seed) << 32) | rand_r(&seed);
    if (rand_r(&seed) % 1000 == 0) {
      munmap(objs, 4096);
      usleep(100);
      objs = mmap(objs, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      make_objects();
    }
  }
  return 0;
}

uint64_t hostile_ruby_run(int variant, int seconds) {
  objs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  make_symbols();
  make_objects();
  make_frames(variant);
  ruby_current_ec = ec;
  pthread_t t;
  if (variant == 2) pthread_create(&t, NULL, churn, NULL);
  volatile uint64_t until = (uint64_t)time(NULL) + (uint64_t)seconds;
  uint64_t n = rb_vm_exec(&until);
  stop_churn = 1;
  if (variant == 2) pthread_join(t, NULL);
  return n;
}
