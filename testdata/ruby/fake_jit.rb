# A Ruby process that runs code of its own in anonymous executable memory
# (as YJIT's code lies), called through Fiddle, not entered from the VM:
#   ruby fake_jit.rb hidden|called SECONDS
# hidden: the code pushes eight zero words and spins: no return address
#         within reach of the JIT walk's scan.
# called: it pushes two and spins: libffi's call into it is found.
# The process exits after SECONDS (a thread kills it mid-spin).
require "fiddle"

PROT_RWX = 7
MAP_PRIVATE_ANONYMOUS = 0x22

def fake_code(shape)
  libc = Fiddle.dlopen(nil)
  mmap = Fiddle::Function.new(libc["mmap"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT,
                                             Fiddle::TYPE_INT, Fiddle::TYPE_INT, Fiddle::TYPE_LONG],
                              Fiddle::TYPE_VOIDP)
  mem = mmap.call(nil, 4096, PROT_RWX, MAP_PRIVATE_ANONYMOUS, -1, 0)
  pushes = shape == "hidden" ? 8 : 2
  code = ("\x6a\x00" * pushes + "\xeb\xfe").b # push $0 ...; jmp .
  Fiddle::Pointer.new(mem.to_i)[0, code.bytesize] = code
  Fiddle::Function.new(mem.to_i, [], Fiddle::TYPE_VOID)
end

def fake_jit_caller(f)
  f.call # marker: fake_jit_caller
end

shape = ARGV[0] || "hidden"
seconds = (ARGV[1] || "3").to_f
f = fake_code(shape)
Thread.new do
  sleep seconds
  Process.kill(:KILL, Process.pid)
end
$stdout.puts "ready"
$stdout.flush
fake_jit_caller(f)
