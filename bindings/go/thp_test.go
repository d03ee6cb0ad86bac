// SPDX-License-Identifier: LGPL-2.1-or-later

// Tests of every call of the binding, on this process and on a child through a pidfd.
package thp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

func TestMain(m *testing.M) {
	switch os.Getenv("THPGO_HELPER") {
	case "target":
		os.Exit(helperTarget())
	case "default":
		os.Exit(helperDefault())
	}
	// In a guest (vm_init) the output is seen only when a test fails: all
	// of it.  -test.short: fewer rounds where TCG is many times slower.
	if os.Getenv("THP_TEST_NO_SKIP") == "1" {
		flag.Set("test.v", "true")
		flag.Set("test.short", "true")
	}
	os.Exit(m.Run())
}

// The Go mirror types are handed to C as they are: their layout must be C's.
func TestLayout(t *testing.T) {
	var r Report
	var g Range
	got := map[string]uintptr{
		"range.size":           unsafe.Sizeof(g),
		"range.len":            unsafe.Offsetof(g.Len),
		"report.size":          unsafe.Sizeof(r),
		"report.bytes_advised": unsafe.Offsetof(r.BytesAdvised),
		"report.fail_addr":     unsafe.Offsetof(r.FailAddr),
		"report.error":         unsafe.Offsetof(r.Error),
		"report.backend":       unsafe.Offsetof(r.Backend),
		"report.attempted":     unsafe.Offsetof(r.Attempted),
	}
	for k, want := range layout() {
		if got[k] != want {
			t.Errorf("%s: Go %d, C %d", k, got[k], want)
		}
	}
}

func TestApplyRangesSelfByteSlice(t *testing.T) {
	requireMadviseMode(t)
	b := mapAligned(t, 2*hugeSize)
	res, err := ApplyRanges(AdviceHuge, []Range{RangeOf(b)}, nil)
	if err != nil || res.Advised != 1 {
		t.Fatalf("ApplyRanges(HUGE) = %+v, %v", res, err)
	}
	if len(res.Reports) != 1 {
		t.Fatalf("%d reports, want 1", len(res.Reports))
	}
	r := res.Reports[0]
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	if r.Addr != addr || r.Len != uint64(len(b)) || r.BytesAdvised != uint64(len(b)) ||
		r.Attempted != 1 || r.Error != 0 || r.Backend == 0 || r.Backend != res.BackendUsed {
		t.Errorf("report %+v, want addr %#x len %d advised all", r, addr, len(b))
	}
	if e := smapsAt(t, 0, addr); !e.hasFlag("hg") || e.hasFlag("nh") {
		t.Errorf("smaps VmFlags %v after HUGE: want hg", e.vmFlags)
	}
	// In madvise mode a touched, HUGE-advised aligned mapping faults in huge pages.
	touch(b)
	if e := smapsAt(t, 0, addr); e.anonHugePages == 0 {
		t.Errorf("AnonHugePages 0 after HUGE and a touch")
	}
	if _, err := ApplyRanges(AdviceNoHuge, []Range{RangeOf(b)}, nil); err != nil {
		t.Fatal(err)
	}
	if e := smapsAt(t, 0, addr); e.hasFlag("hg") || !e.hasFlag("nh") {
		t.Errorf("smaps VmFlags %v after NOHUGE: want nh", e.vmFlags)
	}
}

func TestApplyRangesSelfUnsafePointer(t *testing.T) {
	requireMadviseMode(t)
	b := mapAligned(t, hugeSize)
	p := unsafe.Pointer(&b[0])
	res, err := ApplyRanges(AdviceNoHuge, []Range{RangeAt(p, hugeSize)}, &ApplyOptions{Backend: BackendMadvise})
	if err != nil || res.Advised != 1 || res.BackendUsed != BackendMadvise {
		t.Fatalf("ApplyRanges = %+v, %v", res, err)
	}
	if e := smapsAt(t, 0, uint64(uintptr(p))); !e.hasFlag("nh") {
		t.Errorf("VmFlags %v: want nh", e.vmFlags)
	}
}

