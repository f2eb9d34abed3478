// JavaScript in three ways for the event sources besides CPU sampling:
// node's main thread spins (CPU samples), waits (off-CPU time: Atomics.wait
// blocks the thread) and writes a byte to /dev/null (a uprobe on libc's
// write), each in a function of its own, for argv[2] seconds (default 4).
'use strict';
const fs = require('fs');
const cell = new Int32Array(new SharedArrayBuffer(4));
function spinHere(n) {
  let x = n | 0;
  for (let i = 0; i < 1000000; i++) x = (Math.imul(x, 1103515245) + 12345) | 0;
  return x;
}
function sleepHere() {
  Atomics.wait(cell, 0, 0, 20);
}
function writeHere(fd) {
  fs.writeSync(fd, 'x');
}
function mainLoop(seconds) {
  const fd = fs.openSync('/dev/null', 'w');
  const until = Date.now() + seconds * 1000;
  let v = 0;
  while (Date.now() < until) {
    v = spinHere(v);
    sleepHere();
    writeHere(fd);
  }
  fs.closeSync(fd);
  return v;
}
if (mainLoop(Number(process.argv[2] || 4)) === 0.5) console.log('never');
