package views

import (
	"fmt"
	"strings"
)

// LessonList is the list of lessons.
type LessonList struct {
	Lessons []LessonLink
}

// LessonLink is a lesson in the list.
type LessonLink struct {
	Name, Title, Summary, Level, Duration string
	Steps                                 int
}

// LessonPage is one step of a lesson in the self-study player.
type LessonPage struct {
	Name, Title string
	Step, Steps int
	StepTitle   string
	Narration   []string // paragraphs
	After       []string // paragraphs written after the question, once it is answered
	Prev, Next  string   // links, empty at the ends
	Self        string   // this step's link (the answer form submits to it)
	// NextLesson links the last step to the next lesson (its title
	// NextLessonTitle), or to the list after the last lesson
	NextLesson, NextLessonTitle string
	ExplorerURL                 string // this step in the Explorer; empty while its question is open (the Explorer would show the answer)
	// TryOther opens the step's prompt and settings in the Explorer on
	// another offered model (nil when there is none, or with ExplorerURL)
	TryOther    *TryOther
	Error       string
	Question    *LessonQuestion
	Current     Stage
	Panel       Panel
	Timing      Timing      // measured while playing this step
	BackendInfo string      // where the engine ran
	BackendNote string      // why the CPU ran instead of a GPU, if it did
	Generated   []GenToken  // tokens generated up to this step
	Notice      string      // what the runtime did at this step (a tool's result), or why the view moved
	Hidden      bool        // the panel waits for the student's answer
	SoFar       TextSoFar   // the text the step's question is about (empty without one)
	Highlight   []GenToken  // tokens the step points at, with their ids
	Edits       *EditEffect // the step's interventions and what they change (nil: none, or hidden with the panel)
	Versus      *Versus     // the stage under the step's other weight type (nil: none, or hidden with the panel)
	// Patching is the step's activation-patching grid (nil: the step has
	// none, or it waits for the answer with the panel); PatchingURL opens
	// the same two prompts on the Patching page.
	Patching    *PatchView
	PatchingURL string
}

// LessonQuestion is a question and, once answered, the feedback.
type LessonQuestion struct {
	Kind, Text string
	Choices    []string
	Answered   bool
	Answer     string // what the student chose or typed
	Correct    bool
	Reveal     string // what the engine says (or the right choice)
	Right      string // the engine's answer, once answered
}

// highlightStyle outlines the highlighted tokens wherever a panel shows
// them (rows and chips carry data-token-id). Ids are integers, so the rule
// needs no escaping.
func highlightStyle(hs []GenToken) string {
	var b strings.Builder
	b.WriteString("<style>")
	for i, h := range hs {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `section.panel [data-token-id="%d"]`, h.ID)
	}
	b.WriteString("{outline:3px solid var(--focus);outline-offset:-1px}</style>")
	return b.String()
}

// TryOther is "Try this on another model": the step's Explorer settings
// (every query field of its link but the model and the stage, which
// differ from model to model) and the models to choose from.
type TryOther struct {
	Model  string      // the lesson's, on which its claims are checked
	Fields [][2]string // name, value: sent as they are
	Models []string
	Labels map[string]string
}