// 64 ranges, every second one advised: each report names its own range.
func TestApplyRanges64Reports(t *testing.T) {
	requireMadviseMode(t)
	const n = 64
	b := mapAligned(t, 2*n*4096)
	ranges := make([]Range, n)
	for i := range ranges {
		ranges[i] = RangeOf(b[2*i*4096 : (2*i+1)*4096])
	}
	buf := make([]Report, n)
	res, err := ApplyRanges(AdviceHuge, ranges, &ApplyOptions{Reports: buf})
	if err != nil || res.Advised != n || len(res.Reports) != n {
		t.Fatalf("ApplyRanges = %d, %d reports, %v", res.Advised, len(res.Reports), err)
	}
	if &res.Reports[0] != &buf[0] {
		t.Errorf("the caller's report buffer was not used")
	}
	for i, r := range res.Reports {
		if r.Addr != ranges[i].Addr || r.Len != 4096 || r.BytesAdvised != 4096 || r.Attempted != 1 {
			t.Errorf("report %d: %+v, want range %#x", i, r, ranges[i].Addr)
		}
		if e := smapsAt(t, 0, ranges[i].Addr); !e.hasFlag("hg") {
			t.Errorf("range %d: VmFlags %v, want hg", i, e.vmFlags)
		}
		if e := smapsAt(t, 0, ranges[i].Addr+4096); e.hasFlag("hg") {
			t.Errorf("gap after range %d: VmFlags %v, want no hg", i, e.vmFlags)
		}
	}
}

func TestApplyRangesError(t *testing.T) {
	b := mapAligned(t, hugeSize)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	ranges := []Range{{Addr: addr, Len: 4096}, {Addr: addr + 1, Len: 4096}}
	res, err := ApplyRanges(AdviceHuge, ranges, nil)
	var te *Error
	if !errors.As(err, &te) || te.Errno != syscall.EINVAL || !errors.Is(err, syscall.EINVAL) ||
		te.Op != "thp_apply_ranges" {
		t.Fatalf("err %v, want *Error EINVAL", err)
	}
	if te.Detail == "" || !strings.Contains(err.Error(), te.Detail) {
		t.Errorf("detail %q, message %q", te.Detail, err.Error())
	}
	if len(res.Reports) != 2 {
		t.Fatalf("%d reports on failure, want 2", len(res.Reports))
	}
	for i, r := range res.Reports {
		if r.Attempted != 0 || r.Errno() != syscall.EINVAL || r.Addr != ranges[i].Addr {
			t.Errorf("report %d: %+v, want not attempted, EINVAL", i, r)
		}
	}
	if e := smapsAt(t, 0, addr); e.hasFlag("hg") {
		t.Errorf("bad input changed the mapping: VmFlags %v", e.vmFlags)
	}
}

// More than MaxRanges: refused by the library, no reports (and none allocated).
func TestApplyRangesTooMany(t *testing.T) {
	res, err := ApplyRanges(AdviceHuge, make([]Range, MaxRanges+1), nil)
	var te *Error
	if !errors.As(err, &te) || te.Errno != syscall.EINVAL || te.Detail == "" || res.Reports != nil {
		t.Errorf("%d ranges: %d reports, %v; want EINVAL with a detail, no reports", MaxRanges+1, len(res.Reports), err)
	}
}

func TestApplyAllSelf(t *testing.T) {
	requireMadviseMode(t)
	b := mapAligned(t, hugeSize)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	fails := make([]Report, 0, 8)
	res, err := ApplyAll(AdviceHuge, &ApplyAllOptions{Flags: SkipErrors, Failures: fails})
	if err != nil {
		t.Fatal(err)
	}
	if res.Advised < 1 || uint64(res.Advised) != res.MappingsAdvised || res.MappingsSeen < res.MappingsAdvised ||
		res.BytesAdvised < hugeSize || res.BackendUsed == 0 {
		t.Errorf("ApplyAll = %+v", res)
	}
	if uint64(len(res.Failures)) > res.FailuresNeeded || len(res.Failures) > 8 {
		t.Errorf("%d failures of %d", len(res.Failures), res.FailuresNeeded)
	}
	if e := smapsAt(t, 0, addr); !e.hasFlag("hg") {
		t.Errorf("VmFlags %v after ApplyAll(HUGE): want hg", e.vmFlags)
	}
	if _, err := ApplyAll(Advice(4), nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ApplyAll(advice 4) = %v, want EINVAL", err)
	}
}

