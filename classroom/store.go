package classroom

import (
	"context"
	"errors"
	"time"
)

// Store keeps rooms across restarts (SQLite implements it).
type Store interface {
	SaveRoom(ctx context.Context, code, secretHash string, state State, created, expires time.Time) error
	SaveAnswer(ctx context.Context, code string, step int, student, answer string) error
	LoadRoom(ctx context.Context, code string) (*Stored, error) // ErrNoRoom when there is none
	CountRooms(ctx context.Context, now time.Time) (int, error)
	DeleteExpired(ctx context.Context, now time.Time) error
	Close() error
}

// Stored is a room as saved.
type Stored struct {
	Code, SecretHash string
	State            State
	Created, Expires time.Time
	Answers          map[int]map[string]string // lesson step → student → answer
}

// ErrNoRoom is a store's answer for a code it does not hold.
var ErrNoRoom = errors.New("no such room")
