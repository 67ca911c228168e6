// Package pgtest gives tests a throw-away PostgreSQL database on the
// server STEPTHROUGH_POSTGRES names (tools/services.sh starts Debian's
// postgresql and the test task sets it).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL creates a throw-away database on the PostgreSQL server that
// STEPTHROUGH_POSTGRES names (tools/services.sh starts one and the test
// task sets it), drops it when the test ends, and returns its address. It
// skips the test when there is none, saying so, and fails instead under
// REQUIRE_POSTGRES=1 (CI).
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("STEPTHROUGH_POSTGRES")
	if base == "" {
		msg := "no PostgreSQL: set STEPTHROUGH_POSTGRES=postgres://… (go tool task test starts Debian's postgresql through tools/services.sh when it is installed)"
		if os.Getenv("REQUIRE_POSTGRES") == "1" {
			t.Fatal("REQUIRE_POSTGRES=1: " + msg)
		}
		t.Skip(msg)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("PostgreSQL (STEPTHROUGH_POSTGRES): %v", err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "stepthrough_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create a test database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, _ := url.Parse(base)
	u.Path = "/" + name
	return u.String()
}
