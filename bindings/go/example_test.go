// SPDX-License-Identifier: LGPL-2.1-or-later

// Examples that go doc shows and go test runs.
package thp_test

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	thp "github.com/libthp/libthp/bindings/go"
)

// Advise a buffer of your own to use huge pages, and read the report.
func ExampleApplyRanges() {
	// 4 MiB of anonymous memory; mmap returns page-aligned memory.
	buf, err := syscall.Mmap(-1, 0, 4<<20, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	defer syscall.Munmap(buf)

	res, err := thp.ApplyRanges(thp.AdviceHuge, []thp.Range{thp.RangeOf(buf)}, nil)
	if err != nil {
		fmt.Println("failed:", err)
		return
	}
	r := res.Reports[0]
	fmt.Println(res.Advised, "range advised,", r.BytesAdvised>>20, "MiB")
	// Output: 1 range advised, 4 MiB
}

// Errors carry the errno and the library's explanation.
func ExampleError() {
	_, err := thp.ApplyRanges(thp.AdviceHuge, []thp.Range{{Addr: 4097, Len: 4096}}, nil)
	var e *thp.Error
	if errors.As(err, &e) {
		fmt.Println(e.Op, e.Errno == syscall.EINVAL, errors.Is(err, syscall.EINVAL), e.Detail != "")
	}
	// Output: thp_apply_ranges true true true
}

// One collapse pass over this process, as khugepaged would make, with a
// budget.  Another process: Target{Process: p} (needs CAP_SYS_NICE).
func ExampleCollapse() {
	res, err := thp.Collapse(&thp.CollapseOptions{BudgetBytes: 64 << 20})
	if err != nil {
		fmt.Println("collapse:", err)
		return
	}
	fmt.Println("mappings seen:", res.MappingsSeen > 0, "within budget:", res.BytesCollapsed <= 64<<20)
	// Output: mappings seen: true within budget: true
}

// What the running kernel offers.
func ExampleProbe() {
	p, err := thp.Probe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println("PMD size", p.PmdSize>>20, "MiB; madvise backend:", p.Has(thp.BackendMadvise))
	// Output: PMD size 2 MiB; madvise backend: true
}

// The default policy of this process.
func ExampleGetDefault() {
	d, err := thp.GetDefault(nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Policy != thp.PolicyNever)
	// Output: true
}
