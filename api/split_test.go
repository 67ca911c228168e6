package api

import (
	"strings"
	"testing"

	"stepthrough/engine/stop"
)

// The splitter's releases, token by token, for replies cut at every byte:
// a stop sequence split across tokens is matched and never released, tags
// are never half-released, reasoning and tool calls are separated.
func TestSplitter(t *testing.T) {
	tests := []struct {
		name      string
		reply     string
		stops     []string
		dialect   *Dialect
		forced    bool
		content   string
		reasoning string
		call      string // the call's arguments
		finish    string
	}{
		{"stop across tokens", "Paris. France is in Europe.", []string{" France"}, nil, false, "Paris.", "", "", "stop"},
		{"two stops, the earlier wins", "a b c d", []string{"c", " b"}, nil, false, "a", "", "", "stop"},
		{"no stop", "Paris.", []string{"xyz"}, nil, false, "Paris.", "", "", ""},
		{"a stop's prefix at the end is released", "ab", []string{"bc"}, nil, false, "ab", "", "", ""},
		{"reasoning", "<think>7+5=12, so 2 carry 1</think>The sum is 12.", nil, nil, false, "The sum is 12.", "7+5=12, so 2 carry 1", "", ""},
		{"a lesson call", "Let me see.<calc>347+85</calc>", nil, Lesson, false, "Let me see.", "", `{"expression":"347+85"}`, "tool_calls"},
		{"a forced call", "347+85</calc>", nil, Lesson, true, "", "", `{"expression":"347+85"}`, "tool_calls"},
		{"an unclosed call is text", "<calc>347+", nil, Lesson, false, "<calc>347+", "", "", ""},
		{"a hermes call", "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>", nil, Hermes, false, "", "", `{"zone": "UTC"}`, "tool_calls"},
		{"tags without a dialect are text", "<calc>1+2</calc>", nil, nil, false, "<calc>1+2</calc>", "", "", ""},
		{"utf-8 split across tokens", "héllo wörld", []string{"wö"}, nil, false, "héllo ", "", "", "stop"},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 3, 5, 100} {
			p := &Prompt{Dialect: tt.dialect, Reasoning: true}
			if tt.forced {
				p.Forced = "<calc>"
			}
			sp := newSplitter(tt.stops, p)
			var content, reasoning strings.Builder
			var released []string
			done := false
			b := []byte(tt.reply)
			for i := 0; i < len(b) && !done; i += size {
				var d Delta
				d, done = sp.push(b[i:min(i+size, len(b))])
				content.WriteString(d.Content)
				reasoning.WriteString(d.Reasoning)
				released = append(released, d.Content)
			}
			if !done {
				d := sp.flush()
				content.WriteString(d.Content)
				reasoning.WriteString(d.Reasoning)
			}
			if content.String() != tt.content || reasoning.String() != tt.reasoning || (done && sp.finish != tt.finish) || (!done && tt.finish != "") {
				t.Errorf("%s (tokens of %d bytes): content %q reasoning %q finish %q done %v; want %q %q %q", tt.name, size, content.String(), reasoning.String(), sp.finish, done, tt.content, tt.reasoning, tt.finish)
			}
			if tt.call != "" && (sp.call == nil || sp.call.Arguments != tt.call) {
				t.Errorf("%s (tokens of %d bytes): call %+v, want arguments %s", tt.name, size, sp.call, tt.call)
			}
			for _, r := range released {
				if !strings.HasPrefix(tt.content, "") || strings.ContainsRune(r, '\uFFFD') {
					t.Errorf("%s: released a broken character in %q", tt.name, r)
				}
			}
		}
	}
}

// FuzzSplitter: whatever the reply and the token boundaries, neither the
// content nor the reasoning the splitter releases holds a stop sequence;
// a plain reply (no reasoning, no dialect) is
// released exactly as the engine's stop matcher releases it.
func FuzzSplitter(f *testing.F) {
	f.Add("<think>a</think>b\n\nc", "\n\n", 3, true)
	f.Add("Paris. France", " France", 1, false)
	f.Add("héllo", "l", 2, true)
	f.Fuzz(func(t *testing.T, reply, stopText string, n int, reasoning bool) {
		if n < 1 || n > 64 || len(reply) > 512 || stopText == "" {
			return
		}
		sp := newSplitter([]string{stopText}, &Prompt{Reasoning: reasoning})
		m := stop.New([]string{stopText})
		var reasoningText, got, want strings.Builder
		add := func(d Delta) { reasoningText.WriteString(d.Reasoning); got.WriteString(d.Content) }
		ended := false
		for i := 0; i < len(reply) && !ended; i += n {
			piece := []byte(reply[i:min(len(reply), i+n)])
			d, done := sp.push(piece)
			add(d)
			w, _ := m.Push(piece)
			want.WriteString(w)
			ended = done
		}
		if !ended {
			add(sp.flush())
			want.WriteString(m.Flush())
		}
		out := got.String()
		if strings.Contains(out, stopText) || strings.Contains(reasoningText.String(), stopText) {
			t.Fatalf("released %q and reasoning %q: one holds the stop %q", out, reasoningText.String(), stopText)
		}
		if !reasoning && (out != want.String() || reasoningText.Len() > 0) {
			t.Fatalf("splitter %q, matcher %q", out, want.String())
		}
	})
}
