// The CPU-bound Node script bench/node_vs_cpuprof.py profiles with ehprof
// and with V8's own profiler: ten hot functions (a leaf and its caller, an
// object literal's method, a class method, a recursive function, an arrow
// function, a named function expression calling itself, a closure, one
// that deoptimises each time it meets objects of a new shape, and an async
// function resumed from the microtask queue), driven by an async loop for
// argv[2] seconds (default 2). TurboFan inlines most of them into their
// callers as node runs by default. Seven are nodenames.js's, copied: V8's
// profiler gives the lines of inlined functions without their script, so
// the bench needs them all in one.
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
function makeClosure(k) {
  return function closureStep(n) {
    let s = k;
    for (let i = 0; i < 20000; i++) s = (s + ((i ^ n) & 255)) | 0;
    return s;
  };
}
const closureStep = makeClosure(7);
// Objects of a new shape (their properties added in another order) every
// few hundred milliseconds, four in all: shapeSum's optimized code checks
// the shapes it has seen and deoptimises on a new one. (A fifth would make
// its property loads megamorphic: calls of a builtin without a frame of
// its own, whose caller V8's profiler does not see.)
const objects = [];
function newShape(round) {
  const o = {};
  const keys = ['x', 'y', 'z', 'w'];
  for (let i = 0; i < keys.length; i++) o[keys[(i + round) % keys.length]] = i + round;
  return o;
}
function shapeSum(o, n) {
  let s = 0;
  for (let i = 0; i < 5000; i++) s = (s + o.x + o.y + ((i + n) & 7)) | 0;
  return s;
}
async function asyncStep(n) {
  let s = 0;
  for (let i = 0; i < 10000; i++) s = (s + Math.imul(i, n | 1)) | 0;
  await null;
  for (let i = 0; i < 10000; i++) s = (s ^ (i + n)) | 0;
  return s;
}
async function mainLoop(seconds) {
  const acc = new Accumulator();
  const begin = Date.now();
  const until = begin + seconds * 1000;
  let v = 0;
  let round = 0;
  objects.push(newShape(0));
  while (Date.now() < until) {
    if (Date.now() - begin > 400 * (round + 1) && round < 3) objects.push(newShape(++round));
    for (let k = 0; k < 20; k++) {
      v += callerOfLeaf(v) + shapes.literalMethod(v & 7) + acc.classMethod(v & 15) + recurse(16) + arrowFn(v & 3) +
           countDown(300) + closureStep(v & 31) + shapeSum(objects[k % objects.length], v & 3);
      v += await asyncStep(v & 63);
      v |= 0;
    }
  }
  return v;
}
mainLoop(Number(process.argv[2] || 2)).then((v) => {
  if (v === 0.5) console.log('never');
});
