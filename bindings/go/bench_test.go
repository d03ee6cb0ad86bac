// SPDX-License-Identifier: LGPL-2.1-or-later

// Benchmarks: each call through the binding against the same call in a C loop
// (internal/cbench); doc/performance.md has the figures.
package thp

import (
	"fmt"
	"sort"
	"testing"
	"time"
	"unsafe"

	"github.com/libthp/libthp/bindings/go/internal/cbench"
)

// benchRanges is n one-page ranges, every second page of a fresh mapping.
func benchRanges(b testing.TB, n int) []Range {
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

// BenchmarkInterleaved (go test -run '^$' -bench Interleaved
// -benchtime=200x -v) alternates b.N rounds of 1,000 calls through the
// binding with 1,000 calls in the C loop, so that the load of a shared
// machine hits both alike, and logs the medians and the median of the
// per-round ratios (doc/performance.md).
func BenchmarkInterleaved(b *testing.B) {
	t, rounds := b, b.N
	const per = 1000
	for _, n := range []int{1, 64, 0} {
		var gos, cs, ratios []float64
		r := benchRanges(t, max(n, 1))
		rep := make([]Report, len(r))
		opts := &ApplyOptions{Reports: rep}
		for i := 0; i < rounds; i++ {
			t0 := time.Now()
			for j := 0; j < per; j++ {
				var err error
				if n == 0 {
					_, err = GetDefault(nil)
				} else {
					_, err = ApplyRanges(AdviceHuge, r, opts)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			t1 := time.Now()
			if n == 0 {
				cbench.GetDefault(per)
			} else {
				cbench.ApplyHuge(unsafe.Pointer(&r[0]), n, unsafe.Pointer(&rep[0]), per)
			}
			t2 := time.Now()
			g, c := float64(t1.Sub(t0).Nanoseconds())/per, float64(t2.Sub(t1).Nanoseconds())/per
			gos, cs, ratios = append(gos, g), append(cs, c), append(ratios, g/c)
		}
		what := fmt.Sprintf("thp_apply_ranges(), %d range(s)", n)
		if n == 0 {
			what = "thp_get_default()"
		}
		t.Logf("| %s | %.0f | %.0f | %.2f |", what, median(gos), median(cs), median(ratios))
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}
