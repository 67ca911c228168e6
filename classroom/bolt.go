package classroom

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Bolt is the Store in one bbolt file, BoltFile under the data directory:
// a restart loses no room, no room state and no poll answer. Every write
// is a transaction synced to disk before it returns.
//
// # Layout
//
// The file holds three buckets:
//
//   - "stepthrough": "schema", the layout's version (8 bytes, big-endian);
//   - "rooms": a bucket per room code, with "secret_hash", "creator",
//     "state" (the state's JSON), "state_sum" (its SHA-256), "created" and
//     "expires" (Unix seconds, 8 bytes, big-endian) and "version" (8
//     bytes, big-endian);
//   - "answers": a bucket per room code, whose keys are the lesson step (8
//     bytes, big-endian) followed by the student's id, and whose values
//     are the answers.
//
// # Security
//
// The file is read as hostile before bbolt maps it (checkBoltFile): bbolt
// trusts the page numbers and offsets inside it, and a damaged file would
// make it read outside its mapping, which no recover() catches. Every page
// the store can reach is checked to lie inside the file, and every key
// and value inside its page; bbolt's own consistency check runs next. A
// file that fails either is refused, naming its path, with a copy kept.
// Panics inside bbolt after that (a file changed while open) are turned
// into errors.
type Bolt struct {
	db   *bolt.DB
	path string
}

// BoltFile is the classroom store's file name in the data directory.
const BoltFile = "rooms.bolt"

// oldSQLiteFile is where Stepthrough kept rooms before BoltFile, in SQLite.
const oldSQLiteFile = "rooms.db"

// boltSchema is the store's layout, kept under stepthrough/schema. A
// later layout adds a migration from the one before and raises it.
const boltSchema = 1

// storeLockWait bounds waiting for another process to let go of the file.
var storeLockWait = 2 * time.Second

var (
	bucketMeta    = []byte("stepthrough")
	bucketRooms   = []byte("rooms")
	bucketAnswers = []byte("answers")
	keySchema     = []byte("schema")
	keySecret     = []byte("secret_hash")
	keyCreator    = []byte("creator")
	keyState      = []byte("state")
	keyStateSum   = []byte("state_sum")
	keyCreated    = []byte("created")
	keyExpires    = []byte("expires")
	keyVersion    = []byte("version")
)

// errInUse is the file lock's answer while another process holds it.
var errInUse = errors.New("in use")

