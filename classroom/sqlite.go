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
	expires     INTEGER NOT NULL,
	state_sum   TEXT NOT NULL DEFAULT '',
	creator     TEXT NOT NULL DEFAULT '',
	version     INTEGER NOT NULL DEFAULT 1
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
// Version 2 added rooms.state_sum (the state's SHA-256: damage is
// noticed) and rooms.creator (the address that started the room: its
// live-room cap holds across restarts). Version 3 added rooms.version
// (writes based on an older version are refused).
const schemaVersion = 3

// migrations bring a store of version i+1 up to i+2.
var migrations = []string{
	`ALTER TABLE rooms ADD COLUMN state_sum TEXT NOT NULL DEFAULT '';
	 ALTER TABLE rooms ADD COLUMN creator TEXT NOT NULL DEFAULT '';`,
	`ALTER TABLE rooms ADD COLUMN version INTEGER NOT NULL DEFAULT 1;`,
}

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
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &SQLite{db: db}, nil
}

// migrate creates the tables, or brings an older store's up to
// schemaVersion, in one transaction.
func migrate(db *sql.DB) error {
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var tables int
	if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rooms'`).Scan(&tables); err != nil {
		return fmt.Errorf("read the tables: %w", err)
	}
	if tables == 0 {
		version = schemaVersion // a new store: the tables below are the current ones
	}
	if _, err := tx.Exec(storeSchema); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	for v := max(version, 1); v < schemaVersion; v++ {
		if _, err := tx.Exec(migrations[v-1]); err != nil {
			return fmt.Errorf("upgrade the store from schema %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("set the schema version: %w", err)
	}
	return tx.Commit()
}

// SetQuota caps the store's file at about bytes (SQLite's
// max_page_count; 0 lifts the cap): writes past it fail as on a full disk,
// and the classroom keeps what it could not write until it can.
func (st *SQLite) SetQuota(ctx context.Context, bytes int64) error {
	var pageSize int64
	if err := st.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return fmt.Errorf("read the page size: %w", err)
	}
	pages := int64(0xfffffffe) // SQLite's largest
	if bytes > 0 {
		pages = max(bytes/pageSize, 1)
	}
	var got int64
	if err := st.db.QueryRowContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)).Scan(&got); err != nil {
		return fmt.Errorf("set the store's quota: %w", err)
	}
	return nil
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

// Ping checks that the database answers.
func (st *SQLite) Ping(ctx context.Context) error { return st.db.PingContext(ctx) }

// Close closes the database.
func (st *SQLite) Close() error { return st.db.Close() }

// SaveRoom inserts a new room (rec.Version 0) or updates one whose
// stored version is rec.Version, raising it; the secret, creator and start
// time are written once. ErrConflict when the version has moved on.
func (st *SQLite) SaveRoom(ctx context.Context, rec Record, state State) (int64, error) {
	code := rec.Code
	b, err := state.Marshal()
	if err != nil {
		return 0, fmt.Errorf("room %s: encode state: %w", code, err)
	}
	var version int64
	if rec.Version == 0 {
		err = st.db.QueryRowContext(ctx, `INSERT INTO rooms (code, secret_hash, state, created, expires, state_sum, creator) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(code) DO NOTHING RETURNING version`,
			code, rec.SecretHash, string(b), rec.Created.Unix(), rec.Expires.Unix(), stateSum(b), rec.Creator).Scan(&version)
	} else {
		err = st.db.QueryRowContext(ctx, `UPDATE rooms SET state = ?, expires = ?, state_sum = ?, version = version + 1
			WHERE code = ? AND version = ? RETURNING version`,
			string(b), rec.Expires.Unix(), stateSum(b), code, rec.Version).Scan(&version)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("room %s at version %d: %w", code, rec.Version, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("room %s: save: %w", code, err)
	}
	return version, nil
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
	r := &Stored{Record: Record{Code: code}, Answers: map[int]map[string]string{}}
	var state, sum string
	var created, expires int64
	err := st.db.QueryRowContext(ctx, `SELECT secret_hash, state, created, expires, state_sum, creator, version FROM rooms WHERE code = ?`, code).
		Scan(&r.SecretHash, &state, &created, &expires, &sum, &r.Creator, &r.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoRoom
	}
	if err != nil {
		return nil, fmt.Errorf("room %s: load: %w", code, err)
	}
	r.State, r.Damage = ReadStored([]byte(state), sum)
	r.Created, r.Expires = time.Unix(created, 0), time.Unix(expires, 0)
	rows, err := st.db.QueryContext(ctx, `SELECT step, student, answer FROM answers WHERE code = ?`, code)
	if err != nil {
		return nil, fmt.Errorf("room %s: load answers: %w", code, err)
	}
	defer rows.Close()
	if err := readAnswers(rows, r.Answers); err != nil {
		return nil, fmt.Errorf("room %s: load answers: %w", code, err)
	}
	return r, nil
}

// CountRooms counts rooms that have not expired: all of them, and those
// a creator (a client address) started.
func (st *SQLite) CountRooms(ctx context.Context, now time.Time, creator string) (all, mine int, err error) {
	err = st.db.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN creator = ? THEN 1 END) FROM rooms WHERE expires > ?`,
		creator, now.Unix()).Scan(&all, &mine)
	return all, mine, err
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

// Marks reads the versions and answer counts of the rooms in codes.
func (st *SQLite) Marks(ctx context.Context, codes []string) (map[string]Mark, error) {
	if len(codes) == 0 {
		return map[string]Mark{}, nil
	}
	args := make([]any, len(codes))
	for i, c := range codes {
		args[i] = c
	}
	rows, err := st.db.QueryContext(ctx, `SELECT r.code, r.version, (SELECT count(*) FROM answers a WHERE a.code = r.code) FROM rooms r WHERE r.code IN (?`+
		strings.Repeat(", ?", len(codes)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("room marks: %w", err)
	}
	defer rows.Close()
	return readMarks(rows)
}
