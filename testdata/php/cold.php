<?php
// A PHP workload whose hot PHP code runs under execute_ex's cold part
// (execute_ex.cold in Debian's php8.2): utf8_encode is deprecated in 8.2,
// and the VM raises its deprecation from the cold part, which calls the
// user error handler: handler()'s VM call stands above zend_error, above
// the cold part's native frame, above caller() and the script.
//   php cold.php SECONDS
function handler($no, $str) { $s = 0;
    for ($i = 0; $i < 20000; $i++) { $s += $i % 7; } // loop handler
    return true; }
function caller() {
    for ($k = 0; $k < 200; $k++) { utf8_encode("x"); } // call line
}
set_error_handler('handler');
$end = microtime(true) + (float)($argv[1] ?? 2);
while (microtime(true) < $end) caller();
