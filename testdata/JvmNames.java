// The JVM of tests/jvm_layout_priv_test.cc: prints "ready", then runs
// spin() in a loop until it is killed, so that the JIT compiles it and an
// nmethod for JvmNames.spin stands in the code cache. spin's first line is
// past line 8: its line table starts with a long (UNSIGNED5) delta.
public class JvmNames {
  public static void main(String[] args) {
    System.out.println("ready");
    long s = 0;
    while (s != 42) s += spin(s);
    System.out.println(s);
  }

  static long spin(long x) {
    long acc = x ^ 0x5DEECE66DL;
    for (int i = 0; i < 100000; i++) acc = acc * 6364136223846793005L + i;
    return acc;
  }
}