// helperDefault sets and reads its own default policy (it changes the
// whole process, so it runs in a child).
func helperDefault() int {
	fail := func(f string, a ...interface{}) int {
		fmt.Printf("FAIL "+f+"\n", a...)
		return 1
	}
	p, err := Probe()
	if err != nil {
		return fail("Probe: %v", err)
	}
	set, err := SetDefault(PolicyNoHuge, nil)
	if p.ThpDisableExceptAdvised {
		if err != nil {
			return fail("SetDefault(nohuge): %v", err)
		}
		got, err := GetDefault(nil)
		if err != nil || got.Policy != PolicyNoHuge {
			return fail("GetDefault after nohuge: %+v, %v", got, err)
		}
		if set.BackendUsed == 0 {
			return fail("SetDefault: no backend: %+v", set)
		}
	} else {
		// Before 6.18 (Debian 12's 6.1) a mainline kernel cannot: refused, with the reason.
		var te *Error
		if !errors.As(err, &te) || te.Errno != syscall.EOPNOTSUPP || te.Op != "thp_set_default" ||
			!strings.Contains(te.Detail, "NOHUGE") {
			return fail("SetDefault(nohuge) without PR_THP_DISABLE_EXCEPT_ADVISED = %+v, %v; "+
				"want EOPNOTSUPP with a detail naming NOHUGE", set, err)
		}
		if got, err := GetDefault(nil); err != nil || got.Policy != PolicySystem {
			return fail("GetDefault after a refused nohuge: %+v, %v; want system", got, err)
		}
	}
	if _, err := SetDefault(PolicyNever, nil); err != nil {
		return fail("SetDefault(never): %v", err)
	}
	status, _ := os.ReadFile("/proc/self/status")
	if !strings.Contains(string(status), "THP_enabled:\t0") {
		return fail("THP_enabled not 0 after never")
	}
	if got, err := GetDefault(nil); err != nil || got.Policy != PolicyNever {
		return fail("GetDefault after never: %+v, %v", got, err)
	}
	if _, err := SetDefault(Policy(9), nil); !errors.Is(err, syscall.EINVAL) {
		return fail("SetDefault(9) = %v, want EINVAL", err)
	}
	fmt.Println("OK")
	return 0
}

func TestSetGetDefault(t *testing.T) {
	cmd := helperCmd("default")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("child: %v: %s", err, out)
	}
	got, err := GetDefault(nil)
	if err != nil || got.Policy == PolicyNever {
		t.Errorf("GetDefault in the parent: %+v, %v", got, err)
	}
}

// A call the running kernel refuses is reported with the library's errno
// and detail: process_madvise() on the calling process with HUGE (6.13+;
// the library refuses it before 6.13, as in Debian 12's 6.1).
func TestKernelRefusal(t *testing.T) {
	requireMadviseMode(t)
	p, err := Probe()
	if err != nil {
		t.Fatal(err)
	}
	b := mapAligned(t, hugeSize)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	res, err := ApplyRanges(AdviceHuge, []Range{RangeOf(b)}, &ApplyOptions{Backend: BackendProcessMadvise})
	t.Logf("ProcessMadviseSelfHuge %v: %+v, %v", p.ProcessMadviseSelfHuge, res, err)
	e := smapsAt(t, 0, addr)
	if p.ProcessMadviseSelfHuge {
		if err != nil || res.Advised != 1 || res.BackendUsed != BackendProcessMadvise {
			t.Fatalf("ApplyRanges(HUGE, process_madvise) = %+v, %v", res, err)
		}
		if !e.hasFlag("hg") {
			t.Errorf("VmFlags %v after HUGE: want hg", e.vmFlags)
		}
		return
	}
	var te *Error
	if !errors.As(err, &te) || te.Errno != syscall.EOPNOTSUPP || te.Op != "thp_apply_ranges" || te.Detail == "" {
		t.Fatalf("ApplyRanges(HUGE, process_madvise) = %+v, %v; want EOPNOTSUPP with a detail", res, err)
	}
	if e.hasFlag("hg") || e.hasFlag("nh") {
		t.Errorf("a refused call changed the mapping: VmFlags %v", e.vmFlags)
	}
}

