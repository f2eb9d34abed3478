// A CPU-bound Node script for the JIT test: two hot JS functions, run for
// argv[2] seconds (default 2). Profiled with node --perf-basic-prof
// --interpreted-frames-native-stack, its JIT frames are named from
// /tmp/perf-PID.map and walked by frame pointer; below them the walk goes
// through V8's builtins (no CFI: the frame-pointer fallback) into node's C++
// and down to _start.
'use strict';
function hotA(n) {
  let x = n | 0;
  for (let i = 0; i < 200000; i++) x = (Math.imul(x, 1103515245) + 12345) | 0;
  return x;
}
function hotB(n) {
  let s = 0;
  for (let i = 0; i < 100000; i++) s += Math.sqrt(i + n);
  return s;
}
const seconds = Number(process.argv[2] || 2);
const until = Date.now() + seconds * 1000;
let acc = 0;
while (Date.now() < until) acc += hotA(acc) + hotB(acc & 7);
if (acc === 0.5) console.log(acc);
