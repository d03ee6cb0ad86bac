// SPDX-License-Identifier: LGPL-2.1-or-later

// Test helpers: aligned mappings, what /proc/PID/smaps shows, a child process as target.
package thp

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

const hugeSize = 2 << 20

// noSkip: a test that cannot run fails instead of skipping, under CI=true
// and where vm_init runs the test binary in a guest (THP_TEST_NO_SKIP=1:
// a skipped test would still exit 0 there).
var noSkip = os.Getenv("CI") == "true" || os.Getenv("THP_TEST_NO_SKIP") == "1"

// skipf skips, or fails when nothing may skip (noSkip).
func skipf(t *testing.T, f string, a ...interface{}) {
	t.Helper()
	if noSkip {
		t.Fatalf("cannot run (no skip under CI=true or THP_TEST_NO_SKIP=1): "+f, a...)
	}
	t.Skipf(f, a...)
}

// mapAligned maps n bytes of private anonymous memory at a 2 MiB-aligned
// address, unmapped (all of it, holes included) when the test ends.
func mapAligned(t testing.TB, n int) []byte {
	t.Helper()
	b := mapAlignedKeep(t, n)
	t.Cleanup(func() { mustMunmap(t, uintptr(unsafe.Pointer(&b[0])), uintptr(n)) })
	return b
}

// arenaHint: 16 TiB, far below the libraries, under which the kernel puts
// each mmap(NULL) (top-down, in the highest gap that fits), and far above
// Go's heap (0xc000000000 upwards).  A hole a test punches in a mapping
// here is not where the runtime's next mmap(NULL) lands: a mapping of the
// runtime's in a hole is lost when the test unmaps the whole range, which
// crashed the Go tests in Debian 12's 6.1 guest (SIGSEGV in the runtime's
// spanSet).
const arenaHint = 16 << 40

// mapAlignedKeep is mapAligned without the cleanup: at arenaHint when the
// kernel grants it, else anywhere, 2 MiB-aligned.
func mapAlignedKeep(t testing.TB, n int) []byte {
	t.Helper()
	const prot, flags = syscall.PROT_READ | syscall.PROT_WRITE, syscall.MAP_PRIVATE | syscall.MAP_ANONYMOUS
	addr, _, e := syscall.Syscall6(syscall.SYS_MMAP, arenaHint, uintptr(n), prot, flags, ^uintptr(0), 0)
	if e != 0 {
		t.Fatalf("mmap: %v", e)
	}
	if addr%hugeSize == 0 {
		return unsafe.Slice(*(**byte)(unsafe.Pointer(&addr)), n)
	}
	mustMunmap(t, addr, uintptr(n))
	raw, err := syscall.Mmap(-1, 0, n+hugeSize, prot, flags)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	addr = uintptr(unsafe.Pointer(&raw[0]))
	off := int((hugeSize - addr%hugeSize) % hugeSize)
	// Unmap the head and tail so that the mapping is exactly the aligned part.
	if off > 0 {
		mustMunmap(t, addr, uintptr(off))
	}
	if tail := len(raw) - off - n; tail > 0 {
		mustMunmap(t, addr+uintptr(off+n), uintptr(tail))
	}
	return raw[off : off+n : off+n]
}

func mustMunmap(t testing.TB, addr, n uintptr) {
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, addr, n, 0); e != 0 {
		t.Fatalf("munmap: %v", e)
	}
}

func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

// smapsEntry is what smaps says of the mapping that starts at an address.
type smapsEntry struct {
	found         bool
	start, end    uint64
	vmFlags       []string
	anonHugePages uint64 // bytes
}

func (e smapsEntry) hasFlag(f string) bool {
	for _, x := range e.vmFlags {
		if x == f {
			return true
		}
	}
	return false
}

// smapsAt reads /proc/PID/smaps (pid 0: self) for the mapping containing addr.
func smapsAt(t testing.TB, pid int, addr uint64) smapsEntry {
	t.Helper()
	path := "/proc/self/smaps"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/smaps", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer f.Close()
	var e smapsEntry
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if r := strings.SplitN(fields[0], "-", 2); len(r) == 2 && !strings.HasSuffix(fields[0], ":") {
			s, err1 := strconv.ParseUint(r[0], 16, 64)
			en, err2 := strconv.ParseUint(r[1], 16, 64)
			if err1 == nil && err2 == nil {
				if in {
					break
				}
				in = s <= addr && addr < en
				if in {
					e = smapsEntry{found: true, start: s, end: en}
				}
				continue
			}
		}
		if !in {
			continue
		}
		switch fields[0] {
		case "AnonHugePages:":
			v, _ := strconv.ParseUint(fields[1], 10, 64)
			e.anonHugePages = v * 1024
		case "VmFlags:":
			e.vmFlags = fields[1:]
		}
	}
	return e
}

// requireMadviseMode skips (fails under CI) unless the global THP mode is
// madvise, which the assertions on hg/nh and AnonHugePages need, as the C
// tests' require_madvise_mode().
func requireMadviseMode(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err == nil && strings.Contains(string(b), "[madvise]") {
		return
	}
	msg := fmt.Sprintf("global THP mode is not madvise (%q, %v)", strings.TrimSpace(string(b)), err)
	if os.Getenv("THP_TEST_ANY_MODE") == "1" {
		t.Fatal(msg)
	}
	skipf(t, "%s", msg)
}

// child is a copy of the test binary running a helper (see TestMain).
type child struct {
	cmd  *exec.Cmd
	in   *os.File
	out  *bufio.Reader
	addr uint64 // Its aligned, touched 4 MiB mapping.
}

// startChild runs helper "target": a process with a populated 4 MiB
// mapping at a 2 MiB-aligned address, waiting for its stdin to close.
func startChild(t *testing.T) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "THPGO_HELPER=target")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if _, err := fmt.Sscanf(line, "addr %x", &c.addr); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}
	return c
}

// helperTarget is the child's side of startChild.
func helperTarget() int {
	var tb fakeTB
	b := mapAligned(&tb, 2*hugeSize)
	touch(b)
	fmt.Printf("addr %x\n", uintptr(unsafe.Pointer(&b[0])))
	var buf [1]byte
	os.Stdin.Read(buf[:])
	return 0
}

// fakeTB lets the helpers run outside a test (in a child process).
type fakeTB struct{ testing.TB }

func (fakeTB) Helper()          {}
func (fakeTB) Cleanup(f func()) {}
func (fakeTB) Fatalf(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
	os.Exit(3)
}

// helperCmd is this test binary run as helper name (see TestMain).  Its
// stdin is an empty reader, not /dev/null, which a VM guest's initramfs
// lacks.
func helperCmd(name string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "THPGO_HELPER="+name)
	cmd.Stdin = strings.NewReader("")
	return cmd
}
