/* libperl-hostile.so: what ehprof takes for libperl (Perl_runops_standard,
 * PL_current_context in TLS, the three functions whose code gives the
 * offsets, hostile_libperl_code.S), with an interpreter whose contexts and
 * objects lie (tests/hostile_perl_priv_test.cc). hostile_perl_run(VARIANT,
 * SECONDS) spins in the "run loop" with this thread's interpreter:
 *   0: contexts naming one sub "main::hostile_ok" (hostile.pl:7) among
 *      subs whose CV is unmapped or no CV, whose glob's name claims 2^30
 *      bytes, whose stash is no hash, a lexical sub's name in nothing, an
 *      eval and statements whose file is unmapped, a line of 2^32 - 1;
 *   1: 5000 contexts of zeros in a stackinfo that is its own si_prev;
 *   2: the contexts and objects of 0, rewritten with random words and the
 *      objects' page unmapped and mapped again, by a second thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__thread void *PL_current_context;

#define CX_WORDS 13 /* 104 bytes */
#define NCX 8
#define UNMAPPED 0xdead0000ull

static uint64_t interp[64], si[7], cxs[NCX * CX_WORDS];
static uint64_t *objs; /* a page of fake SVs, bodies, HEKs and COPs */
static volatile int stop_churn;

/* The "run loop": busy until *until. */
__attribute__((noinline)) uint64_t Perl_runops_standard(volatile uint64_t *until) {
  uint64_t n = 0;
  while ((uint64_t)time(NULL) < *until) n++;
  return n;
}

static uint64_t *hek(uint64_t *at, const char *s, int32_t len) {
  memcpy((char *)at + 4, &len, 4);
  memcpy(&at[1], s, strlen(s));
  return at;
}

/* An SV at o[at] of type `type` with its body at o[body]. */
static uint64_t sv(int at, uint32_t flags, int body) {
  objs[at] = (uint64_t)&objs[body];
  objs[at + 1] = (uint64_t)flags << 32 | 1;
  return (uint64_t)&objs[at];
}

static uint64_t cop(int at, uint32_t line, uint64_t file) {
  memcpy((char *)&objs[at] + 0x24, &line, 4);
  objs[at + 6] = file;
  return (uint64_t)&objs[at];
}

static void cx(int i, uint8_t type, uint64_t cv, uint64_t oldcop) {
  uint64_t *c = &cxs[i * CX_WORDS];
  c[0] = type;
  c[2] = oldcop;
  c[6] = 1; /* retop: Perl code called it */
  c[9] = cv;
}

/* A CV at o[at] whose glob (o[at+8]) names `name` of `len` in stash `stash`. */
static uint64_t cv(int at, const char *name, int32_t len, uint64_t stash) {
  uint64_t c = sv(at, 13, at + 4);
  objs[at + 4 + 7] = sv(at + 20, 9, at + 24); /* xcv_gv */
  objs[at + 24 + 4] = (uint64_t)hek(&objs[at + 40], name, len);
  objs[at + 24 + 5] = stash;
  return c;
}

static void make_liar(void) {
  strcpy((char *)&objs[400], "hostile.pl");
  const uint64_t main_hv = sv(300, 12 | 0x02000000, 304);
  objs[304 + 4] = (uint64_t)hek(&objs[320], "main", 4);
  const uint64_t good_cop = cop(340, 7, (uint64_t)&objs[400]);
  const uint64_t bad_cop = cop(350, 9, UNMAPPED);
  const uint64_t huge_line = cop(360, 0xffffffffu, (uint64_t)&objs[400]);
  const uint64_t ok = cv(0, "hostile_ok", 10, main_hv);
  const uint64_t huge_name = cv(60, "x", 1 << 30, main_hv);
  const uint64_t not_hash = cv(120, "nostash", 7, ok);
  const uint64_t lexical = sv(180, 13, 184);
  objs[184 + 7] = UNMAPPED; /* its name's HEK */
  memcpy((char *)&objs[184] + 0x5c, &(uint32_t){0x8000}, 4);
  cx(0, 9, ok, good_cop);
  cx(1, 9, UNMAPPED, good_cop);
  cx(2, 9, main_hv, good_cop);
  cx(3, 9, huge_name, good_cop);
  cx(4, 9, not_hash, bad_cop);
  cx(5, 11, 0, bad_cop);
  cx(6, 9, lexical, huge_line);
  cx(7, 9, ok, good_cop);
  si[1] = (uint64_t)cxs;
  si[4] = NCX - 1;
  interp[0xd0 / 8] = huge_line;
  interp[0xe0 / 8] = (uint64_t)si;
}

static void make_endless(void) {
  uint64_t *zeros = mmap(0, 5001 * CX_WORDS * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  si[1] = (uint64_t)zeros;
  si[2] = (uint64_t)si; /* its own si_prev */
  si[4] = 5000;
  interp[0xe0 / 8] = (uint64_t)si;
}

static void *churn(void *arg) {
  (void)arg;
  unsigned seed = 1;
  while (!stop_churn) {
    for (int i = 0; i < 64; i++) cxs[rand_r(&seed) % (NCX * CX_WORDS)] = ((uint64_t)rand_r(&seed) << 32) | rand_r(&seed);
    for (int i = 0; i < 64; i++) objs[rand_r(&seed) % 512] ^= (uint64_t)rand_r(&seed) << (rand_r(&seed) % 40);
    munmap(objs, 4096);
    usleep(200);
    objs = mmap(objs, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    make_liar();
    usleep(200);
  }
  return 0;
}

uint64_t hostile_perl_run(int variant, int seconds) {
  objs = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (variant == 1) make_endless();
  else make_liar();
  PL_current_context = interp;
  pthread_t t;
  if (variant == 2) pthread_create(&t, 0, churn, 0);
  volatile uint64_t until = (uint64_t)time(NULL) + (uint64_t)seconds;
  const uint64_t n = Perl_runops_standard(&until);
  if (variant == 2) {
    stop_churn = 1;
    pthread_join(t, 0);
  }
  return n;
}
