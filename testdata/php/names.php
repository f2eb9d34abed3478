<?php
// A PHP process stopped inside known frames for agent/php/'s naming tests:
// it prints "ready", then sleeps in usleep (an internal function) called
// by a closure that K::m calls through array_map, under the script's own
// code; php names.php.
class K {
    function m() {
        $f = function ($x) {
            usleep(60000000); // sleep line
            return $x;
        };
        return array_map($f, [1]); // map line
    }
}
echo "ready\n";
flush();
(new K())->m(); // main line
