// SPDX-License-Identifier: LGPL-2.1-or-later

// The shared case table (tests/model/cases.txt) through the Go binding.
package thp

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

const casePage = 4096

type caseSpan struct {
	first, n uint64
	what     string
}

type caseReport struct {
	pos, len, advised, unmapped, fail uint64
	hasFail                           bool
	err                               syscall.Errno
	attempted                         uint32
}

type tableCase struct {
	name        string
	line        int
	maps, flags []caseSpan
	advice      Advice
	flags_      Flags
	backend     Backend
	ranges      []Range // Addr relative to the arena
	ret         int
	used        string
	reports     []caseReport
}

var caseErrnos = map[string]syscall.Errno{"EINVAL": syscall.EINVAL, "ENOMEM": syscall.ENOMEM,
	"E2BIG": syscall.E2BIG, "EBADF": syscall.EBADF, "ESRCH": syscall.ESRCH,
	"EOPNOTSUPP": syscall.EOPNOTSUPP, "EPERM": syscall.EPERM, "ENOENT": syscall.ENOENT}

func casesPath() string {
	if p := os.Getenv("THP_CASES"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "tests", "model", "cases.txt")
}

func parseCases(t *testing.T) []tableCase {
	f, err := os.Open(casesPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []tableCase
	var c *tableCase
	line := 0
	bad := func(what string) { t.Fatalf("cases.txt:%d: %s", line, what) }
	num := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			bad("bad number " + s)
		}
		return v
	}
	pos := func(s string) uint64 {
		p, b, plus := strings.Cut(s, "+")
		v := num(p) * casePage
		if plus {
			v += num(b)
		}
		return v
	}
	errno := func(s string) syscall.Errno {
		if s == "0" {
			return 0
		}
		e, ok := caseErrnos[s]
		if !ok {
			bad("unknown errno " + s)
		}
		return e
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		tok := strings.Fields(text)
		switch {
		case len(tok) == 0:
		case tok[0] == "case" && len(tok) == 2 && c == nil:
			c = &tableCase{name: tok[1], line: line}
		case c == nil:
			bad("directive outside a case")
		case tok[0] == "end" && len(tok) == 1:
			cases = append(cases, *c)
			c = nil
		case tok[0] == "map" && (len(tok) == 3 || len(tok) == 4):
			s := caseSpan{first: num(tok[1]), n: num(tok[2])}
			if len(tok) == 4 {
				s.what = tok[3]
			}
			c.maps = append(c.maps, s)
		case tok[0] == "flags" && len(tok) == 4:
			c.flags = append(c.flags, caseSpan{num(tok[1]), num(tok[2]), tok[3]})
		case tok[0] == "apply" && len(tok) == 4:
			switch tok[1] {
			case "huge":
				c.advice = AdviceHuge
			case "nohuge":
				c.advice = AdviceNoHuge
			default:
				c.advice = Advice(num(tok[1]))
			}
			switch tok[2] {
			case "skip":
				c.flags_ = SkipErrors
			case "gaps":
				c.flags_ = NoErrorOnUnmapped
			case "skip+gaps":
				c.flags_ = SkipErrors | NoErrorOnUnmapped
			default:
				c.flags_ = Flags(num(tok[2]))
			}
			switch tok[3] {
			case "auto":
				c.backend = BackendAuto
			case "madvise":
				c.backend = BackendMadvise
			default:
				c.backend = Backend(num(tok[3]))
			}
		case tok[0] == "range" && len(tok) == 3:
			c.ranges = append(c.ranges, Range{pos(tok[1]), pos(tok[2])})
		case tok[0] == "return" && len(tok) == 2:
			if strings.HasPrefix(tok[1], "-") {
				c.ret = -int(errno(tok[1][1:]))
			} else {
				c.ret = int(num(tok[1]))
			}
		case tok[0] == "used" && len(tok) == 2:
			c.used = tok[1]
		case tok[0] == "report" && len(tok) == 8:
			r := caseReport{pos: pos(tok[1]), len: pos(tok[2]), advised: pos(tok[3]),
				unmapped: pos(tok[4]), hasFail: tok[5] != "-", err: errno(tok[6]),
				attempted: uint32(num(tok[7]))}
			if r.hasFail {
				r.fail = pos(tok[5])
			}
			c.reports = append(c.reports, r)
		default:
			bad("bad directive")
		}
	}
	if c != nil {
		bad("case without end")
	}
	return cases
}

