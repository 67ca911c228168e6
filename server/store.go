package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"stepthrough/classroom"
)

// storeOpenWait bounds connecting to a PostgreSQL store at start.
const storeOpenWait = 15 * time.Second

// openStore opens the classroom store the configuration names:
// PostgreSQL at StoreURL, SQLite in DataDir, or none (rooms in memory).
func openStore(cfg Config) (classroom.Store, error) {
	switch {
	case cfg.StoreURL != "":
		if !strings.HasPrefix(cfg.StoreURL, "postgres://") && !strings.HasPrefix(cfg.StoreURL, "postgresql://") {
			return nil, fmt.Errorf("store %q: give a postgres://USER:PASSWORD@HOST:PORT/DATABASE address", truncate(cfg.StoreURL, 40))
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeOpenWait)
		defer cancel()
		st, err := classroom.OpenPostgres(ctx, cfg.StoreURL)
		if err != nil {
			return nil, err
		}
		return st, nil
	case cfg.DataDir != "":
		st, err := classroom.OpenSQLite(cfg.DataDir, cfg.Logger)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	return nil, nil
}

// secretKeeper is a store that keeps the secret signing students' cookies
// for every server that shares it.
type secretKeeper interface {
	Secret(ctx context.Context) ([]byte, error)
}

// serverSecret is the cookie-signing secret: the shared store's, else the
// one in the data directory (made there the first time).
func serverSecret(store classroom.Store, dir string) ([]byte, error) {
	if k, ok := store.(secretKeeper); ok {
		ctx, cancel := context.WithTimeout(context.Background(), storeOpenWait)
		defer cancel()
		return k.Secret(ctx)
	}
	return loadSecret(dir)
}

// pinger is a store that can say whether it is reachable (/readyz).
type pinger interface {
	Ping(ctx context.Context) error
}
