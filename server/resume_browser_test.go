package server

import (
	"context"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// An Explorer tab behind a load balancer survives its server going away:
// its connection moves to another server, which does not hold its session
// and has it reload its own address, and the page is back at the same
// run, token step and stage. Sessions need no sticky routing.
func TestExplorerResumesOnAnotherServer(t *testing.T) {
	actx := chromeAlloc(t)
	a := httptest.NewUnstartedServer(mustNew(t, Config{Embedded: lessonModels()}).Handler())
	killable := &killListener{Listener: a.Listener}
	a.Listener = killable
	a.Start()
	t.Cleanup(a.Close)
	b := httptest.NewServer(mustNew(t, Config{Embedded: lessonModels()}).Handler())
	t.Cleanup(b.Close)
	var target atomic.Pointer[url.URL]
	ua, _ := url.Parse(a.URL)
	ub, _ := url.Parse(b.URL)
	target.Store(ua)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target.Load())
		r.Out.Host = r.In.Host // the servers see the address the browser uses
	}})
	t.Cleanup(proxy.Close)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelC() })

	do(t, ctx, chromedp.Navigate(proxy.URL+"/?"+url.Values{"prompt": {"Lily saw a big dog"}, "model": {"lesson.gguf"}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`[data-action="step"]`)))
	stepUntil(t, ctx, "attention")
	before := attr(t, ctx, "#state", "data-url")

	eval[int](t, ctx, `window.beforeTheMove = 1`, false) // gone once the page reloads
	target.Store(ub)                                     // the balancer now sends everything to b
	killable.kill()                                      // as SIGKILL would: every connection, WebSockets too, cut
	reloaded := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !reloaded; time.Sleep(200 * time.Millisecond) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.beforeTheMove === undefined && !!document.querySelector("#state") && document.readyState === "complete"`))
		reloaded = err == nil && v
	}
	if !reloaded {
		t.Fatal("the page never reloaded after its server went away")
	}
	if got := attr(t, ctx, "#state", "data-url"); got != before {
		t.Fatalf("after the move the page shows %s, want %s", got, before)
	}
	if stage := attr(t, ctx, "[data-current-stage]", "data-current-stage"); stage != "attention" {
		t.Errorf("resumed at stage %s, want attention", stage)
	}
	// and it goes on from there, on b
	click(t, ctx, `[data-action="step"]`)
	waitChange(t, ctx, "#state", "data-url", before)
}

// killListener is a listener whose every accepted connection (hijacked
// ones too, which an http.Server stops tracking) can be cut at once.
type killListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *killListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.conns = append(l.conns, c)
	}
	return c, err
}

func (l *killListener) kill() {
	l.Listener.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}
