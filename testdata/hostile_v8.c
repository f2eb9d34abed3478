/* The fake V8 of hostile_runtime (run as a file named node*): the v8dbg_*
 * postmortem values node exports, and a heap they describe: a JSFunction
 * whose SharedFunctionInfo is named evilJs (or wickedJs), in script
 * evil.js, in the frame at the fake frame pointer hostile_v8_start gives,
 * running TurboFan code (InstructionStream, Code, DeoptimizationData,
 * position table) into which wickedJs is inlined.
 * Variant 0 then changes the objects without end from a thread, one
 * corruption a step; the others leave one v8dbg value out of bounds, or
 * (variant HV_TORN) keep changing them. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile_v8.h"

#define V(name, value) int32_t v8dbg_##name = value;
HV_METADATA(V)
#undef V

static uint8_t *heap, *pristine, *guard, *code_page;
#define HV_BYTES 16384
#define OBJ(at) ((uint64_t *)(heap + (at)))
#define TAGGED(at) ((uint64_t)(uintptr_t)(heap + (at)) + 1)

/* Heap offsets of the objects. */
enum {
  O_MAP_SFI = 0, O_MAP_SEQ = 64, O_MAP_CONS = 128, O_MAP_THIN = 192, O_MAP_SCRIPT = 256, O_MAP_FIXED = 320,
  O_MAP_SLICED = 384, O_STR_EVIL = 512, O_STR_WICKED = 576, O_STR_FILE = 640, O_STR_EMPTY = 704, O_SFI_EVIL = 768,
  O_SFI_WICKED = 832, O_SCRIPT = 896, O_LINE_ENDS = 960, O_FUNCTION = 1024, O_CONS = 1088, /* 17 levels of 32 */
  O_MAP_CODE = 1664, O_MAP_ISTREAM = 1728, O_MAP_BYTES = 1792, O_CODE = 1856, O_DEOPT = 1920, O_LITERALS = 1984,
  O_FRAME = 2048, O_INLINING = 2112, O_POSITIONS = 2176, O_END = 4096
};

static void map_of(int at, uint16_t type) { memcpy(heap + at + 12, &type, 2); }
static void string(int at, int map, const char *s) {
  *OBJ(at) = TAGGED(map);
  int32_t n = (int32_t)strlen(s);
  memcpy(heap + at + 12, &n, 4);
  memcpy(heap + at + 16, s, (size_t)n);
}

