package classroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"stepthrough/classroom/natstest"
)

// Events read off the bus: a well-formed one for its own room is taken;
// anything else (another room's code, an unknown kind, a negative version,
// too long, not JSON) is refused.
func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		name, room, data string
		ok               bool
	}{
		{"state", "ABCDEF", `{"room":"ABCDEF","kind":"state","version":3,"from":"a"}`, true},
		{"answer", "ABCDEF", `{"room":"ABCDEF","kind":"answer","from":"a"}`, true},
		{"another room's subject", "ABCDEG", `{"room":"ABCDEF","kind":"state","version":3}`, false},
		{"not a code", "abc", `{"room":"abc","kind":"state"}`, false},
		{"unknown kind", "ABCDEF", `{"room":"ABCDEF","kind":"drop"}`, false},
		{"negative version", "ABCDEF", `{"room":"ABCDEF","kind":"state","version":-1}`, false},
		{"not JSON", "ABCDEF", `{"room":`, false},
		{"too long", "ABCDEF", `{"room":"ABCDEF","kind":"state","from":"` + string(make([]byte, 600)) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvent(tc.room, []byte(tc.data))
			if (err == nil) != tc.ok {
				t.Errorf("ParseEvent(%q, %.60q): %v, want ok=%v", tc.room, tc.data, err, tc.ok)
			}
		})
	}
}

// ParseEvent never panics, and what it takes re-encodes within the size
// bound and names the subject's room.
func FuzzParseEvent(f *testing.F) {
	f.Add("ABCDEF", []byte(`{"room":"ABCDEF","kind":"state","version":3,"from":"a"}`))
	f.Add("ABCDEF", []byte(`{"room":"ABCDEF","kind":"answer"}`))
	f.Add("", []byte(`null`))
	f.Fuzz(func(t *testing.T, room string, data []byte) {
		ev, err := ParseEvent(room, data)
		if err != nil {
			return
		}
		b, _ := json.Marshal(ev)
		if ev.Room != room || len(b) > 2*maxEventBytes {
			t.Fatalf("took %+v from the subject of %q", ev, room)
		}
	})
}

// A NATS server with authorization takes a server that gives its
// credentials — a user and password in the address or apart, an nkey, a
// token — and refuses, with ErrBusRefused and a sentence naming what was
// given, one that gives none or wrong ones. Credentials given twice or
// half are refused before connecting. No secret reaches the error or the
// log.
func TestOpenNATSCredentials(t *testing.T) {
	const password, token = "pw-Secret-1", "tok-Secret-2"
	nkeyFile, nkeyPub := newNkey(t)
	wrongNkey, _ := newNkey(t)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	os.WriteFile(conf, []byte(`authorization { users = [ {user: "stepthrough", password: "`+password+`"}, {nkey: "`+nkeyPub+`"} ] }`), 0o600)
	users := natstest.Start(t, "-c", conf)
	tokens := natstest.Start(t, "--auth", token)
	withUser := func(u, user, pass string) string {
		return strings.Replace(u, "nats://", "nats://"+user+":"+pass+"@", 1)
	}
	seeds := []string{password, token, "wrong-Secret-3", readSeed(t, nkeyFile), readSeed(t, wrongNkey)}
	for _, tc := range []struct {
		name string
		addr string
		auth BusAuth
		want string // "" connects; "refused": ErrBusRefused; else in the error
	}{
		{"user and password apart", users.URL(), BusAuth{User: "stepthrough", Password: password}, ""},
		{"user and password in the address", withUser(users.URL(), "stepthrough", password), BusAuth{}, ""},
		{"nkey", users.URL(), BusAuth{NkeyFile: nkeyFile}, ""},
		{"token", tokens.URL(), BusAuth{Token: token}, ""},
		{"token in the address", strings.Replace(tokens.URL(), "nats://", "nats://"+token+"@", 1), BusAuth{}, ""},
		{"none", users.URL(), BusAuth{}, "refused"},
		{"wrong password", users.URL(), BusAuth{User: "stepthrough", Password: "wrong-Secret-3"}, "refused"},
		{"wrong password in the address", withUser(users.URL(), "stepthrough", "wrong-Secret-3"), BusAuth{}, "refused"},
		{"an nkey it does not know", users.URL(), BusAuth{NkeyFile: wrongNkey}, "refused"},
		{"wrong token", tokens.URL(), BusAuth{Token: "wrong-Secret-3"}, "refused"},
		{"no token", tokens.URL(), BusAuth{}, "refused"},
		{"wrong token in the address", strings.Replace(tokens.URL(), "nats://", "nats://wrong-Secret-3@", 1), BusAuth{}, "refused"},
		{"given twice", withUser(users.URL(), "stepthrough", password), BusAuth{User: "stepthrough", Password: password}, "one kind of credentials"},
		{"a user without a password", users.URL(), BusAuth{User: "stepthrough"}, "needs its password"},
		{"an nkey file that is not there", users.URL(), BusAuth{NkeyFile: filepath.Join(t.TempDir(), "none.nk")}, "nkey seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			b, err := OpenNATS(tc.addr, tc.auth, slog.New(slog.NewTextHandler(&logged, nil)))
			if err != nil {
				t.Log(err)
			} else {
				defer b.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				if err := b.Ping(ctx); err != nil {
					t.Errorf("connected but the bus does not answer: %v", err)
				}
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want == "refused" && !errors.Is(err, ErrBusRefused):
				t.Errorf("got %v, want ErrBusRefused", err)
			case tc.want != "" && tc.want != "refused" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
			for _, secret := range seeds {
				if strings.Contains(fmt.Sprint(err), secret) || strings.Contains(logged.String(), secret) {
					t.Errorf("a secret is in the error or the log: %v\n%s", err, logged.String())
				}
			}
		})
	}
}

// A NATS server that asks for no credentials is used, and the log says
// that anyone who can reach it can announce changes.
func TestOpenNATSWarnsWithoutAuthorization(t *testing.T) {
	open := natstest.Start(t)
	var logged bytes.Buffer
	b, err := OpenNATS(open.URL(), BusAuth{}, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.Contains(logged.String(), "asks for no credentials") {
		t.Errorf("no warning about a bus without authorization:\n%s", logged.String())
	}
}

// newNkey writes a new nkey user seed to a file and returns the file and
// the public key.
func newNkey(t *testing.T) (file, public string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	public, _ = kp.PublicKey()
	file = filepath.Join(t.TempDir(), "bus.nk")
	if err := os.WriteFile(file, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, public
}

func readSeed(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
