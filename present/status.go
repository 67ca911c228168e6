package present

import (
	"fmt"

	"stepthrough/engine/tokenizer"
	"stepthrough/lessons"
	"stepthrough/session"
	"stepthrough/views"
)

// Highlights are a lesson step's highlighted tokens with their ids in tk
// (lessons.Check keeps each a single token of the lesson's model); nil
// before a run (tk nil).
func Highlights(tk *tokenizer.Tokenizer, st lessons.Step) []views.GenToken {
	if tk == nil {
		return nil
	}
	var out []views.GenToken
	for _, h := range st.Highlight {
		if ids := tk.EncodeIDs(h, false); len(ids) == 1 {
			out = append(out, views.GenToken{ID: ids[0], Bytes: h})
		}
	}
	return out
}

// Where says where the viewer is, for a status line: "token step 2,
// stage L1 attn"; empty before a run.
func Where(sn *session.Snapshot) string {
	if len(sn.Cursor.Steps) == 0 {
		return ""
	}
	step, _ := sn.Cursor.Position()
	st, stage := sn.Cursor.Current()
	return fmt.Sprintf("token step %d, stage %s", step+1, labelOf(st, stage))
}
