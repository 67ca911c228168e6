// Package natstest runs a real nats-server (Debian's nats-server package)
// for tests: on a free loopback port, stopped when the test ends, and
// stoppable and restartable on the same port to test a bus outage.
package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Server is a nats-server process a test owns.
type Server struct {
	t    testing.TB
	bin  string
	port int
	args []string // nats-server's own flags beyond the address
	cmd  *exec.Cmd
}

// Binary finds nats-server: $STEPTHROUGH_NATS_SERVER, else on PATH or in
// /usr/sbin (where Debian puts it). It skips the test when there is none,
// saying so, and fails instead under REQUIRE_NATS=1 (CI).
func Binary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("STEPTHROUGH_NATS_SERVER"), "nats-server", "/usr/sbin/nats-server"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "no nats-server: install Debian's nats-server package (.ci/run does) or set STEPTHROUGH_NATS_SERVER"
	if os.Getenv("REQUIRE_NATS") == "1" {
		t.Fatal("REQUIRE_NATS=1: " + msg)
	}
	t.Skip(msg)
	return ""
}

// Start runs a nats-server on a free loopback port until the test ends,
// with args added to its command line (--user U --pass P, --auth TOKEN, or
// -c FILE for an authorization block).
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), port: freePort(t), args: args}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's address (without credentials).
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Start (re)starts the process on its port and waits until it accepts
// connections.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	s.cmd = exec.Command(s.bin, append([]string{"-a", "127.0.0.1", "-p", fmt.Sprint(s.port)}, s.args...)...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("nats-server did not listen on port %d within 10 s: %v", s.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the process (a bus outage); Start brings it back.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