// OpenBolt opens (creating if needed) dir/BoltFile. A damaged file, or one
// that is not a classroom store, is refused in one line naming it, after a
// copy of it is kept beside it; a file made by a newer server is refused;
// a file another process holds is refused after storeLockWait; an empty
// (0-byte) file starts a fresh store, and log says so. An SQLite rooms.db
// left by an earlier Stepthrough is not read, nor touched: log says so on
// every start while it is there.
func OpenBolt(dir string, log *slog.Logger) (*Bolt, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, BoltFile)
	if log != nil {
		warnOldSQLite(filepath.Join(dir, oldSQLiteFile), path, log)
		if st, err := os.Stat(path); err == nil && st.Size() == 0 {
			log.Warn("the classroom store is an empty file: starting a fresh store", "path", path)
		}
	}
	db, err := openChecked(path)
	var bad *fileError
	switch {
	case errors.Is(err, errInUse), errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("the classroom store %s is in use by another process (another Stepthrough with the same --data-dir?): stop it, or give this one another --data-dir", path)
	case errors.As(err, &bad):
		return nil, damaged(path, bad.Error())
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	st := &Bolt{db: db, path: path}
	if err := st.prepare(); err != nil {
		db.Close()
		if errors.As(err, &bad) {
			return nil, damaged(path, bad.Error())
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// warnOldSQLite says, when old is an SQLite database (the store of an
// earlier Stepthrough), that it is left as it is.
func warnOldSQLite(old, path string, log *slog.Logger) {
	f, err := os.Open(old)
	if err != nil {
		return
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != sqliteHeader {
		return
	}
	log.Warn("an SQLite classroom store from an earlier Stepthrough is in the data directory; this one keeps rooms in "+BoltFile+
		" and does not read it: its rooms are left there untouched, and new rooms start in the new file (rooms last hours: delete the old file once none is needed)",
		"old", old, "path", path)
}

// sqliteHeader begins every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// openChecked opens the bbolt file at path, which is locked and checked
// (checkBoltFile) before bbolt reads it, then runs bbolt's own check. A
// *fileError says what is damaged.
func openChecked(path string) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			}
			db, err = nil, &fileError{Off: -1, Msg: fmt.Sprint("reading it failed: ", r)}
		}
	}()
	open := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		if err := lockFile(f, storeLockWait); err != nil {
			f.Close()
			return nil, err
		}
		if err := checkBoltFile(f); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil // bbolt locks it again: the same lock, held already
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: storeLockWait, OpenFile: open})
	if err != nil {
		return nil, err
	}
	var problems []string
	err = db.View(func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			if len(problems) < 3 {
				problems = append(problems, e.Error())
			}
		}
		return nil
	})
	if err == nil && len(problems) > 0 {
		err = &fileError{Off: -1, Msg: strings.Join(problems, "; ")}
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// prepare creates the buckets in a new store and refuses one of a newer
// schema, or a bbolt file that is some other program's.
func (st *Bolt) prepare() error {
	return st.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			var other []string
			tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				other = append(other, fmt.Sprintf("%q", name))
				return nil
			})
			if len(other) > 0 {
				return &fileError{Off: -1, Msg: "a bbolt file that is not a classroom store: it holds " + strings.Join(other[:min(3, len(other))], ", ")}
			}
			var err error
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return err
			}
			if err := meta.Put(keySchema, be64(boltSchema)); err != nil {
				return err
			}
		}
		v := meta.Get(keySchema)
		if len(v) != 8 {
			return &fileError{Off: -1, Msg: fmt.Sprintf("its schema version is %d bytes long, not 8", len(v))}
		}
		if version := binary.BigEndian.Uint64(v); version > boltSchema {
			return fmt.Errorf("written by a newer Stepthrough (schema %d; this one reads %d): upgrade, or start with another --data-dir", version, boltSchema)
		}
		for _, name := range [][]byte{bucketRooms, bucketAnswers} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// damaged keeps a copy of a damaged store and says, in one line, what to
// do.
func damaged(path, why string) error {
	backup := fmt.Sprintf("%s.damaged-%s", path, time.Now().Format("20060102-150405"))
	if b, err := os.ReadFile(path); err == nil {
		if err := os.WriteFile(backup, b, 0o600); err != nil {
			backup = "(the copy failed: " + err.Error() + ")"
		}
	}
	why = strings.Join(strings.Fields(why), " ")
	if len(why) > 200 {
		why = why[:200] + "…"
	}
	return fmt.Errorf("the classroom store %s is damaged (%s); a copy is at %s: move %s away to start an empty store", path, why, backup, path)
}

// SetQuota caps the store's file at about size bytes (bbolt's MaxSize; 0
// lifts the cap): a write that needs the file to grow past it fails as on
// a full disk, and the classroom keeps what it could not write until it
// can. Writes that fit in the pages the file already has go on.
func (st *Bolt) SetQuota(ctx context.Context, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// MaxSize is read by the writer: change it while holding the write lock.
	tx, err := st.db.Begin(true)
	if err != nil {
		return fmt.Errorf("set the store's quota: %w", err)
	}
	defer tx.Rollback()
	st.db.MaxSize = int(max(size, 0))
	return nil
}

// Ping checks that the store is open.
func (st *Bolt) Ping(ctx context.Context) error {
	return st.view(ctx, func(*bolt.Tx) error { return nil })
}

// Close closes the file, letting another process open it.
func (st *Bolt) Close() error { return st.db.Close() }

// view runs fn in a read transaction; update runs it in a write
// transaction. Both turn bbolt's panics into errors, and a full store
// into an error that says so.
func (st *Bolt) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return st.guard(func() error { return st.db.View(fn) })
}

