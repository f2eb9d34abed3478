// A Java program whose hot method is a small recursive one, for
// tests/record_jvm_priv_test.cc: main -> spin -> fib -> fib -> ... C2
// compiles fib with a few instructions between its prologue and its
// epilogue, so a good share of its samples interrupt it while its frame is
// half built or half freed (after `push rbp`, at `pop rbp`, at the return
// poll, at `ret`): each must still unwind to spin and main. Runs argv[0]
// seconds (default 4).
public class JvmRecursion {
  static int fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
  }

  static long spin(long until) {
    long acc = 0;
    while (System.currentTimeMillis() < until) acc += fib(22);
    return acc;
  }

  public static void main(String[] args) {
    double secs = args.length > 0 ? Double.parseDouble(args[0]) : 4;
    long acc = spin(System.currentTimeMillis() + (long) (secs * 1000));
    if (acc == 42) System.out.println(acc);
  }
}
