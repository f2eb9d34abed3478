# Ruby shapes whose stacks the tests and bench/ruby_vs_rbspy.py know:
#   ruby shapes.rb SHAPE SECONDS
# sleep:  a known stack (a, b, Array#sort_by, a block, Kernel#sleep) that
#         waits, for reading its control frames from outside.
# hot:    ten hot functions in two threads, recursion, a block and C methods
#         that call back into Ruby (sort_by, each), until SECONDS pass.
# Each marker comment names a line the tests look up.

def sleeper_b(seconds)
  [3, 1, 2].sort_by { |x| sleep(seconds); x } # marker: sleep block
end

def sleeper_a(seconds)
  sleeper_b(seconds) # marker: sleeper_a calls b
end

def hot_add(n)
  s = 0
  i = 0
  while i < n
    s += i # marker: hot_add loop
    i += 1
  end
  s
end

def hot_mul(n)
  s = 1
  n.times { |i| s = (s * (i | 1)) & 0xffff } # marker: hot_mul block
  s
end

def hot_fib(n)
  n < 2 ? n : hot_fib(n - 1) + hot_fib(n - 2) # marker: hot_fib
end

def hot_sort(n)
  (1..n).to_a.sort_by { |x| -x }.first # marker: hot_sort block
end

def hot_each(n)
  t = 0
  (1..n).each { |x| t ^= x } # marker: hot_each block
  t
end

def hot_str(n)
  s = +""
  n.times { |i| s << (i & 7).to_s } # marker: hot_str block
  s.size
end

def hot_hash(n)
  h = {}
  n.times { |i| h[i & 255] = i } # marker: hot_hash block
  h.size
end

def hot_float(n)
  x = 0.0
  i = 0
  while i < n
    x += Math.sqrt(i) # marker: hot_float loop
    i += 1
  end
  x
end

def hot_array(n)
  a = Array.new(64) { |i| i }
  n.times { a.rotate!(1) } # marker: hot_array block
  a[0]
end

def hot_cmp(n)
  c = 0
  i = 0
  while i < n
    c += 1 if i % 3 == 0 # marker: hot_cmp loop
    i += 1
  end
  c
end

def thread_one(deadline)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    hot_add(20_000)
    hot_mul(10_000)
    hot_fib(16)
    hot_sort(2_000)
    hot_each(10_000)
  end
end

def thread_two(deadline)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    hot_str(8_000)
    hot_hash(10_000)
    hot_float(20_000)
    hot_array(5_000)
    hot_cmp(20_000)
  end
end

shape = ARGV[0] || "hot"
seconds = (ARGV[1] || "3").to_f
$stdout.sync = true
case shape
when "sleep"
  puts "ready"
  sleeper_a(seconds)
when "hot"
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  t = Thread.new { thread_two(deadline) }
  thread_one(deadline)
  t.join
else
  abort "unknown shape #{shape}"
end