static void build(void) {
  map_of(O_MAP_SFI, HV_TYPE_SFI);
  map_of(O_MAP_SEQ, 8);  /* sequential, one-byte */
  map_of(O_MAP_CONS, 9);
  map_of(O_MAP_THIN, 13);
  map_of(O_MAP_SLICED, 11);
  map_of(O_MAP_SCRIPT, HV_TYPE_SCRIPT);
  map_of(O_MAP_FIXED, HV_TYPE_FIXED_ARRAY);
  string(O_STR_EVIL, O_MAP_SEQ, "evilJs");
  string(O_STR_WICKED, O_MAP_SEQ, "wickedJs");
  string(O_STR_FILE, O_MAP_SEQ, "evil.js");
  string(O_STR_EMPTY, O_MAP_SEQ, "");
  for (int at = O_SFI_EVIL; at <= O_SFI_WICKED; at += O_SFI_WICKED - O_SFI_EVIL) {
    *OBJ(at) = TAGGED(O_MAP_SFI);
    *OBJ(at + 8) = TAGGED(at == O_SFI_EVIL ? O_STR_EVIL : O_STR_WICKED);
    *OBJ(at + 16) = TAGGED(O_SCRIPT);
  }
  *OBJ(O_SCRIPT) = TAGGED(O_MAP_SCRIPT);
  *OBJ(O_SCRIPT + 8) = TAGGED(O_STR_FILE);
  *OBJ(O_SCRIPT + 16) = TAGGED(O_STR_EVIL);
  *OBJ(O_SCRIPT + 24) = TAGGED(O_LINE_ENDS);
  *OBJ(O_LINE_ENDS) = TAGGED(O_MAP_FIXED);
  *OBJ(O_LINE_ENDS + 8) = (uint64_t)2 << 32;  /* two lines (64-bit Smis) */
  *OBJ(O_LINE_ENDS + 16) = (uint64_t)10 << 32;
  *OBJ(O_LINE_ENDS + 24) = (uint64_t)20 << 32;
  *OBJ(O_FUNCTION) = TAGGED(O_MAP_SFI);
  *OBJ(O_FUNCTION + 24) = TAGGED(O_SFI_EVIL);
  /* cons strings 16 deep, both halves the next level: 2^16 empty leaves */
  for (int i = 0; i < 17; ++i) {
    const int at = O_CONS + 32 * i;
    if (i == 16) {
      string(at, O_MAP_SEQ, "");
      break;
    }
    *OBJ(at) = TAGGED(O_MAP_CONS);
    *OBJ(at + 16) = *OBJ(at + 24) = TAGGED(at + 32);
  }
  /* TurboFan code for evilJs with wickedJs inlined: its InstructionStream
   * at the start of the code page (built by hostile_v8_start), its Code,
   * DeoptimizationData, literals, inlining positions and position table. */
  map_of(O_MAP_CODE, HV_TYPE_CODE);
  map_of(O_MAP_ISTREAM, HV_TYPE_INSTRUCTION_STREAM);
  map_of(O_MAP_BYTES, HV_TYPE_BYTE_ARRAY);
  *OBJ(O_CODE) = TAGGED(O_MAP_CODE);
  *OBJ(O_CODE + 8) = TAGGED(O_DEOPT);
  *OBJ(O_CODE + 16) = TAGGED(O_POSITIONS);
  *OBJ(O_CODE + 24) = (uint64_t)(uintptr_t)code_page + 1;
  *OBJ(O_CODE + 32) = (uint64_t)(uintptr_t)code_page + HV_ISTREAM_HEADER;
  *OBJ(O_CODE + 40) = 12;  /* flags: kind TURBOFAN (baseline + 2) */
  *OBJ(O_CODE + 48) = 64;  /* instruction size */
  *OBJ(O_DEOPT) = TAGGED(O_MAP_FIXED);
  *OBJ(O_DEOPT + 8) = (uint64_t)4 << 32;
  *OBJ(O_DEOPT + 16) = (uint64_t)1 << 32;  /* one inlined function */
  *OBJ(O_DEOPT + 24) = TAGGED(O_LITERALS);
  *OBJ(O_DEOPT + 32) = TAGGED(O_SFI_EVIL);
  *OBJ(O_DEOPT + 40) = TAGGED(O_INLINING);
  *OBJ(O_LITERALS) = TAGGED(O_MAP_FIXED);
  *OBJ(O_LITERALS + 8) = (uint64_t)1 << 32;
  *OBJ(O_LITERALS + 16) = TAGGED(O_SFI_WICKED);
  *OBJ(O_INLINING) = TAGGED(O_MAP_BYTES);
  *OBJ(O_INLINING + 8) = (uint64_t)16 << 32;  /* one {position, function 0} */
  *OBJ(O_POSITIONS) = TAGGED(O_MAP_BYTES);
  /* One entry: code offset 0 at script offset 5 of inlined function 0. */
  *OBJ(O_POSITIONS + 8) = (uint64_t)6 << 32;
  memcpy(heap + O_POSITIONS + 16, "\x02\x98\x80\x80\x80\x10", 6);
  /* The frame: a context (any tagged word), the function, no caller. */
  *OBJ(O_FRAME - 8) = TAGGED(O_FUNCTION);
  *OBJ(O_FRAME - 16) = TAGGED(O_FUNCTION);
}

