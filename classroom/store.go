package classroom

import (
	"context"
	"errors"
	"time"
)

// Store keeps rooms across restarts (SQLite implements it).
type Store interface {
	SaveRoom(ctx context.Context, rec Record, state State) error
	SaveAnswer(ctx context.Context, code string, step int, student, answer string) error
	LoadRoom(ctx context.Context, code string) (*Stored, error) // ErrNoRoom when there is none
	CountRooms(ctx context.Context, now time.Time, creator string) (all, mine int, err error)
	DeleteExpired(ctx context.Context, now time.Time) error
	Close() error
}

// Record is what a store keeps about a room beside its state.
type Record struct {
	Code, SecretHash string
	Creator          string // the client address that started it
	Created, Expires time.Time
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
