// A JavaScript stack of a fixed depth for bench/jvm_node_cost.py: down()
// recurses argv[3] frames deep (default 100), whose bottom spins for a
// millisecond, then returns and goes down again, for argv[2] seconds
// (default 4); the rounds make down() hot, so most samples walk optimized
// frames.
'use strict';

function spin(x) {
  const until = process.hrtime.bigint() + 1000000n;
  while (process.hrtime.bigint() < until) {
    for (let i = 0; i < 1000; i++) x = (x * 1103515245 + 12345) % 2147483648;
  }
  return x;
}

function down(depth, x) {
  if (depth <= 0) return spin(x);
  return down(depth - 1, x + depth) ^ depth;
}

const secs = Number(process.argv[2] || 4);
const depth = Number(process.argv[3] || 100);
const end = Date.now() + secs * 1000;
let acc = 0;
while (Date.now() < end) acc = (acc + down(depth, acc)) % 2147483648;
if (acc === 42) console.log(acc);
