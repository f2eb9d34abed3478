// Java in three ways for the event sources besides CPU sampling: its main
// thread spins (CPU samples), sleeps (off-CPU time) and writes a byte to
// /dev/null (a uprobe on libc's write), each in a method of its own, for
// argv[0] seconds (default 4).
import java.io.FileOutputStream;
import java.io.IOException;

public class JvmWaits {
  static long spinHere(long x) {
    for (int i = 0; i < 2_000_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
  }
  static void sleepHere() throws InterruptedException {
    Thread.sleep(20);
  }
  static void writeHere(FileOutputStream out) throws IOException {
    out.write(1);
  }
  public static void main(String[] args) throws Exception {
    double secs = args.length > 0 ? Double.parseDouble(args[0]) : 4;
    long until = System.currentTimeMillis() + (long) (secs * 1000), acc = 0;
    try (FileOutputStream out = new FileOutputStream("/dev/null")) {
      while (System.currentTimeMillis() < until) {
        acc += spinHere(acc);
        sleepHere();
        writeHere(out);
      }
    }
    if (acc == 42) System.out.println(acc);
  }
}
