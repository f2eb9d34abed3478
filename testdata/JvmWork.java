// A CPU-bound Java program for bench/jvm_stacks.py: two hot methods called
// from a loop in main for argv[0] seconds (default 4).
public class JvmWork {
  static long hotA(long x) {
    for (int i = 0; i < 200000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
  }
  static double hotB(long n) {
    double s = 0;
    for (int i = 0; i < 100000; i++) s += Math.sqrt(i + n);
    return s;
  }
  static long work(long until) {
    long acc = 0;
    while (System.currentTimeMillis() < until) acc += hotA(acc) + (long) hotB(acc & 7);
    return acc;
  }
  public static void main(String[] args) {
    double secs = args.length > 0 ? Double.parseDouble(args[0]) : 4;
    long acc = work(System.currentTimeMillis() + (long) (secs * 1000));
    if (acc == 42) System.out.println(acc);
  }
}
