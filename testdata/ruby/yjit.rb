# Hot methods for Ruby's JIT (run with --yjit), in two threads:
#   ruby --yjit yjit.rb SECONDS
# Thread one: a method calling another inside JIT code (no native frame
# between them), recursion, a block that a C method (Integer#times) yields
# to. Thread two: a plain loop, and a string built by a C method in a
# loop. Each marker comment names a line the tests look up.

def jit_inner(i)
  (i * 7) ^ (i >> 3) # marker: jit_inner
end

def jit_outer(n)
  s = 0
  i = 0
  while i < n
    s += jit_inner(i) # marker: jit_outer calls inner
    i += 1
  end
  s
end

def jit_fib(n)
  n < 2 ? n : jit_fib(n - 1) + jit_fib(n - 2) # marker: jit_fib
end

def jit_times(n)
  s = 0
  n.times { |i| s += i & 15 } # marker: jit_times block
  s
end

def jit_loop(n)
  s = 0
  i = 0
  while i < n
    s += i * i # marker: jit_loop
    i += 1
  end
  s
end

def jit_concat(n)
  s = +""
  i = 0
  while i < n
    s << "ab" # marker: jit_concat
    i += 1
  end
  s.size
end

def jit_thread_one(deadline)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    jit_outer(20_000)
    jit_fib(18)
    jit_times(20_000)
  end
end

def jit_thread_two(deadline)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    jit_loop(40_000)
    jit_concat(20_000)
  end
end

seconds = (ARGV[0] || "3").to_f
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
t = Thread.new { jit_thread_two(deadline) }
jit_thread_one(deadline)
t.join
