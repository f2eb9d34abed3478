// Two goroutines with different hot functions, for the Go tests: the
// stripped build (-ldflags='-s -w') has no .symtab, .eh_frame or
// .debug_frame, only frame pointers and .gopclntab. hotA is inlined into
// runA by the compiler (it is small), so its frames come from the pclntab
// inline tree; spinB and hotB are kept out of line.
// Usage: gowork [seconds]
package main

import (
	"os"
	"strconv"
	"sync"
	"time"
)

var sink uint64

// mixA is small enough for the compiler to inline into hotA's loop.
func mixA(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

//go:noinline
func hotA(n int) uint64 {
	x := uint64(n)
	for i := 0; i < 2000000; i++ {
		x = mixA(x) ^ (x >> 17)
	}
	return x
}

//go:noinline
func spinB(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < 2000000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func hotB(n int) uint64 { return spinB(n) + 1 }

func worker(until time.Time, f func(int) uint64, wg *sync.WaitGroup) {
	defer wg.Done()
	var acc uint64
	for i := 0; time.Now().Before(until); i++ {
		acc += f(i)
	}
	sink += acc
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	until := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	wg.Add(2)
	go worker(until, hotA, &wg)
	go worker(until, hotB, &wg)
	wg.Wait()
}
