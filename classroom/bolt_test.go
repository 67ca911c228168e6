package classroom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// storeFile makes a store with rooms (200 of them, each with a long
// prompt, span many pages, and the rooms bucket gets branch pages) and
// answers, closes it, and returns its bytes, its page size, and the pages
// in use of each type ("leaf", "branch"), from the middle of the file on.
func storeFile(t testing.TB, rooms int) ([]byte, int, map[string]int) {
	t.Helper()
	dir := t.TempDir()
	st, err := OpenBolt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := goodState(t)
	state.Run.Prompt = strings.Repeat("x", 1500)
	now := time.Now()
	for i := range rooms {
		code := fmt.Sprintf("R%05d", i)
		if _, err := st.SaveRoom(t.Context(), Record{Code: code, SecretHash: "h", Created: now, Expires: now.Add(time.Hour)}, state); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveAnswer(t.Context(), code, 1, "s1", " Paris"); err != nil {
			t.Fatal(err)
		}
	}
	ps := st.db.Info().PageSize
	pages := map[string]int{}
	st.db.View(func(tx *bolt.Tx) error {
		n := int(tx.Size()) / ps
		for id := n / 2; id < n; id++ {
			if info, err := tx.Page(id); err == nil && info != nil && pages[info.Type] == 0 {
				pages[info.Type] = id
			}
		}
		for id := 2; id < n/2 && pages["branch"] == 0; id++ {
			if info, err := tx.Page(id); err == nil && info != nil && info.Type == "branch" {
				pages["branch"] = id
			}
		}
		return nil
	})
	st.Close()
	b, err := os.ReadFile(filepath.Join(dir, BoltFile))
	if err != nil {
		t.Fatal(err)
	}
	return b, ps, pages
}

// resum rewrites both meta pages' checksums (a file made to pass bbolt's
// header check), after edit changes each meta (the 64 bytes after the
// page header).
func resum(b []byte, ps int, edit func(meta []byte)) {
	for _, off := range []int{boltHeader, ps + boltHeader} {
		m := b[off : off+boltMetaSize]
		edit(m)
		h := fnv.New64a()
		h.Write(m[:56])
		binary.NativeEndian.PutUint64(m[56:], h.Sum64())
	}
}

// Files that are damaged, hostile or not classroom stores at all are
// refused in one line naming the file, with a copy kept; none crashes the
// server (a read outside bbolt's mapping would, recover() or not).
func TestBoltRefusesDamagedFiles(t *testing.T) {
	good, ps, pages := storeFile(t, 200)
	leaf, branch := pages["leaf"], pages["branch"]
	if leaf == 0 || branch == 0 {
		t.Fatalf("pages in use: %v; want a leaf and a branch", pages)
	}
	put32 := func(b []byte, off int, v uint32) { binary.NativeEndian.PutUint32(b[off:], v) }
	tests := []struct {
		name string
		file func() []byte
		want string
	}{
		{"sqlite", func() []byte { return append([]byte(sqliteHeader), make([]byte, 8000)...) }, "an SQLite database, not a classroom store"},
		{"text", func() []byte { return []byte(strings.Repeat("not a database\n", 1000)) }, "no valid bbolt header"},
		{"short", func() []byte { return []byte("x") }, "no valid bbolt header"},
		{"random", func() []byte {
			b := make([]byte, 64<<10)
			rand.NewChaCha8([32]byte{1}).Read(b)
			return b
		}, "no valid bbolt header"},
		{"truncated", func() []byte { return bytes.Clone(good[:len(good)/2]) }, "pages of"},
		{"headers zeroed", func() []byte {
			b := bytes.Clone(good)
			clear(b[:2*ps])
			return b
		}, "no valid bbolt header"},
		{"a page flipped", func() []byte {
			b := bytes.Clone(good)
			for i := leaf * ps; i < (leaf+1)*ps; i++ {
				b[i] ^= 0x5a
			}
			return b
		}, "header calls it page"},
		{"more pages than the file", func() []byte {
			b := bytes.Clone(good)
			resum(b, ps, func(m []byte) { binary.NativeEndian.PutUint64(m[40:], 1<<40) })
			return b
		}, "its header counts"},
		{"root outside", func() []byte {
			b := bytes.Clone(good)
			resum(b, ps, func(m []byte) { binary.NativeEndian.PutUint64(m[16:], 1<<40) })
			return b
		}, "root page"},
		{"freelist outside", func() []byte {
			b := bytes.Clone(good)
			resum(b, ps, func(m []byte) { binary.NativeEndian.PutUint64(m[32:], 1<<40) })
			return b
		}, "freelist page"},
		{"a key far outside its page", func() []byte {
			b := bytes.Clone(good)
			put32(b, leaf*ps+boltHeader+4, 0x7fffffff) // element 0's pos
			return b
		}, "runs past its end"},
		{"a value far outside its page", func() []byte {
			b := bytes.Clone(good)
			put32(b, leaf*ps+boltHeader+12, 0xffffffff) // element 0's vsize
			return b
		}, "runs past its end"},
		{"more elements than the page holds", func() []byte {
			b := bytes.Clone(good)
			binary.NativeEndian.PutUint16(b[leaf*ps+10:], 0xfffe)
			return b
		}, "more than it holds"},
		{"a child outside the file", func() []byte {
			b := bytes.Clone(good)
			binary.NativeEndian.PutUint64(b[branch*ps+boltHeader+8:], 1<<50) // element 0's page
			return b
		}, "not among its"},
		{"a child that is its parent", func() []byte {
			b := bytes.Clone(good)
			binary.NativeEndian.PutUint64(b[branch*ps+boltHeader+8:], uint64(branch))
			return b
		}, "reached twice"},
		{"keys out of order", func() []byte { // in bounds: bbolt's own check finds it
			b := bytes.Clone(good)
			el := leaf*ps + boltHeader
			pos := int(binary.NativeEndian.Uint32(b[el+4:]))
			b[el+pos] = 0xff // the first key now sorts after the second
			return b
		}, "damaged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, BoltFile)
			b := tt.file()
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := OpenBolt(dir, nil)
			if err == nil {
				st.Close()
				t.Fatal("opened")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, path+" is damaged") || strings.Contains(msg, "\n") {
				t.Errorf("got %q, want one line naming %s, saying %q", msg, path, tt.want)
			}
			copies, _ := filepath.Glob(path + ".damaged-*")
			if len(copies) != 1 {
				t.Fatalf("copies %v", copies)
			}
			if kept, _ := os.ReadFile(copies[0]); !bytes.Equal(kept, b) {
				t.Errorf("the copy differs from the damaged file")
			}
		})
	}
}

