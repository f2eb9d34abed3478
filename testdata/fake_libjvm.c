/* A libjvm.so that exports HotSpot's serviceability tables (laid out as
 * vmStructs.hpp lays them out) but describes no JVM ehprof can walk: it
 * lacks CodeBlob::_frame_size. tests/jvm_refusal_priv_test.cc loads it and
 * expects the JVM refused with one warning naming that field. */
#include "hotspot_tables.h"

static struct hs_field fields[] = {{"CodeBlob", "_name", "const char*", 0, 8, NULL}, {NULL, NULL, NULL, 0, 0, NULL}};
static struct hs_type types[] = {{"HeapBlock", NULL, 0, 0, 0, 16}, {"CodeBlob", NULL, 0, 0, 0, 104},
                              {NULL, NULL, 0, 0, 0, 0}};
static struct hs_int ints[] = {{"frame::interpreter_frame_sender_sp_offset", -1}, {NULL, 0}};
static struct hs_long longs[] = {{NULL, 0}};

struct hs_field *gHotSpotVMStructs = fields;
struct hs_type *gHotSpotVMTypes = types;
struct hs_int *gHotSpotVMIntConstants = ints;
struct hs_long *gHotSpotVMLongConstants = longs;
HS_ENTRY_LAYOUT
