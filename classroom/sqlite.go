package classroom

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// OpenSQLite opens (creating if needed) dir/rooms.db.
func OpenSQLite(dir string) (*SQLite, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "rooms.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises writes anyway
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("open %s: journal mode is %q, want wal", path, mode)
	}
	if _, err := db.Exec(storeSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables in %s: %w", path, err)
	}
	return &SQLite{db: db}, nil
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
