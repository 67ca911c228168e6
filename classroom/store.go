package classroom

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store keeps rooms across restarts (Bolt implements it) and, in
// PostgreSQL, shares them between servers.
type Store interface {
	// SaveRoom writes a room's state if the stored version is still
	// rec.Version (0: the room is new) and returns the new version;
	// ErrConflict when another server (or tab) changed the room first,
	// or it is gone. Two writers never both succeed from one version.
	SaveRoom(ctx context.Context, rec Record, state State) (int64, error)
	SaveAnswer(ctx context.Context, code string, step int, student, answer string) error
	LoadRoom(ctx context.Context, code string) (*Stored, error) // ErrNoRoom when there is none
	CountRooms(ctx context.Context, now time.Time, creator string) (all, mine int, err error)
	DeleteExpired(ctx context.Context, now time.Time) error
	// Marks reads the version and answer count of each room in codes (a
	// room the store lacks is missing from the map): how a server notices
	// changes made elsewhere when no bus tells it.
	Marks(ctx context.Context, codes []string) (map[string]Mark, error)
	Close() error
}

// Mark is how far a stored room has got: its state's version and how many
// answers it holds.
type Mark struct {
	Version int64
	Answers int
}

// Record is what a store keeps about a room beside its state.
type Record struct {
	Code, SecretHash string
	Creator          string // the client address that started it
	Created, Expires time.Time
	// Version is the state's version as loaded, or, to SaveRoom, the
	// version the write is based on.
	Version int64
}

// Stored is a room as saved.
type Stored struct {
	Record
	State   State
	Answers map[int]map[string]string // lesson step → student → answer
	// Damage names what was wrong with the stored state (a checksum that
	// does not match, fields missing or unknown, values out of range); the
	// room comes back with what could be read, and its instructor is told.
	Damage []string
}

// ErrNoRoom is a store's answer for a code it does not hold.
var ErrNoRoom = errors.New("no such room")

// ErrConflict is SaveRoom's answer when the room's stored version is not
// the one the write was based on.
var ErrConflict = errors.New("the room was changed elsewhere first")

// answerRows are the rows of (step, student, answer) a store's query
// returns (database/sql's and pgx's alike).
type answerRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// readAnswers adds every row's answer to answers (step → student → answer).
func readAnswers(rows answerRows, answers map[int]map[string]string) error {
	for rows.Next() {
		var step int
		var student, answer string
		if err := rows.Scan(&step, &student, &answer); err != nil {
			return err
		}
		if answers[step] == nil {
			answers[step] = map[string]string{}
		}
		answers[step][student] = answer
	}
	return rows.Err()
}

// readMarks reads rows of (code, version, answers).
func readMarks(rows answerRows) (map[string]Mark, error) {
	out := map[string]Mark{}
	for rows.Next() {
		var code string
		var m Mark
		if err := rows.Scan(&code, &m.Version, &m.Answers); err != nil {
			return nil, fmt.Errorf("room marks: %w", err)
		}
		out[code] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("room marks: %w", err)
	}
	return out, nil
}
