package lessons

import (
	"fmt"

	"stepthrough/engine/model"
	"stepthrough/engine/speculative"
)

// Check validates a lesson against the model it names: every highlighted
// token and next-token choice is one token of the vocabulary, layers and
// heads exist, interventions name layers, heads and units the model has,
// a self draft has fewer layers than the model, and prompts fit the
// context.
func Check(l *Lesson, m *model.Model) error {
	c, tk := m.Config, m.Tokenizer
	oneToken := func(s *Step, what, text string) error {
		if ids := tk.EncodeIDs(text, false); len(ids) != 1 {
			return &Error{l.File, s.Line, fmt.Sprintf("%s %q is %d tokens in %s; use text that is one token", what, text, len(ids), l.Model)}
		}
		return nil
	}
	for i := range l.Steps {
		s := &l.Steps[i]
		if n := len(tk.EncodeIDs(s.Run.Prompt, true)); n+s.Token >= c.ContextLen {
			return &Error{l.File, s.Line, fmt.Sprintf("the prompt is %d tokens; with %d more it does not fit the context of %d", n, s.Token, c.ContextLen)}
		}
		if s.Patch != "" {
			if n, m := len(tk.EncodeIDs(s.Run.Prompt, true)), len(tk.EncodeIDs(s.Patch, true)); n != m {
				return &Error{l.File, s.Line, fmt.Sprintf("patch %q is %d tokens in %s and the step's prompt %d: patching needs prompts of the same length", s.Patch, m, l.Model, n)}
			}
		}
		if s.Layer > c.Layers {
			return &Error{l.File, s.Line, fmt.Sprintf("layer %d: %s has %d layers", s.Layer, l.Model, c.Layers)}
		}
		if n, self, err := speculative.SelfLayers(s.Run.Draft); err != nil || self && n >= c.Layers {
			return &Error{l.File, s.Line, fmt.Sprintf("draft %q: a self draft runs the first 1 to %d of %s's %d layers", s.Run.Draft, c.Layers-1, l.Model, c.Layers)}
		}
		if s.Head > c.Heads {
			return &Error{l.File, s.Line, fmt.Sprintf("head %d: %s has %d heads", s.Head, l.Model, c.Heads)}
		}
		if err := checkEdits(s, c); err != nil {
			return &Error{l.File, s.Line, fmt.Sprintf("%v in %s", err, l.Model)}
		}
		for _, h := range s.Highlight {
			if err := oneToken(s, "highlight", h); err != nil {
				return err
			}
		}
		for _, cl := range s.Claims {
			switch cl.Kind {
			case "top", "p", "draws", "attends", "rejects":
				if ids := tk.EncodeSpecial(cl.Text, false); len(ids) != 1 {
					return &Error{l.File, cl.Line, fmt.Sprintf("expect %s %q: that is %d tokens in %s; claim one token", cl.Kind, cl.Text, len(ids), l.Model)}
				}
			}
			if cl.Kind == "attends" && (s.Layer == 0 || s.Head == 0) {
				return &Error{l.File, cl.Line, "expect attends: the step needs layer: and head:"}
			}
			if (cl.Kind == "accepts" || cl.Kind == "rejects") && (s.Run.Draft == "" || s.Token == 0) {
				return &Error{l.File, cl.Line, fmt.Sprintf("expect %s: the step needs draft: and a token: from 1 (a speculative round)", cl.Kind)}
			}
		}
		if q := s.Question; q != nil && q.Kind == "next-token" {
			for _, ch := range q.Choices {
				if err := oneToken(s, "choice", ch); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkEdits refuses a step's ablations and steering (claims or not) that
// name a layer, head or unit the model lacks.
func checkEdits(s *Step, c *model.Config) error {
	return s.Run.Interventions().Check(c.EditShape())
}