static void corrupt(unsigned k) {
  switch (k) {
    case 1: *OBJ(O_FUNCTION + 24) = TAGGED(O_SFI_WICKED); break;          /* the function freed, another there */
    case 2: *OBJ(O_SFI_EVIL + 8) = TAGGED(O_CONS); break;                 /* a name of 2^16 empty pieces */
    case 3: *OBJ(O_CONS) = TAGGED(O_MAP_CONS); *OBJ(O_CONS + 16) = TAGGED(O_CONS); *OBJ(O_SFI_EVIL + 8) = TAGGED(O_CONS); break;
    case 4: *OBJ(O_STR_EVIL) = TAGGED(O_MAP_THIN); *OBJ(O_STR_EVIL + 16) = TAGGED(O_STR_EVIL); break;  /* thin loop */
    case 5: *OBJ(O_STR_EVIL) = TAGGED(O_MAP_SLICED); *OBJ(O_STR_EVIL + 16) = TAGGED(O_STR_EVIL); break;
    case 6: { int32_t n = 0x1fffffff; memcpy(heap + O_STR_EVIL + 12, &n, 4); } break;
    case 7: *OBJ(O_SFI_EVIL + 8) = (uint64_t)(uintptr_t)guard + 1; break;
    case 8: *OBJ(O_LINE_ENDS + 8) = (uint64_t)0xfffff << 32; break;     /* line ends past the heap */
    case 9: *OBJ(O_LINE_ENDS + 16) = (uint64_t)30 << 32; break;         /* out of order */
    case 10: *OBJ(O_SCRIPT + 24) = TAGGED(O_STR_EVIL); *OBJ(O_SCRIPT + 16) = TAGGED(O_CONS); break;  /* source: the bomb */
    case 11: map_of(O_MAP_SFI, 8); break;                               /* the SFI's map now a string's */
    case 12: *OBJ(O_FUNCTION + 24) = (uint64_t)(uintptr_t)guard + 1; break;
    case 13: *OBJ(O_DEOPT + 16) = (uint64_t)4096 << 32; break;           /* inlined: more than the literals */
    case 14: *OBJ(O_INLINING + 8) = (uint64_t)0x7fffffff << 32; break;  /* a ByteArray past the heap */
    case 15: memset(heap + O_POSITIONS + 16, 0xff, 8); break;           /* a VLQ without end */
    case 16: *OBJ(O_CODE + 24) = TAGGED(O_CODE); break;                 /* Code and stream disagree */
    case 17: { int32_t n = -1; memcpy(heap + O_INLINING + 16 + 8, &n, 4); } break;  /* function -1 */
    default: break;
  }
}

static void *churn(void *arg) {
  const int variant = (int)(intptr_t)arg;
  sleep(HV_COHERENT_SECONDS);
  for (unsigned step = 0;; ++step) {
    memcpy(heap, pristine, HV_BYTES);
    corrupt(step % HV_CORRUPTIONS);
    if (variant == HV_TORN) hv_metadata_flip(step);
    usleep(200);
  }
  return NULL;
}

void *hostile_v8_start(int variant, uint64_t *fp) {
  uint8_t *m = mmap(NULL, 2 * HV_BYTES + 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (m == MAP_FAILED) return NULL;
  pristine = m;
  heap = m + HV_BYTES;
  guard = heap + HV_BYTES;
  mprotect(guard, 4096, PROT_NONE);
  /* The code page: an InstructionStream (its map, its Code), then its
   * instructions, `jmp .`, walked by frame pointer (anonymous memory). */
  code_page = guard + 4096;
  uint8_t *code = code_page + HV_ISTREAM_HEADER;
  code[0] = 0xeb;
  code[1] = 0xfe;
  build();
  uint64_t istream[2] = {TAGGED(O_MAP_ISTREAM), TAGGED(O_CODE)};
  memcpy(code_page, istream, sizeof(istream));
  memcpy(pristine, heap, HV_BYTES);
  hv_metadata_spoil(variant);
  *fp = (uint64_t)(uintptr_t)(heap + O_FRAME);
  if (variant == 0 || variant == HV_TORN) {
    pthread_t t;
    pthread_create(&t, NULL, churn, (void *)(intptr_t)variant);
  }
  return code;
}