func (st *Bolt) update(fn func(*bolt.Tx) error) error {
	return st.guard(func() error { return st.db.Update(fn) })
}

func (st *Bolt) guard(run func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the classroom store %s failed (%v): it may be damaged; a restart checks it", st.path, r)
		}
	}()
	err = run()
	if errors.Is(err, berrors.ErrMaxSizeReached) {
		return fmt.Errorf("the classroom store %s is full (it may grow no further): %w", st.path, err)
	}
	return err
}

// SaveRoom inserts a new room (rec.Version 0) or updates one whose
// stored version is rec.Version, raising it; the secret, creator and start
// time are written once. ErrConflict when the version has moved on.
func (st *Bolt) SaveRoom(ctx context.Context, rec Record, state State) (int64, error) {
	code := rec.Code
	b, err := state.Marshal()
	if err != nil {
		return 0, fmt.Errorf("room %s: encode state: %w", code, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("room %s: save: %w", code, err)
	}
	var version int64
	err = st.update(func(tx *bolt.Tx) error {
		rooms := tx.Bucket(bucketRooms)
		room := rooms.Bucket([]byte(code))
		switch {
		case rec.Version == 0 && room != nil, rec.Version != 0 && room == nil:
			return ErrConflict
		case rec.Version == 0:
			var err error
			if room, err = rooms.CreateBucket([]byte(code)); err != nil {
				return err
			}
			if err := put(room, keySecret, []byte(rec.SecretHash), keyCreator, []byte(rec.Creator), keyCreated, be64(uint64(rec.Created.Unix()))); err != nil {
				return err
			}
		default:
			stored, err := int64Field(room, keyVersion)
			if err != nil {
				return err
			}
			if stored != rec.Version {
				return ErrConflict
			}
		}
		version = rec.Version + 1
		return put(room, keyState, b, keyStateSum, []byte(stateSum(b)), keyExpires, be64(uint64(rec.Expires.Unix())), keyVersion, be64(uint64(version)))
	})
	if errors.Is(err, ErrConflict) {
		return 0, fmt.Errorf("room %s at version %d: %w", code, rec.Version, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("room %s: save: %w", code, err)
	}
	return version, nil
}

// SaveAnswer records (or replaces) a student's answer at a lesson step.
func (st *Bolt) SaveAnswer(ctx context.Context, code string, step int, student, answer string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("room %s: save answer: %w", code, err)
	}
	err := st.update(func(tx *bolt.Tx) error {
		answers, err := tx.Bucket(bucketAnswers).CreateBucketIfNotExists([]byte(code))
		if err != nil {
			return err
		}
		return answers.Put(append(be64(uint64(step)), student...), []byte(answer))
	})
	if err != nil {
		return fmt.Errorf("room %s: save answer: %w", code, err)
	}
	return nil
}

// LoadRoom reads a room and its answers in one transaction; ErrNoRoom when
// there is none.
func (st *Bolt) LoadRoom(ctx context.Context, code string) (*Stored, error) {
	r := &Stored{Record: Record{Code: code}, Answers: map[int]map[string]string{}}
	err := st.view(ctx, func(tx *bolt.Tx) error {
		room := tx.Bucket(bucketRooms).Bucket([]byte(code))
		if room == nil {
			return ErrNoRoom
		}
		created, err := int64Field(room, keyCreated)
		if err != nil {
			return err
		}
		expires, err := int64Field(room, keyExpires)
		if err != nil {
			return err
		}
		if r.Version, err = int64Field(room, keyVersion); err != nil {
			return err
		}
		r.Created, r.Expires = time.Unix(created, 0), time.Unix(expires, 0)
		r.SecretHash, r.Creator = string(room.Get(keySecret)), string(room.Get(keyCreator))
		r.State, r.Damage = ReadStored(bytes.Clone(room.Get(keyState)), string(room.Get(keyStateSum)))
		return forAnswers(tx, code, func(step int, student, answer []byte) {
			if r.Answers[step] == nil {
				r.Answers[step] = map[string]string{}
			}
			r.Answers[step][string(student)] = string(answer)
		})
	})
	if errors.Is(err, ErrNoRoom) {
		return nil, ErrNoRoom
	}
	if err != nil {
		return nil, fmt.Errorf("room %s: load: %w", code, err)
	}
	return r, nil
}

// forAnswers calls fn with each answer stored for the room code.
func forAnswers(tx *bolt.Tx, code string, fn func(step int, student, answer []byte)) error {
	answers := tx.Bucket(bucketAnswers).Bucket([]byte(code))
	if answers == nil {
		return nil
	}
	return answers.ForEach(func(k, v []byte) error {
		if len(k) < 8 || v == nil {
			return fmt.Errorf("an answer's key %q is damaged", k)
		}
		fn(int(int64(binary.BigEndian.Uint64(k))), k[8:], v)
		return nil
	})
}

// CountRooms counts rooms that have not expired: all of them, and those
// a creator (a client address) started.
func (st *Bolt) CountRooms(ctx context.Context, now time.Time, creator string) (all, mine int, err error) {
	err = st.view(ctx, func(tx *bolt.Tx) error {
		return forRooms(tx, func(_ []byte, room *bolt.Bucket, expires int64) {
			if expires > now.Unix() {
				all++
				if string(room.Get(keyCreator)) == creator {
					mine++
				}
			}
		})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("count rooms: %w", err)
	}
	return all, mine, nil
}

// forRooms calls fn with every stored room and its expiry.
func forRooms(tx *bolt.Tx, fn func(code []byte, room *bolt.Bucket, expires int64)) error {
	rooms := tx.Bucket(bucketRooms)
	return rooms.ForEachBucket(func(code []byte) error {
		room := rooms.Bucket(code)
		expires, err := int64Field(room, keyExpires)
		if err != nil {
			return fmt.Errorf("room %s: %w", code, err)
		}
		fn(code, room, expires)
		return nil
	})
}

// DeleteExpired removes rooms (and their answers) that expired before now.
func (st *Bolt) DeleteExpired(ctx context.Context, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := st.update(func(tx *bolt.Tx) error {
		var expired [][]byte
		err := forRooms(tx, func(code []byte, _ *bolt.Bucket, expires int64) {
			if expires <= now.Unix() {
				expired = append(expired, bytes.Clone(code))
			}
		})
		if err != nil {
			return err
		}
		for _, code := range expired { // not while iterating: bbolt's cursors forbid it
			if err := tx.Bucket(bucketRooms).DeleteBucket(code); err != nil {
				return err
			}
			if err := tx.Bucket(bucketAnswers).DeleteBucket(code); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete expired rooms: %w", err)
	}
	return nil
}

// Marks reads the versions and answer counts of the rooms in codes.
func (st *Bolt) Marks(ctx context.Context, codes []string) (map[string]Mark, error) {
	out := map[string]Mark{}
	err := st.view(ctx, func(tx *bolt.Tx) error {
		for _, code := range codes {
			room := tx.Bucket(bucketRooms).Bucket([]byte(code))
			if room == nil {
				continue
			}
			version, err := int64Field(room, keyVersion)
			if err != nil {
				return fmt.Errorf("room %s: %w", code, err)
			}
			n := 0
			if err := forAnswers(tx, code, func(int, []byte, []byte) { n++ }); err != nil {
				return fmt.Errorf("room %s: %w", code, err)
			}
			out[code] = Mark{Version: version, Answers: n}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("room marks: %w", err)
	}
	return out, nil
}

// put writes the pairs of keys and values kv into b.
func put(b *bolt.Bucket, kv ...[]byte) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := b.Put(kv[i], kv[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// be64 is v in 8 bytes, big-endian.
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// int64Field reads an 8-byte big-endian field of a room.
func int64Field(room *bolt.Bucket, key []byte) (int64, error) {
	v := room.Get(key)
	if len(v) != 8 {
		return 0, fmt.Errorf("its %s is damaged (%d bytes, not 8)", key, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}
