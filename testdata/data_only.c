/* libdata_only.so: a data-only shared library, as ICU's libicudata is.
 * It defines no function, so its .text is crtbegin's functions alone and
 * it has no CFI (crtstuff is built without unwind tables): its table is
 * those functions' rows and its .init/.fini's (crt_rows_test). */
const unsigned char td_data_only_table[4096] = {1, 2, 3};