func TestProbe(t *testing.T) {
	p, err := Probe()
	if err != nil {
		t.Fatal(err)
	}
	if p.PmdSize != hugeSize {
		t.Errorf("PmdSize %d", p.PmdSize)
	}
	b, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	want := map[string]uint32{"[always]": 0, "[madvise]": 1, "[never]": 2}
	for k, v := range want {
		if strings.Contains(string(b), k) && p.ThpMode != v {
			t.Errorf("ThpMode %d, sysfs %q", p.ThpMode, b)
		}
	}
	if !p.Has(BackendMadvise) || p.Has(BackendCount) {
		t.Errorf("Backends %#x", p.Backends)
	}
	if len(p.Sizes) == 0 || p.Sizes[len(p.Sizes)-1].Size < hugeSize && p.NrSizes <= 16 {
		t.Errorf("Sizes %+v", p.Sizes)
	}
}

func TestQuerySelf(t *testing.T) {
	requireMadviseMode(t)
	b := mapAligned(t, 2*hugeSize)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	if _, err := ApplyRanges(AdviceHuge, []Range{RangeOf(b)}, nil); err != nil {
		t.Fatal(err)
	}
	touch(b)
	q, err := Query(&QueryOptions{Addr: addr, Len: uint64(len(b))})
	if err != nil || len(q.Mappings) != 1 {
		t.Fatalf("Query = %+v, %v", q, err)
	}
	m := q.Mappings[0]
	e := smapsAt(t, 0, addr)
	if m.Start != addr || m.End != addr+uint64(len(b)) || !m.AdvisedHuge || m.AdvisedNoHuge ||
		!m.Anonymous || m.AnonHugeBytes != e.anonHugePages || m.Name != "" {
		t.Errorf("mapping %+v, smaps AnonHugePages %d", m, e.anonHugePages)
	}
	all, err := Query(nil)
	if err != nil || len(all.Mappings) < 5 {
		t.Fatalf("Query(all) = %d mappings, %v", len(all.Mappings), err)
	}
	if _, err := Query(&QueryOptions{Flags: 8}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Query(flags 8) = %v, want EINVAL", err)
	}
}

func TestCollapseSelf(t *testing.T) {
	requireMadviseMode(t)
	b := mapAligned(t, 2*hugeSize)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	touch(b)
	if e := smapsAt(t, 0, addr); e.anonHugePages != 0 {
		skipf(t, "already huge before the collapse")
	}
	res, err := ApplyRanges(AdviceCollapse, []Range{RangeOf(b)}, nil)
	if err != nil {
		t.Fatalf("ApplyRanges(COLLAPSE) = %+v, %v", res, err)
	}
	if e := smapsAt(t, 0, addr); e.anonHugePages != 2*hugeSize ||
		res.Reports[0].BytesAdvised != 2*hugeSize {
		t.Errorf("AnonHugePages %d, report %+v after COLLAPSE", e.anonHugePages, res.Reports[0])
	}
	self, err := Collapse(&CollapseOptions{Failures: make([]Report, 0, 2)})
	if err != nil || uint64(len(self.Failures)) != min64(self.FailuresNeeded, 2) || self.MappingsSeen == 0 {
		t.Errorf("Collapse(self) = %d failures, %+v, %v", len(self.Failures), self, err)
	}
	if c, err := Collapse(&CollapseOptions{Flags: CheckOnly}); err != nil || c.MappingsSeen != 0 {
		t.Errorf("Collapse(CheckOnly) = %+v, %v", c, err)
	}
	if _, err := Collapse(&CollapseOptions{Flags: 4}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Collapse(flags 4) = %v, want EINVAL", err)
	}
}