// A second process on the same file is told it is in use, after a
// bounded wait, and the file is not taken for damaged.
func TestBoltInUse(t *testing.T) {
	defer func(w time.Duration) { storeLockWait = w }(storeLockWait)
	storeLockWait = 200 * time.Millisecond
	dir := t.TempDir()
	st, err := OpenBolt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = OpenBolt(dir, nil) // flock(2) locks conflict within a process too
	if err == nil || !strings.Contains(err.Error(), "in use by another process") || time.Since(start) > 5*time.Second {
		t.Fatalf("a held store: %v after %v", err, time.Since(start))
	}
	if copies, _ := filepath.Glob(filepath.Join(dir, "*.damaged-*")); len(copies) > 0 {
		t.Errorf("a held store was copied as damaged: %v", copies)
	}
	st.Close()
	st, err = OpenBolt(dir, nil)
	if err != nil {
		t.Fatalf("once let go: %v", err)
	}
	st.Close()
}

// A bbolt file that some other program made is not taken over.
func TestBoltRefusesOtherBoltFiles(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, BoltFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("widgets"))
		return err
	})
	db.Close()
	if _, err := OpenBolt(dir, nil); err == nil || !strings.Contains(err.Error(), `not a classroom store: it holds "widgets"`) {
		t.Errorf("another program's bbolt file: %v", err)
	}
}

// The SQLite rooms.db of an earlier Stepthrough is left as it is: the log
// says so, naming both files, and rooms start in the new one.
func TestBoltLeavesOldSQLite(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, oldSQLiteFile)
	oldBytes := append([]byte(sqliteHeader), bytes.Repeat([]byte{7}, 4000)...)
	if err := os.WriteFile(old, oldBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	st, err := OpenBolt(dir, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := log.String(); !strings.Contains(got, "does not read it") || !strings.Contains(got, old) || !strings.Contains(got, filepath.Join(dir, BoltFile)) {
		t.Errorf("the log says %q", got)
	}
	state, _ := goodState(t)
	now := time.Now()
	if _, err := st.SaveRoom(t.Context(), Record{Code: "NEWNEW", Created: now, Expires: now.Add(time.Hour)}, state); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(old); err != nil || !bytes.Equal(b, oldBytes) {
		t.Errorf("the old store was changed (%v)", err)
	}
}

// FuzzOpenBolt: no file, however damaged, crashes the store: it opens or
// is refused, and what opens answers every call with data or an error.
func FuzzOpenBolt(f *testing.F) {
	good, ps, _ := storeFile(f, 3)
	f.Add(good)
	f.Add(good[:len(good)/2])
	for _, off := range []int{2 * ps, 3 * ps, 4 * ps} {
		b := bytes.Clone(good)
		for i := off + boltHeader; i < off+boltHeader+64; i++ {
			b[i] ^= 0xa5
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, BoltFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := OpenBolt(dir, nil)
		if err != nil {
			return
		}
		defer st.Close()
		ctx := t.Context()
		now := time.Now()
		st.LoadRoom(ctx, "R00001")
		st.CountRooms(ctx, now, "")
		st.Marks(ctx, []string{"R00000", "R00002"})
		state, _ := goodState(t)
		st.SaveRoom(ctx, Record{Code: "R00000", Version: 1, Expires: now}, state)
		st.SaveAnswer(ctx, "R00002", 1, "s2", "x")
		st.DeleteExpired(ctx, now.Add(2*time.Hour))
	})
}
