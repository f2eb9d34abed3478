// A CPU-bound Java program with ten hot methods in three named threads, the
// workload bench/jvm_vs_async_profiler.py profiles with async-profiler and
// ehprof at once. It runs for argv[0] seconds (default 10).
//
// Each thread repeats a fixed round of work until the time is up, and each
// hot method does a fixed amount of work per round, so every method's share
// of its thread's CPU is the same from round to round once the JIT has
// compiled it (no data-dependent branches, no allocation in the rounds).
//
//   hot-arith    arithLoop   -> hashMix                 (a plain loop)
//                            -> inlineDriver -> smallStep (small: C2 inlines it)
//                            -> fmodLoop                (double % ends in libm's fmod
//                                                        through SharedRuntime::drem)
//   hot-virtual  virtualLoop -> Shape.area: Square.area / Circle.area
//                                                       (an interface call, two classes)
//                            -> fib                     (recursion, depth 25)
//                            -> sortSmall               (insertion sort)
//   hot-data     dataLoop    -> crc                     (bitwise CRC-32)
//                            -> matMul                  (16x16 doubles)
//                            -> sieve                   (primes below 49152)
//
// The results feed a volatile sink so that the JIT keeps all the work.
public class JvmHot {
  static volatile long sink;

  interface Shape {
    double area(int rounds);
  }

  static final class Square implements Shape {
    final long side;
    Square(long side) { this.side = side; }
    public double area(int rounds) {
      long a = side;
      for (int i = 0; i < rounds / 2; i++) a = (a ^ (a >>> 29)) * 2862933555777941757L + i;
      return (double) (a & 0xffff);
    }
  }

  static final class Circle implements Shape {
    final double radius;
    Circle(double radius) { this.radius = radius; }
    public double area(int rounds) {
      double r = radius;
      for (int i = 0; i < rounds / 3; i++) r = r * 1.0000001 + 0.5 * r * 1e-9;
      return r * r * Math.PI;
    }
  }

  static long hashMix(long x, int rounds) {
    for (int i = 0; i < rounds; i++) {
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
    }
    return x;
  }

  static int smallStep(int x) {
    return x * 31 + (x >>> 7);
  }

  static int inlineDriver(int x, int rounds) {
    for (int i = 0; i < rounds; i++) x = smallStep(x + i);
    return x;
  }

  static double fmodLoop(double x, int rounds) {
    double s = 0;
    for (int i = 0; i < rounds; i++) s += (x + i) % 7.3;
    return s;
  }

  static int fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
  }

  static int sortSmall(int[] a, int seed) {
    for (int i = 0; i < a.length; i++) {
      seed = seed * 1103515245 + 12345;
      a[i] = seed >>> 8;
    }
    for (int i = 1; i < a.length; i++) {
      int v = a[i];
      int j = i - 1;
      while (j >= 0 && a[j] > v) {
        a[j + 1] = a[j];
        j--;
      }
      a[j + 1] = v;
    }
    return a[a.length / 2];
  }

  static int crc(byte[] data, int rounds) {
    int c = ~0;
    for (int r = 0; r < rounds; r++) {
      for (byte b : data) {
        c ^= b & 0xff;
        for (int k = 0; k < 8; k++) c = (c >>> 1) ^ (0xEDB88320 & -(c & 1));
      }
    }
    return ~c;
  }

  static double matMul(double[] a, double[] b, double[] c, int n) {
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        double s = 0;
        for (int k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
        c[i * n + j] = s;
      }
    }
    return c[n + 1];
  }

  static int sieve(boolean[] composite) {
    java.util.Arrays.fill(composite, false);
    int count = 0;
    for (int i = 2; i < composite.length; i++) {
      if (composite[i]) continue;
      count++;
      for (int j = i * 2; j < composite.length; j += i) composite[j] = true;
    }
    return count;
  }

  static void arithLoop(long deadline) {
    long acc = 1;
    while (System.nanoTime() < deadline) {
      acc = hashMix(acc | 1, 400_000);
      acc += inlineDriver((int) acc, 400_000);
      acc += (long) fmodLoop(acc & 1023, 20_000);
    }
    sink = acc;
  }

  static void virtualLoop(long deadline) {
    Shape[] shapes = new Shape[16];
    for (int i = 0; i < shapes.length; i++) {
      shapes[i] = (i & 1) == 0 ? new Square(i + 3) : new Circle(i + 0.5);
    }
    int[] small = new int[1024];
    double acc = 0;
    while (System.nanoTime() < deadline) {
      for (Shape s : shapes) acc += s.area(30_000);
      acc += fib(25);
      acc += sortSmall(small, (int) acc);
    }
    sink = (long) acc;
  }

  static void dataLoop(long deadline) {
    byte[] data = new byte[4096];
    for (int i = 0; i < data.length; i++) data[i] = (byte) (i * 7);
    int n = 16;
    double[] a = new double[n * n], b = new double[n * n], c = new double[n * n];
    for (int i = 0; i < n * n; i++) {
      a[i] = i * 0.5;
      b[i] = 1.0 / (i + 1);
    }
    boolean[] composite = new boolean[49152];
    long acc = 0;
    while (System.nanoTime() < deadline) {
      acc += crc(data, 3);
      for (int r = 0; r < 30; r++) acc += (long) matMul(a, b, c, n);
      acc += sieve(composite);
    }
    sink = acc;
  }

  static final class Worker extends Thread {
    final int kind;
    final long deadline;

    Worker(String name, int kind, long deadline) {
      super(name);
      this.kind = kind;
      this.deadline = deadline;
    }

    @Override
    public void run() {
      switch (kind) {
        case 0: arithLoop(deadline); break;
        case 1: virtualLoop(deadline); break;
        default: dataLoop(deadline); break;
      }
    }
  }

  public static void main(String[] args) throws InterruptedException {
    double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 10;
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    Worker[] workers = {
      new Worker("hot-arith", 0, deadline),
      new Worker("hot-virtual", 1, deadline),
      new Worker("hot-data", 2, deadline),
    };
    for (Worker w : workers) w.start();
    for (Worker w : workers) w.join();
  }
}
