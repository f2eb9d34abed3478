// A Java program one of whose methods C2 inlines into its caller, for
// tests/record_jvm_priv_test.cc: main -> round -> step -> mix. step is
// small and called 1000 times a round: C2 inlines it into round
// (-XX:+PrintInlining: "JvmInline::step (9 bytes) inline (hot)"); mix is
// too big to inline ("hot method too big"), so step is a return address's
// scope in round's code. Runs argv[0] seconds (default 4).
public class JvmInline {
  static long mix(long x, int n) {
    for (int i = 0; i < n; i++) {
      x = (x ^ (x >>> 7)) * 0x9E3779B97F4A7C15L + 0;
      x = (x ^ (x >>> 13)) * 0xBF58476D1CE4E5B9L + 1;
      x = (x ^ (x >>> 17)) * 0x94D049BB133111EBL + 2;
      x = (x ^ (x >>> 29)) * 0xD6E8FEB86659FD93L + 3;
      x = (x ^ (x >>> 31)) * 0x9E3779B97F4A7C15L + 4;
      x = (x ^ (x >>> 11)) * 0xBF58476D1CE4E5B9L + 5;
      x = (x ^ (x >>> 7)) * 0x94D049BB133111EBL + 6;
      x = (x ^ (x >>> 13)) * 0xD6E8FEB86659FD93L + 7;
      x = (x ^ (x >>> 17)) * 0x9E3779B97F4A7C15L + 8;
      x = (x ^ (x >>> 29)) * 0xBF58476D1CE4E5B9L + 9;
      x = (x ^ (x >>> 31)) * 0x94D049BB133111EBL + 10;
      x = (x ^ (x >>> 11)) * 0xD6E8FEB86659FD93L + 11;
      x = (x ^ (x >>> 7)) * 0x9E3779B97F4A7C15L + 12;
      x = (x ^ (x >>> 13)) * 0xBF58476D1CE4E5B9L + 13;
      x = (x ^ (x >>> 17)) * 0x94D049BB133111EBL + 14;
      x = (x ^ (x >>> 29)) * 0xD6E8FEB86659FD93L + 15;
      x = (x ^ (x >>> 31)) * 0x9E3779B97F4A7C15L + 16;
      x = (x ^ (x >>> 11)) * 0xBF58476D1CE4E5B9L + 17;
      x = (x ^ (x >>> 7)) * 0x94D049BB133111EBL + 18;
      x = (x ^ (x >>> 13)) * 0xD6E8FEB86659FD93L + 19;
      x = (x ^ (x >>> 17)) * 0x9E3779B97F4A7C15L + 20;
      x = (x ^ (x >>> 29)) * 0xBF58476D1CE4E5B9L + 21;
      x = (x ^ (x >>> 31)) * 0x94D049BB133111EBL + 22;
      x = (x ^ (x >>> 11)) * 0xD6E8FEB86659FD93L + 23;
    }
    return x;
  }
  static long step(long x, int n) {
    return mix(x ^ n, n);
  }
  static long round(long acc) {
    for (int j = 0; j < 1000; j++) acc = step(acc, 20 + (j & 7));
    return acc;
  }
  public static void main(String[] args) {
    double secs = args.length > 0 ? Double.parseDouble(args[0]) : 4;
    long until = System.currentTimeMillis() + (long) (secs * 1000), acc = 0;
    while (System.currentTimeMillis() < until) acc = round(acc);
    if (acc == 42) System.out.println(acc);
  }
}
