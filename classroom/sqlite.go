package classroom

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite driver, registered as "sqlite"
)

// SQLite is the Store in SQLite (WAL mode): a restart loses no room, no
// room state and no poll answer. One file, rooms.db, under the data
// directory.
type SQLite struct {
	db *sql.DB
}

const storeSchema = `
CREATE TABLE IF NOT EXISTS rooms (
	code        TEXT PRIMARY KEY,
	secret_hash TEXT NOT NULL,
	state       TEXT NOT NULL,
	created     INTEGER NOT NULL,
	expires     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS answers (
	code    TEXT NOT NULL,
	step    INTEGER NOT NULL,
	student TEXT NOT NULL,
	answer  TEXT NOT NULL,
	at      INTEGER NOT NULL,
	PRIMARY KEY (code, step, student)
);`

// schemaVersion is the store's layout, kept in SQLite's user_version.
const schemaVersion = 1

// OpenSQLite opens (creating if needed) dir/rooms.db. A damaged file is
// refused in one line, after a copy of it is kept beside it; a file made
// by a newer server is refused; an empty (0-byte) file starts a fresh
// store, and log says so.
func OpenSQLite(dir string, log *slog.Logger) (*SQLite, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "rooms.db")
	if st, err := os.Stat(path); err == nil && st.Size() == 0 && log != nil {
		log.Warn("the classroom store is an empty file: starting a fresh store", "path", path)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises writes anyway
	if err := checkStore(db, path); err != nil {
		db.Close()
		return nil, err
	}
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil || mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("open %s: journal mode %q (%v), want wal", path, mode, err)
	}
	if _, err := db.Exec(storeSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables in %s: %w", path, err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		db.Close()
		return nil, fmt.Errorf("set the schema version of %s: %w", path, err)
	}
	return &SQLite{db: db}, nil
}

// checkStore refuses a file that is not an SQLite database, is damaged, or
// has a newer schema; a damaged one is copied aside first.
func checkStore(db *sql.DB, path string) error {
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return damaged(path, err.Error())
	}
	if version > schemaVersion {
		return fmt.Errorf("%s was written by a newer Stepthrough (schema %d; this one reads %d): upgrade, or start with another --data-dir", path, version, schemaVersion)
	}
	rows, err := db.Query("PRAGMA quick_check")
	if err != nil {
		return damaged(path, err.Error())
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return damaged(path, err.Error())
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return damaged(path, err.Error())
	}
	if len(problems) > 0 {
		return damaged(path, strings.Join(problems[:min(3, len(problems))], "; "))
	}
	return nil
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

// Close closes the database.
func (st *SQLite) Close() error { return st.db.Close() }

// SaveRoom inserts or updates a room's state and expiry.
func (st *SQLite) SaveRoom(ctx context.Context, code, secretHash string, state State, created, expires time.Time) error {
	b, err := state.Marshal()
	if err != nil {
		return fmt.Errorf("room %s: encode state: %w", code, err)
	}
	_, err = st.db.ExecContext(ctx, `INSERT INTO rooms (code, secret_hash, state, created, expires) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(code) DO UPDATE SET state = excluded.state, expires = excluded.expires`,
		code, secretHash, string(b), created.Unix(), expires.Unix())
	if err != nil {
		return fmt.Errorf("room %s: save: %w", code, err)
	}
	return nil
}

// SaveAnswer records (or replaces) a student's answer at a lesson step.
func (st *SQLite) SaveAnswer(ctx context.Context, code string, step int, student, answer string) error {
	_, err := st.db.ExecContext(ctx, `INSERT INTO answers (code, step, student, answer, at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(code, step, student) DO UPDATE SET answer = excluded.answer, at = excluded.at`,
		code, step, student, answer, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("room %s: save answer: %w", code, err)
	}
	return nil
}

// LoadRoom reads a room and its answers; ErrNoRoom when there is none.
func (st *SQLite) LoadRoom(ctx context.Context, code string) (*Stored, error) {
	r := &Stored{Code: code, Answers: map[int]map[string]string{}}
	var state string
	var created, expires int64
	err := st.db.QueryRowContext(ctx, `SELECT secret_hash, state, created, expires FROM rooms WHERE code = ?`, code).
		Scan(&r.SecretHash, &state, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoRoom
	}
	if err != nil {
		return nil, fmt.Errorf("room %s: load: %w", code, err)
	}
	if r.State, err = UnmarshalState([]byte(state)); err != nil {
		return nil, fmt.Errorf("room %s: %w", code, err)
	}
	r.Created, r.Expires = time.Unix(created, 0), time.Unix(expires, 0)
	rows, err := st.db.QueryContext(ctx, `SELECT step, student, answer FROM answers WHERE code = ?`, code)
	if err != nil {
		return nil, fmt.Errorf("room %s: load answers: %w", code, err)
	}
	defer rows.Close()
	for rows.Next() {
		var step int
		var student, answer string
		if err := rows.Scan(&step, &student, &answer); err != nil {
			return nil, fmt.Errorf("room %s: load answers: %w", code, err)
		}
		if r.Answers[step] == nil {
			r.Answers[step] = map[string]string{}
		}
		r.Answers[step][student] = answer
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("room %s: load answers: %w", code, err)
	}
	return r, nil
}

// CountRooms counts rooms that have not expired.
func (st *SQLite) CountRooms(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := st.db.QueryRowContext(ctx, `SELECT count(*) FROM rooms WHERE expires > ?`, now.Unix()).Scan(&n)
	return n, err
}

// DeleteExpired removes rooms (and their answers) that expired before now.
func (st *SQLite) DeleteExpired(ctx context.Context, now time.Time) error {
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM answers WHERE code IN (SELECT code FROM rooms WHERE expires <= ?)`, now.Unix()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM rooms WHERE expires <= ?`, now.Unix()); err != nil {
		return err
	}
	return tx.Commit()
}