// Another process through *os.Process and through a raw pidfd.
func TestRemote(t *testing.T) {
	requireMadviseMode(t)
	c := startChild(t)
	pid := c.cmd.Process.Pid
	if e := smapsAt(t, pid, c.addr); !e.found || e.anonHugePages != 0 {
		t.Fatalf("child mapping %+v", e)
	}
	q, err := Query(&QueryOptions{Target: Target{Process: c.cmd.Process}, Addr: c.addr, Len: 2 * hugeSize})
	if err != nil || len(q.Mappings) != 1 || q.Mappings[0].Start != c.addr || q.Mappings[0].RssBytes != 2*hugeSize {
		t.Fatalf("Query(child) = %+v, %v", q, err)
	}
	pfd, err := OpenPidfd(c.cmd.Process)
	if err != nil {
		t.Fatal(err)
	}
	defer pfd.Close()
	// Mainline advises another process with COLLAPSE only.
	_, err = ApplyRanges(AdviceHuge, []Range{{c.addr, hugeSize}}, &ApplyOptions{Target: Target{Pidfd: pfd.Fd()}})
	var te *Error
	if !errors.As(err, &te) || te.Errno != syscall.EOPNOTSUPP || te.Detail == "" {
		t.Errorf("remote HUGE = %v, want EOPNOTSUPP with a detail", err)
	}
	// "system" and "nohuge" look the same from outside: refused rather than guessed.
	if _, err := GetDefault(&DefaultOptions{Target: Target{Process: c.cmd.Process}}); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("GetDefault(child) = %v, want EOPNOTSUPP", err)
	}
	if _, err := Query(&QueryOptions{Target: Target{Process: c.cmd.Process, Pidfd: pfd.Fd()}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("both Process and Pidfd: %v, want EINVAL", err)
	}
	if _, err := Query(&QueryOptions{Target: Target{Pidfd: 1 << 20}}); !errors.Is(err, syscall.EBADF) {
		t.Errorf("bad pidfd: %v, want EBADF", err)
	}
	// Without the inject backend another process's default cannot be set.
	_, err = SetDefault(PolicyNever, &DefaultOptions{Target: Target{Pidfd: pfd.Fd()}})
	if !errors.As(err, &te) || te.Errno != syscall.EOPNOTSUPP || te.Op != "thp_set_default" {
		t.Errorf("SetDefault(child, auto) = %v, want EOPNOTSUPP", err)
	}
	if os.Geteuid() == 0 {
		remoteCollapse(t, c, pfd)
	} else {
		// Another process's memory needs CAP_SYS_NICE: refused (EPERM in
		// the call and its report), and nothing collapsed.
		res, err := ApplyRanges(AdviceCollapse, []Range{{c.addr, hugeSize}}, &ApplyOptions{Target: Target{Pidfd: pfd.Fd()}})
		if !errors.Is(err, syscall.EPERM) || res.Reports[0].Errno() != syscall.EPERM {
			t.Errorf("remote COLLAPSE as uid %d = %+v, %v, want EPERM", os.Geteuid(), res, err)
		}
		if _, err := Collapse(&CollapseOptions{Target: Target{Process: c.cmd.Process}}); !errors.Is(err, syscall.EPERM) {
			t.Errorf("Collapse(child) as uid %d = %v, want EPERM", os.Geteuid(), err)
		}
		if e := smapsAt(t, pid, c.addr); e.anonHugePages != 0 {
			t.Errorf("child AnonHugePages %d after refused collapses", e.anonHugePages)
		}
	}
}

