# 50 Ruby frames deep, spinning at the bottom in Ruby code (a while loop:
# no C method, so one vm_exec_core call runs them all), for ARGV[0]
# seconds: the workload of bench/ruby_cost.py.
def spin(deadline)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  x
end

def deep(n, deadline)
  return spin(deadline) if n.zero?

  deep(n - 1, deadline) + 1
end

deep(49, Process.clock_gettime(Process::CLOCK_MONOTONIC) + (ARGV[0] || "5").to_f)
