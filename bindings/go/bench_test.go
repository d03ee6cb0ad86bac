// SPDX-License-Identifier: LGPL-2.1-or-later

// Benchmarks: each call through the binding against the same call in a C loop
// (internal/cbench); doc/performance.md has the figures.
package thp

import (
	"testing"
	"unsafe"

	"github.com/libthp/libthp/bindings/go/internal/cbench"
)

// benchRanges is n one-page ranges, every second page of a fresh mapping.
func benchRanges(b *testing.B, n int) []Range {
	m := mapAligned(b, 2*n*4096)
	r := make([]Range, n)
	for i := range r {
		r[i] = RangeOf(m[2*i*4096 : (2*i+1)*4096])
	}
	return r
}

func benchGo(b *testing.B, n int) {
	r := benchRanges(b, n)
	opts := &ApplyOptions{Reports: make([]Report, n)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := ApplyRanges(AdviceHuge, r, opts); err != nil || res.Advised != n {
			b.Fatal(res, err)
		}
	}
}

func benchC(b *testing.B, n int) {
	r := benchRanges(b, n)
	rep := make([]Report, n)
	b.ResetTimer()
	if rc := cbench.ApplyHuge(unsafe.Pointer(&r[0]), n, unsafe.Pointer(&rep[0]), b.N); rc != n {
		b.Fatal(rc)
	}
}

func BenchmarkApplyRanges1Go(b *testing.B)  { benchGo(b, 1) }
func BenchmarkApplyRanges1C(b *testing.B)   { benchC(b, 1) }
func BenchmarkApplyRanges64Go(b *testing.B) { benchGo(b, 64) }
func BenchmarkApplyRanges64C(b *testing.B)  { benchC(b, 64) }

func BenchmarkGetDefaultGo(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := GetDefault(nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetDefaultC(b *testing.B) {
	if rc := cbench.GetDefault(b.N); rc != 0 {
		b.Fatal(rc)
	}
}