// remoteCollapse collapses the child's mapping one extent through a raw
// pidfd, then the rest through *os.Process (root: CAP_SYS_NICE).
func remoteCollapse(t *testing.T, c *child, pfd *Pidfd) {
	pid := c.cmd.Process.Pid
	res, err := ApplyRanges(AdviceCollapse, []Range{{c.addr, hugeSize}}, &ApplyOptions{Target: Target{Pidfd: pfd.Fd()}})
	if err != nil || res.Reports[0].BytesAdvised != hugeSize {
		t.Fatalf("remote COLLAPSE = %+v, %v", res, err)
	}
	if e := smapsAt(t, pid, c.addr); e.anonHugePages != hugeSize {
		t.Errorf("child AnonHugePages %d after one extent, want %d", e.anonHugePages, hugeSize)
	}
	col, err := Collapse(&CollapseOptions{Target: Target{Process: c.cmd.Process}, Failures: make([]Report, 0, 4)})
	if err != nil || col.ExtentsCollapsed < 1 || col.AnonHugeAfter < 2*hugeSize {
		t.Fatalf("Collapse(child) = %+v, %v", col, err)
	}
	if want := min64(col.FailuresNeeded, 4); uint64(len(col.Failures)) != want || col.FailuresNeeded != col.ExtentsFailed {
		t.Errorf("Collapse(child): %d failures, %d needed, %d extents failed", len(col.Failures), col.FailuresNeeded, col.ExtentsFailed)
	}
	if e := smapsAt(t, pid, c.addr); e.anonHugePages != 2*hugeSize {
		t.Errorf("child AnonHugePages %d after Collapse, want %d", e.anonHugePages, 2*hugeSize)
	}
	all, err := ApplyAll(AdviceCollapse, &ApplyAllOptions{Target: Target{Pidfd: pfd.Fd()}, Flags: SkipErrors})
	if all.MappingsSeen == 0 {
		t.Errorf("ApplyAll(child) = %+v, %v", all, err)
	}
	// A default policy for another process: the inject backend, which the caller forces.
	set, err := SetDefault(PolicyNever, &DefaultOptions{Target: Target{Pidfd: pfd.Fd()}, Backend: BackendInject})
	if err != nil || set.BackendUsed != BackendInject {
		t.Fatalf("SetDefault(child, never, inject) = %+v, %v", set, err)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if !strings.Contains(string(status), "THP_enabled:\t0") {
		t.Errorf("child's THP_enabled not 0 after SetDefault(never)")
	}
	if got, err := GetDefault(&DefaultOptions{Target: Target{Process: c.cmd.Process}}); err != nil || got.Policy != PolicyNever {
		t.Errorf("GetDefault(child) after never = %+v, %v", got, err)
	}
}

// Each error carries the detail of its own call, however goroutines move
// between threads: the detail is per thread, and a goroutine whose cgo
// call outlasts sysmon's patience (the long validations below) resumes on
// whichever thread is free.  A binding that read the detail in a second
// cgo call fails here.
func TestGoroutinesDetail(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	b := mapAligned(t, hugeSize)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	long := make([]Range, 20000)
	for i := range long {
		long[i] = Range{addr, 4096}
	}
	long[len(long)-1].Addr++
	calls := []struct {
		advice Advice
		ranges []Range
	}{
		{AdviceHuge, []Range{{addr + 1, 4096}}},
		{Advice(4), []Range{{addr, 4096}}},
		{AdviceNoHuge, []Range{{addr, 4096}}},
		{AdviceNoHuge, long},
	}
	want := make([]string, len(calls))
	for i, c := range calls {
		_, err := ApplyRanges(c.advice, c.ranges, nil)
		if err != nil {
			want[i] = err.(*Error).Detail
		}
	}
	if want[0] == "" || want[1] == "" || want[3] == "" || want[0] == want[1] || want[1] == want[3] ||
		want[0] == want[3] || want[2] != "" {
		t.Fatalf("details %q: want three different ones and a success", want)
	}
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				k := (g + i) % len(calls)
				_, err := ApplyRanges(calls[k].advice, calls[k].ranges, nil)
				got := ""
				if err != nil {
					got = err.(*Error).Detail
				}
				if got != want[k] {
					errs <- fmt.Sprintf("goroutine %d call %d: detail %q, want %q", g, i, got, want[k])
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestNames(t *testing.T) {
	if v := Version(); v != os.Getenv("THP_VERSION") && os.Getenv("THP_VERSION") != "" || strings.Count(v, ".") != 2 {
		t.Errorf("Version %q, meson says %q", v, os.Getenv("THP_VERSION"))
	}
	if BackendMadvise.String() != "madvise" || BackendProcessMadvise.String() != "process_madvise" ||
		Backend(99).String() != "unknown" {
		t.Errorf("backend names %q %q %q", BackendMadvise, BackendProcessMadvise, Backend(99))
	}
	if PolicyNoHuge.String() != "nohuge" || Policy(99).String() != "unknown" {
		t.Errorf("policy names")
	}
	if Strerror(-int(syscall.EINVAL)) != Strerror(int(syscall.EINVAL)) || Strerror(int(syscall.ENOMEM)) == "" {
		t.Errorf("Strerror")
	}
	r := Report{Addr: 0x200000, Len: 4096, Error: int32(syscall.ENOMEM), FailAddr: 0x200000, Attempted: 1}
	if s := r.String(); !strings.Contains(s, "200000") || strings.Contains(s, "\n") {
		t.Errorf("Report.String() = %q", s)
	}
}

func min64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}
