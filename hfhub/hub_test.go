package hfhub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/hfhub/hubtest"
)

// newHub is a fake Hub whose resolve URLs redirect to http://cdn.test,
// and a client with an empty cache reaching it as http://hub.test: two
// host names, as huggingface.co and its CDN.
func newHub(t *testing.T) (*hubtest.Hub, *Client) {
	hub := hubtest.New(t)
	hub.RedirectTo("http://cdn.test")
	return hub, clientOf(t, hub)
}

// clientOf is a client of the hub with an empty cache.
func clientOf(t *testing.T, hub *hubtest.Hub) *Client {
	addrs := map[string]string{"hub.test:80": hub.API.Listener.Addr().String(), "cdn.test:80": hub.CDN.Listener.Addr().String()}
	dial := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		a, ok := addrs[addr]
		if !ok {
			return nil, fmt.Errorf("the test reaches only hub.test and cdn.test, not %s", addr)
		}
		return dial.DialContext(ctx, network, a)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{Endpoint: "http://hub.test", Cache: Cache{t.TempDir()}, Transport: tr, Backoff: time.Millisecond}
}

// cdnRanges are the Range headers of the CDN's requests since the last
// look.
func cdnRanges(hub *hubtest.Hub) []string {
	var ranges []string
	for _, r := range hub.Requests() {
		if r.Server == "cdn" {
			ranges = append(ranges, r.Range)
		}
	}
	return ranges
}

// ggufModel is a small model the engine runs, as a GGUF file's bytes
// (about 180 KB); seed varies its weights.
func ggufModel(t *testing.T, seed uint64) []byte {
	t.Helper()
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

// ggufOf is a model of an architecture the engine does not run, written
// by the same writer.
func ggufOf(t *testing.T, arch string) []byte {
	t.Helper()
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	w.MustSet("general.architecture", arch)
	return w.Bytes()
}

// withType is a model whose token_embd.weight is declared of a ggml type
// id the engine does not run (10: Q2_K), its header patched in place.
func withType(t *testing.T, data []byte, typ uint32) []byte {
	t.Helper()
	name := []byte("token_embd.weight")
	at := bytes.Index(data, name)
	if at < 8 || binary.LittleEndian.Uint64(data[at-8:]) != uint64(len(name)) {
		t.Fatal("no token_embd.weight tensor info")
	}
	dims := int(binary.LittleEndian.Uint32(data[at+len(name):]))
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint32(out[at+len(name)+4+8*dims:], typ)
	return out
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
