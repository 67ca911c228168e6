package classroom

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is the Store in PostgreSQL, for several servers sharing their
// rooms (pgx's connection pool). Its schema is versioned: Open brings an
// older one up to date in a transaction, under an advisory lock so that
// servers starting together migrate once, and refuses a newer one.
type Postgres struct {
	pool *pgxpool.Pool
}

// pgSchemaVersion is the layout this server reads and writes.
const pgSchemaVersion = 2

// pgMigrations[i] brings a store of version i up to i+1.
var pgMigrations = []string{
	`CREATE TABLE rooms (
		code        text PRIMARY KEY,
		secret_hash text NOT NULL,
		state       text NOT NULL,
		state_sum   text NOT NULL,
		version     bigint NOT NULL DEFAULT 1,
		created     timestamptz NOT NULL,
		expires     timestamptz NOT NULL,
		creator     text NOT NULL DEFAULT ''
	);
	CREATE INDEX rooms_expires ON rooms (expires);
	CREATE TABLE answers (
		code    text NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
		step    integer NOT NULL,
		student text NOT NULL,
		answer  text NOT NULL,
		at      timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (code, step, student)
	);`,
	// 2: the secret that signs students' cookies, one for every server
	`CREATE TABLE server_secret (
		id     integer PRIMARY KEY CHECK (id = 1),
		secret bytea NOT NULL CHECK (length(secret) = 32)
	);`,
}

// pgMigrationLock is the advisory lock key migrations hold.
const pgMigrationLock int64 = 0x5374657074 // "Stept"

// OpenPostgres connects to the database at url (postgres://…) and brings
// its schema up to date.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL store %s: %w", redact(url), err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL store %s: %w", redact(url), err)
	}
	if err := pgMigrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("the PostgreSQL store %s: %w", redact(url), err)
	}
	return &Postgres{pool: pool}, nil
}

// redact is an address (a store's or a bus's) fit for logs and errors:
// its password replaced, and a user given alone too, since there it is a
// token (nats://TOKEN@HOST).
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an address that does not parse)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); !ok {
			u.User = url.User("xxxxx")
		}
	}
	return u.Redacted()
}

