package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"stepthrough/classroom"
)

// storeOpenWait bounds connecting to a PostgreSQL store at start.
const storeOpenWait = 15 * time.Second

// openStore opens the classroom store the configuration names:
// PostgreSQL at StoreURL, a bbolt file in DataDir, or none (rooms in
// memory).
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
		st, err := classroom.OpenBolt(cfg.DataDir, cfg.Logger)
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

// openBus connects to the bus the configuration names, if any: it needs
// a shared (PostgreSQL) store, since events carry versions, not state.
func openBus(cfg Config, store classroom.Store) (*classroom.NATS, error) {
	if cfg.BusURL == "" {
		return nil, nil
	}
	if cfg.StoreURL == "" {
		return nil, fmt.Errorf("--bus needs --store postgres://…: the servers read rooms from the store they share")
	}
	return classroom.OpenNATS(cfg.BusURL, cfg.BusAuth, cfg.Logger)
}

// serverID names this server on the bus: its host, process and a random
// suffix (a restarted server is a new one).
func serverID() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", truncate(host, 24), os.Getpid(), hex.EncodeToString(b[:]))
}
