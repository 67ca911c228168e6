package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/classroom"
)

// The bus's password and token come from a flag, else from the
// environment (which the process list does not show); the environment's
// token is not offered beside a user or an nkey; and -h never prints them.
func TestBusAuthFromFlagsAndEnvironment(t *testing.T) {
	t.Setenv("STEPTHROUGH_BUS_PASSWORD", "env-Password-1")
	t.Setenv("STEPTHROUGH_BUS_TOKEN", "env-Token-2")
	for _, tc := range []struct {
		name                        string
		user, password, token, nkey string
		want                        classroom.BusAuth
	}{
		{"user, password from the environment", "st", "", "", "", classroom.BusAuth{User: "st", Password: "env-Password-1"}},
		{"user and password flags", "st", "flag-pw", "", "", classroom.BusAuth{User: "st", Password: "flag-pw"}},
		{"token from the environment", "", "", "", "", classroom.BusAuth{Token: "env-Token-2"}},
		{"token flag", "", "", "flag-tok", "", classroom.BusAuth{Token: "flag-tok"}},
		{"nkey", "", "", "", "bus.nk", classroom.BusAuth{NkeyFile: "bus.nk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, busAuth(tc.user, tc.password, tc.token, tc.nkey)); d != "" {
				t.Errorf("busAuth (-want +got):\n%s", d)
			}
		})
	}
	out, _, _ := run(t, "serve", "-h")
	if strings.Contains(out, "env-Password-1") || strings.Contains(out, "env-Token-2") || !strings.Contains(out, "-bus-user") {
		t.Errorf("serve -h:\n%s", out)
	}
}
