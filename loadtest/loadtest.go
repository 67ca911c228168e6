// Package loadtest is the classroom load harness: it starts a room on a
// running server, joins WebSocket students and measures how long each
// instructor step takes to reach every student's screen. It speaks only
// the server's public HTTP and WebSocket protocol.
package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Result is what a classroom load test measured: the time from the
// instructor sending an action to each student receiving the new view.
type Result struct {
	Students, Steps, Servers int
	P50, P95, P99, Max       time.Duration
	MeanBytes                int // the view's size per broadcast, uncompressed
}

func (r Result) String() string {
	on := ""
	if r.Servers > 1 {
		on = fmt.Sprintf(" over %d servers", r.Servers)
	}
	return fmt.Sprintf("%d students%s × %d steps: step-to-screen p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms; %d KiB per view",
		r.Students, on, r.Steps, ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max), r.MeanBytes/1024)
}

var viewRE = regexp.MustCompile(`id="room-view"[^>]*? data-version="\d+"`)

// Run starts a room on the first server of bases (http://host:port, or a
// load balancer in front of several), joins students WebSocket clients
// spread over bases in turn (compression on, as browsers do), and has the
// instructor, on the first, press "Stage →" steps times, every 100 ms
// (faster than the Explorer's fastest play speed) or when every student
// has the previous view, whichever is later. A student's latency is the
// time from the action to the first new view it receives: on another
// server, that view came through the store and the bus. Clients and
// servers may share the machine: the figures then include the clients'
// own work.
func Run(ctx context.Context, bases []string, students, steps int) (Result, error) {
	res := Result{Students: students, Steps: steps, Servers: len(bases)}
	code, key, err := startRoom(ctx, bases[0])
	if err != nil {
		return res, err
	}
	wsURL := func(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/rooms/" + code + "/ws?" }
	dialer := websocket.Dialer{EnableCompression: true, HandshakeTimeout: 10 * time.Second}

	var mu sync.Mutex
	var sent time.Time // when the instructor sent the current step
	var step int       // the current step (0: none yet)
	var lat []time.Duration
	var bytesSum, msgs int
	got := make(chan struct{}, students*4)
	var wg sync.WaitGroup
	conns := make([]*websocket.Conn, 0, students+1)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for i := range students {
		base := bases[i%len(bases)]
		cookie, err := studentCookie(ctx, base, code)
		if err != nil {
			return res, fmt.Errorf("student %d of %d: %w", i+1, students, err)
		}
		c, _, err := dialer.DialContext(ctx, wsURL(base), http.Header{"Cookie": {cookie}})
		if err != nil {
			return res, fmt.Errorf("student %d of %d: %w", i+1, students, err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := 0 // the last step this student has a view of
			for {
				_, msg, err := c.ReadMessage()
				now := time.Now()
				if err != nil {
					return
				}
				if !viewRE.Match(msg) {
					continue
				}
				first := func() bool { // this student's first view since the current step
					mu.Lock()
					defer mu.Unlock()
					if step <= seen {
						return false
					}
					seen = step
					lat = append(lat, now.Sub(sent))
					bytesSum += len(msg)
					msgs++
					return true
				}
				if first() {
					got <- struct{}{}
				}
			}
		}()
	}
	teach, _, err := dialer.DialContext(ctx, wsURL(bases[0])+"as=instructor&key="+key, nil)
	if err != nil {
		return res, fmt.Errorf("instructor: %w", err)
	}
	conns = append(conns, teach)
	var lastNote string
	noteRE := regexp.MustCompile(`id="room-note"[^>]*>([^<]+)<`)
	go func() { // the instructor's own messages are not measured, but errors are kept
		for {
			_, m, err := teach.ReadMessage()
			if err != nil {
				return
			}
			if n := noteRE.FindSubmatch(m); n != nil {
				func() {
					mu.Lock()
					defer mu.Unlock()
					lastNote = string(n[1])
				}()
			}
		}
	}()
	time.Sleep(500 * time.Millisecond) // the joining views arrive before any step
	msg, _ := json.Marshal(map[string]string{"action": "step"})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range steps {
		if i > 0 {
			<-tick.C
		}
		func() {
			mu.Lock()
			defer mu.Unlock()
			step, sent = i+1, time.Now()
		}()
		if err := teach.WriteMessage(websocket.TextMessage, msg); err != nil {
			return res, fmt.Errorf("instructor step %d: %w", i+1, err)
		}
		for n := 0; n < students; n++ {
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				mu.Lock()
				defer mu.Unlock()
				return res, fmt.Errorf("step %d: only %d of %d students got the view within 10 s (the instructor's last note: %q)", i+1, n, students, lastNote)
			case <-ctx.Done():
				return res, ctx.Err()
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lat) == 0 {
		return res, errors.New("no latencies measured")
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	res.P50, res.P95, res.P99, res.Max = q(0.50), q(0.95), q(0.99), lat[len(lat)-1]
	res.MeanBytes = bytesSum / msgs
	return res, nil
}

// startRoom starts an Explorer room on the server at base and returns its
// code and instructor key.
func startRoom(ctx context.Context, base string) (code, key string, err error) {
	form := url.Values{"explorer": {"/?prompt=" + url.QueryEscape("Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, she saw a big") + "&max_tokens=64&seed=1"}}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/rooms", strings.NewReader(form.Encode()))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("start a room: %w", err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	m := regexp.MustCompile(`^/rooms/([A-Z0-9]+)/teach\?key=([0-9a-f]+)$`).FindStringSubmatch(loc)
	if m == nil {
		return "", "", fmt.Errorf("start a room: %s, location %q", resp.Status, loc)
	}
	return m[1], m[2], nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// studentCookie opens the room's page as a new student would and returns
// the signed student cookie it sets.
func studentCookie(ctx context.Context, base, code string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/rooms/"+code, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "stepthrough_student" {
			return c.Name + "=" + c.Value, nil
		}
	}
	return "", fmt.Errorf("the room's page set no student cookie (%s)", resp.Status)
}
