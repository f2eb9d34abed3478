// A CPU-bound Node script for naming JavaScript frames from V8's heap (no
// flags): a leaf called by a caller, an object literal's method, a class
// method, a recursive function, an arrow function held in a variable and a
// named function expression that calls itself,
// run for argv[2] seconds (default 2). Every function that runs is named
// here: a frame of this file named otherwise is a wrong name.
'use strict';
function leafMix(n) {
  let x = n | 0;
  for (let i = 0; i < 20000; i++) x = (Math.imul(x, 1103515245) + 12345) | 0;
  return x;
}
function callerOfLeaf(n) {
  return leafMix(n) ^ leafMix(n + 1);
}
const shapes = {
  literalMethod(n) {
    let s = 0;
    for (let i = 0; i < 20000; i++) s += Math.sqrt(i + n);
    return s | 0;
  },
};
class Accumulator {
  classMethod(n) {
    let s = 1;
    for (let i = 1; i < 20000; i++) s = (s * 31 + i + n) % 1000003;
    return s;
  }
}
function recurse(n) {
  return n < 2 ? n : recurse(n - 1) + recurse(n - 2);
}
const arrowFn = (n) => {
  let s = 0;
  for (let i = 0; i < 20000; i++) s ^= (i * n) >>> 3;
  return s;
};
const countDown = function selfNamed(n) {
  return n <= 0 ? 0 : 1 + selfNamed(n - 1);
};
function mainLoop(seconds) {
  const acc = new Accumulator();
  const until = Date.now() + seconds * 1000;
  let v = 0;
  while (Date.now() < until) {
    for (let k = 0; k < 20; k++) {
      v += callerOfLeaf(v) + shapes.literalMethod(v & 7) + acc.classMethod(v & 15) + recurse(16) + arrowFn(v & 3) + countDown(300);
      v |= 0;
    }
  }
  return v;
}
if (mainLoop(Number(process.argv[2] || 2)) === 0.5) console.log('never');
