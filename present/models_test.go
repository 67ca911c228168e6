package present

import "testing"

func TestThousands(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0"}, {64, "64"}, {999, "999"}, {1000, "1,000"}, {4096, "4,096"}, {40960, "40,960"}, {1048576, "1,048,576"}} {
		t.Run(c.want, func(t *testing.T) {
			if got := thousands(c.n); got != c.want {
				t.Errorf("thousands(%d) = %q", c.n, got)
			}
		})
	}
}
