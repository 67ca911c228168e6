package hfhub

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// TotalMemory is the machine's memory in bytes, read from /proc/meminfo
// (MemTotal). Elsewhere (no /proc) it fails, and the caller leaves
// memory out of Choose's default (ram 0: no file is ruled out for its
// size).
func TotalMemory() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("the machine's memory: %w", err)
	}
	defer f.Close()
	return memTotal(f.Name(), bufio.NewScanner(f))
}

// memTotal finds "MemTotal: N kB" in meminfo's lines.
func memTotal(name string, s *bufio.Scanner) (uint64, error) {
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseUint(strings.TrimSpace(kb), 10, 64)
		if !ok || err != nil || n > 1<<44 {
			return 0, fmt.Errorf("%s: MemTotal %q is not a size in kB", name, strings.TrimSpace(rest))
		}
		return n << 10, nil
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return 0, fmt.Errorf("%s: no MemTotal line", name)
}