func TestCaseTable(t *testing.T) {
	cases := parseCases(t)
	if len(cases) == 0 {
		t.Fatal("no cases in " + casesPath())
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) { runTableCase(t, &c) })
	}
}

func runTableCase(t *testing.T, c *tableCase) {
	where := fmt.Sprintf("cases.txt:%d", c.line)
	arena := mapAlignedKeep(t, 1024*casePage)
	base := uint64(uintptr(unsafe.Pointer(&arena[0])))
	mapped := make([]string, 1024) // "" hole, else "-", "hg" or "nh"
	for _, m := range c.maps {
		for p := m.first; p < m.first+m.n; p++ {
			mapped[p] = "-"
			if m.what != "" {
				mapped[p] = m.what
			}
		}
	}
	// The end of the case unmaps the arena's pages but its holes: the
	// runtime may have mapped memory of its own there since.
	t.Cleanup(func() {
		for p, what := range mapped {
			if what != "" {
				mustMunmap(t, uintptr(unsafe.Pointer(&arena[p*casePage])), casePage)
			}
		}
	})
	for p, what := range mapped {
		page := arena[p*casePage : (p+1)*casePage]
		var err error
		switch what {
		case "":
			mustMunmap(t, uintptr(unsafe.Pointer(&page[0])), casePage)
		case "hg":
			err = syscall.Madvise(page, 14)
		case "nh":
			err = syscall.Madvise(page, 15)
		}
		if err != nil {
			t.Fatalf("%s: page %d: %v", where, p, err)
		}
	}
	ranges := make([]Range, len(c.ranges))
	for i, r := range c.ranges {
		ranges[i] = Range{base + r.Addr, r.Len}
	}
	res, err := ApplyRanges(c.advice, ranges, &ApplyOptions{Flags: c.flags_, Backend: c.backend})
	ret := res.Advised
	if err != nil {
		te, ok := err.(*Error)
		if !ok {
			t.Fatalf("%s: error %v is not a *thp.Error", where, err)
		}
		ret = -int(te.Errno)
	}
	if ret != c.ret {
		t.Errorf("%s: returned %d (%v), table %d", where, ret, err, c.ret)
	}
	used := res.BackendUsed
	switch {
	case c.used == "none" && used != 0, c.used == "any" && used == 0,
		c.used != "none" && c.used != "any" && used.String() != c.used:
		t.Errorf("%s: backend_used %v, table %s", where, used, c.used)
	}
	if len(res.Reports) != len(c.reports) {
		t.Fatalf("%s: %d reports, table %d", where, len(res.Reports), len(c.reports))
	}
	for i, w := range c.reports {
		r := res.Reports[i]
		fail := uint64(0)
		if w.hasFail {
			fail = base + w.fail
		}
		if r.Addr != base+w.pos || r.Len != w.len || r.BytesAdvised != w.advised ||
			r.BytesUnmapped != w.unmapped || r.FailAddr != fail || r.Errno() != w.err ||
			r.Attempted != w.attempted || r.Backend != used {
			t.Errorf("%s: report %d: %+v (addr +%#x), table %+v", where, i, r, r.Addr-base, w)
		}
	}
	for _, s := range c.flags {
		for p := s.first; p < s.first+s.n; p++ {
			e := smapsAt(t, 0, base+p*casePage)
			got := "-"
			switch {
			case !e.found:
				got = "unmapped"
			case e.hasFlag("hg") && e.hasFlag("nh"):
				got = "hg+nh"
			case e.hasFlag("hg"):
				got = "hg"
			case e.hasFlag("nh"):
				got = "nh"
			}
			if got != s.what {
				t.Errorf("%s: page %d: smaps %s, table %s", where, p, got, s.what)
				break
			}
		}
	}
}