// pgMigrate creates or upgrades the schema in one transaction.
func pgMigrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgMigrationLock); err != nil {
		return fmt.Errorf("lock the schema: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS stepthrough_schema (version integer NOT NULL)`); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	version := 0
	err = tx.QueryRow(ctx, `SELECT version FROM stepthrough_schema`).Scan(&version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := tx.Exec(ctx, `INSERT INTO stepthrough_schema (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("read the schema version: %w", err)
	case version > pgSchemaVersion:
		return fmt.Errorf("its schema is version %d, written by a newer Stepthrough (this one reads %d): upgrade this server, or give it another database", version, pgSchemaVersion)
	}
	for v := version; v < pgSchemaVersion; v++ {
		if _, err := tx.Exec(ctx, pgMigrations[v]); err != nil {
			return fmt.Errorf("upgrade the schema from %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE stepthrough_schema SET version = $1`, pgSchemaVersion); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Secret is the 32-byte secret every server on this database signs
// students' cookies with (made by the first to ask), so a student's cookie
// is good on whichever server a load balancer picks.
func (st *Postgres) Secret(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	rand.Read(fresh)
	if _, err := st.pool.Exec(ctx, `INSERT INTO server_secret (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, fresh); err != nil {
		return nil, fmt.Errorf("the PostgreSQL store's secret: %w", err)
	}
	var secret []byte
	if err := st.pool.QueryRow(ctx, `SELECT secret FROM server_secret WHERE id = 1`).Scan(&secret); err != nil {
		return nil, fmt.Errorf("the PostgreSQL store's secret: %w", err)
	}
	return secret, nil
}

// Ping checks that the database answers.
func (st *Postgres) Ping(ctx context.Context) error { return st.pool.Ping(ctx) }

// Close closes the pool.
func (st *Postgres) Close() error {
	st.pool.Close()
	return nil
}

// SaveRoom inserts a new room (rec.Version 0) or updates one whose
// stored version is rec.Version, raising it; the secret, creator and start
// time are written once. ErrConflict when the version has moved on.
func (st *Postgres) SaveRoom(ctx context.Context, rec Record, state State) (int64, error) {
	b, err := state.Marshal()
	if err != nil {
		return 0, fmt.Errorf("room %s: encode state: %w", rec.Code, err)
	}
	var version int64
	if rec.Version == 0 {
		err = st.pool.QueryRow(ctx, `INSERT INTO rooms (code, secret_hash, state, state_sum, created, expires, creator) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (code) DO NOTHING RETURNING version`,
			rec.Code, rec.SecretHash, string(b), stateSum(b), rec.Created, rec.Expires, rec.Creator).Scan(&version)
	} else {
		err = st.pool.QueryRow(ctx, `UPDATE rooms SET state = $2, state_sum = $3, expires = $4, version = version + 1
			WHERE code = $1 AND version = $5 RETURNING version`,
			rec.Code, string(b), stateSum(b), rec.Expires, rec.Version).Scan(&version)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("room %s at version %d: %w", rec.Code, rec.Version, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("room %s: save: %w", rec.Code, err)
	}
	return version, nil
}

// SaveAnswer records (or replaces) a student's answer at a lesson step.
func (st *Postgres) SaveAnswer(ctx context.Context, code string, step int, student, answer string) error {
	_, err := st.pool.Exec(ctx, `INSERT INTO answers (code, step, student, answer) VALUES ($1, $2, $3, $4)
		ON CONFLICT (code, step, student) DO UPDATE SET answer = excluded.answer, at = now()`, code, step, student, answer)
	if err != nil {
		return fmt.Errorf("room %s: save answer: %w", code, err)
	}
	return nil
}

// LoadRoom reads a room and its answers in one snapshot (a repeatable-read
// transaction); ErrNoRoom when there is none.
func (st *Postgres) LoadRoom(ctx context.Context, code string) (*Stored, error) {
	tx, err := st.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("room %s: load: %w", code, err)
	}
	defer tx.Rollback(ctx)
	r := &Stored{Record: Record{Code: code}, Answers: map[int]map[string]string{}}
	var state, sum string
	err = tx.QueryRow(ctx, `SELECT secret_hash, state, state_sum, created, expires, creator, version FROM rooms WHERE code = $1`, code).
		Scan(&r.SecretHash, &state, &sum, &r.Created, &r.Expires, &r.Creator, &r.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoRoom
	}
	if err != nil {
		return nil, fmt.Errorf("room %s: load: %w", code, err)
	}
	r.State, r.Damage = ReadStored([]byte(state), sum)
	rows, err := tx.Query(ctx, `SELECT step, student, answer FROM answers WHERE code = $1`, code)
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
func (st *Postgres) CountRooms(ctx context.Context, now time.Time, creator string) (all, mine int, err error) {
	err = st.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE creator = $1) FROM rooms WHERE expires > $2`, creator, now).Scan(&all, &mine)
	return all, mine, err
}

// DeleteExpired removes rooms that expired before now (their answers go
// with them).
func (st *Postgres) DeleteExpired(ctx context.Context, now time.Time) error {
	_, err := st.pool.Exec(ctx, `DELETE FROM rooms WHERE expires <= $1`, now)
	return err
}

// Marks reads the versions and answer counts of the rooms in codes.
func (st *Postgres) Marks(ctx context.Context, codes []string) (map[string]Mark, error) {
	rows, err := st.pool.Query(ctx, `SELECT r.code, r.version, (SELECT count(*) FROM answers a WHERE a.code = r.code) FROM rooms r WHERE r.code = ANY($1)`, codes)
	if err != nil {
		return nil, fmt.Errorf("room marks: %w", err)
	}
	return readMarks(rows)
}
