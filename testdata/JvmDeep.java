// A Java stack of a fixed depth for bench/jvm_node_cost.py: main calls
// down() recursively argv[1] frames deep (default 100), whose bottom spins
// for a millisecond, then returns and goes down again, for argv[0] seconds
// (default 4). The rounds make down() hot: the JIT compiles it, so most
// samples walk compiled frames.
public class JvmDeep {
  static long spin(long x) {
    final long until = System.nanoTime() + 1_000_000;
    while (System.nanoTime() < until) {
      for (int i = 0; i < 1000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    }
    return x;
  }

  static long down(int depth, long x) {
    if (depth <= 0) return spin(x);
    return down(depth - 1, x + depth) ^ depth;
  }

  public static void main(String[] args) {
    final double secs = args.length > 0 ? Double.parseDouble(args[0]) : 4;
    final int depth = args.length > 1 ? Integer.parseInt(args[1]) : 100;
    final long end = System.nanoTime() + (long) (secs * 1e9);
    long acc = 0;
    while (System.nanoTime() < end) acc += down(depth, acc);
    if (acc == 42) System.out.println(acc);
  }
}
