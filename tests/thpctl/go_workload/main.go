// SPDX-License-Identifier: LGPL-2.1-or-later

// A Go program for the collapse agent: a static binary with its own
// allocator, out of the preload's reach.  Allocates -m MiB (default 256) in
// 1 MiB slices, fills them, prints "ready PID BYTES SUM", then answers
// "sum" on stdin with "sum SUM" and exits on "quit" or EOF.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

func checksum(blocks [][]byte) uint64 {
	var sum uint64
	for _, b := range blocks {
		for i := 0; i < len(b); i += 8 {
			w := uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24
			sum = (sum ^ w) * 0x100000001b3
		}
	}
	return sum
}

func main() {
	mib := flag.Int("m", 256, "MiB to allocate")
	flag.Parse()
	// Keep the heap: no scavenging back to the kernel while the test looks.
	debug.SetGCPercent(-1)
	blocks := make([][]byte, *mib)
	for i := range blocks {
		blocks[i] = make([]byte, 1<<20)
		for j := range blocks[i] {
			blocks[i][j] = byte(i*31 + j*7)
		}
	}
	fmt.Printf("ready %d %d %016x\n", os.Getpid(), *mib<<20, checksum(blocks))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "sum":
			fmt.Printf("sum %016x\n", checksum(blocks))
		case "quit":
			return
		}
	}
}
