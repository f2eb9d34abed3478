<?php
// A CPU-bound PHP workload whose time splits unevenly over ten functions
// (weights 1..10): five functions, a recursive one, a closure array_map
// calls, a usort callback, a static and an instance method; each spins in a
// loop on one line marked "loop wN" (its hot-loop line). A round takes
// some 7 ms, and a random spin between rounds keeps a profiler sampling
// every millisecond from meeting the functions at the same points of each
// round (with 1 ms rounds php-excimer's and ehprof's shares differed by
// up to 4 points).
//   php mix.php SECONDS        the mix
//   php mix.php deep SECONDS   deep() recursing 50 frames, spinning at the bottom
//   under PHP-FPM: mix.php?seconds=SECONDS
// With EXCIMER_OUT=FILE and the excimer extension, php-excimer samples the
// process too (CPU time, 1 ms) and writes its collapsed stacks to FILE at exit.

function w1() { $s = 0;
    for ($i = 0; $i < 7000; $i++) { $s += $i % 7; } // loop w1
    return $s; }
function w2() { $s = 0;
    for ($i = 0; $i < 14000; $i++) { $s += $i % 7; } // loop w2
    return $s; }
function w3() { $s = 0;
    for ($i = 0; $i < 21000; $i++) { $s += $i % 7; } // loop w3
    return $s; }
function w4() { $s = 0;
    for ($i = 0; $i < 28000; $i++) { $s += $i % 7; } // loop w4
    return $s; }
function w5() { $s = 0;
    for ($i = 0; $i < 35000; $i++) { $s += $i % 7; } // loop w5
    return $s; }
function w6($depth) {
    if ($depth > 0) return w6($depth - 1);
    $s = 0;
    for ($i = 0; $i < 42000 / 4; $i++) { $s += $i % 7; } // loop w6
    return $s; }
function w8($a, $b) { $s = 0;
    for ($i = 0; $i < 56000 / 64; $i++) { $s += $i % 7; } // loop w8
    return $a <=> $b; }
class Mix {
    static function w9() { $s = 0;
        for ($i = 0; $i < 63000; $i++) { $s += $i % 7; } // loop w9
        return $s; }
    function w10() { $s = 0;
        for ($i = 0; $i < 70000; $i++) { $s += $i % 7; } // loop w10
        return $s; }
}
function jitter() { $s = 0; $n = mt_rand(0, 3000);
    for ($i = 0; $i < $n; $i++) { $s += $i % 7; }
    return $s; }
function deep($depth) {
    if ($depth > 0) return deep($depth - 1);
    $s = 0;
    for ($i = 0; $i < 200000; $i++) { $s += $i % 7; } // loop deep
    return $s; }

function run_mix($deadline) {
    $w7 = function ($x) { $s = 0;
        for ($i = 0; $i < 49000 / 4; $i++) { $s += $i % 7; } // loop w7
        return $s; };
    $sortme = [5, 3, 9, 1, 7, 2, 8, 4, 6, 0, 11, 10, 13, 12, 15, 14];
    $mix = new Mix();
    while (microtime(true) < $deadline) {
        w1(); w2(); w3(); w4(); w5();
        for ($k = 0; $k < 4; $k++) w6(4);
        array_map($w7, [1, 2, 3, 4]);
        $a = $sortme;
        usort($a, 'w8');
        Mix::w9();
        $mix->w10();
        jitter();
    }
}

function main($argv) {
    $deep = ($argv[1] ?? '') === 'deep';
    $seconds = (float)($deep ? ($argv[2] ?? 2) : ($argv[1] ?? 2));
    $out = getenv('EXCIMER_OUT');
    $prof = null;
    if ($out && extension_loaded('excimer')) {
        $prof = new ExcimerProfiler();
        $prof->setEventType(EXCIMER_CPU);
        $prof->setPeriod(0.001);
        $prof->start();
    }
    $deadline = microtime(true) + $seconds;
    if ($deep) {
        while (microtime(true) < $deadline) deep(49);
    } else {
        run_mix($deadline);
    }
    if ($prof) {
        $prof->stop();
        file_put_contents($out, $prof->getLog()->formatCollapsed());
    }
}

main(PHP_SAPI === 'cli' ? $argv : ['mix.php', $_GET['seconds'] ?? '2']);
