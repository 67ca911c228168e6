package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RoomView is what every follower of a classroom sees: the instructor's
// lesson step and the engine's current stage. It is rendered once per
// change and the same bytes go to every student.
type RoomView struct {
	Code string
	// Version is the version of the room's state that the view shows: the
	// one its store accepted, the same on every server showing that state
	// (without a store, the count of the room's changes).
	Version int64
	// Broadcast counts the room's sends on this server (a client or a load
	// test tells two sends of one state apart by it).
	Broadcast   int
	LessonTitle string // empty in a room started from the Explorer
	LessonStep  int
	LessonSteps int
	StepTitle   string
	Narration   []string
	Highlight   []GenToken
	Question    *RoomQuestion
	Hidden      bool // the stage waits for the class's predictions
	Explorer    Explorer
}

// RoomQuestion is a lesson question asked of the class as a poll.
type RoomQuestion struct {
	AnswerMax  int // the longest answer the server takes, in bytes (package lessons')
	Kind, Text string
	Choices    []PollChoice // empty: a free-text answer
	Revealed   bool
	Reveal     string    // the engine's answer, once revealed
	Results    []PollRow // the class's answers beside the engine's numbers, once revealed
	Total      int       // answers in
}

// PollChoice is an answer button; Vals is its ws message (JSON).
type PollChoice struct {
	Answer, Label, Vals string
}

// PollRow is one answer in a poll's histogram: Answer as data-answer
// holds it (what a student's own answer is matched with), Label as the
// row shows it (a token quoted); both valid UTF-8 (lessons.Shown, Label).
type PollRow struct {
	Answer    string
	Label     string
	Count     int
	Share     float64 // of the class's answers, 0..1
	ModelP    float64 // the model's probability at temperature 1
	HasModelP bool    // for next-token questions
	Correct   bool    // the engine's answer (or the right choice)
}

// RoomStatus says where the instructor is; everyone gets it, including
// students exploring on their own.
type RoomStatus struct {
	LessonStep, LessonSteps int
	Where                   string
	Unsaved                 bool // the store refuses writes: the room's changes wait in memory
}

// StudentBar is one student's own state: following or exploring.
type StudentBar struct {
	Exploring bool
}

// TeachStats is the instructor's view of the class.
type TeachStats struct {
	Connected, Following int
	Question             bool
	Answered             int
	Live                 []PollRow // answer counts so far (no model numbers: the screen may be projected)
	Unsaved              int       // writes waiting for the store (the room's state counts as one)
	Refused              int       // answers refused: more student ids from one address than the room allows
	PerAddress           int       // that limit
}

// StudentPage is a student's page in a room.
type StudentPage struct {
	Code   string
	Room   RoomView
	Status RoomStatus
}

// TeachPage is the instructor's page.
type TeachPage struct {
	Code        string
	Join        Join
	IsLesson    bool
	PrevStep    int // -1 at the first step
	NextStep    int // -1 at the last step
	Notes       string
	Room        RoomView
	Stats       TeachStats
	Status      RoomStatus
	Settings    Page // the settings form of a room started from the Explorer
	Expires     string
	CSVURL      string
	InstructURL string
}

// ClassroomHome is the page to start or join a room.
type ClassroomHome struct {
	Lessons []LessonLink
	Error   string
	Notice  string // a room was just ended
	Code    string
	Mine    []MyRoom // the open rooms this browser started
}

// MyRoom is a room this browser started, as the Classroom page lists it.
type MyRoom struct {
	Code, Title        string
	Step, Steps        int // Step counts from 1; Steps is 0 for a room from the Explorer
	Students, Teachers int
	Expires            time.Time
	TeachURL           string // the instructor link, key included
}

// Where says how far the room got.
func (m MyRoom) Where() string {
	if m.Steps == 0 {
		return ""
	}
	return "step " + strconv.Itoa(m.Step) + " of " + strconv.Itoa(m.Steps)
}

// Who says who is connected now.
func (m MyRoom) Who() string {
	return plural(m.Students, "student") + " and " + plural(m.Teachers, "instructor page") + " connected"
}

// Until says when the room expires unless its instructor acts.
func (m MyRoom) Until() string {
	d := time.Until(m.Expires).Round(time.Minute)
	if d < time.Minute {
		return "expires within a minute"
	}
	return "expires in " + strconv.Itoa(int(d/time.Minute)) + " min"
}

func quote(s string) string { return strconv.Quote(s) }

// lessonStepVals is the ws message that moves a room to lesson step i.
func lessonStepVals(i int) string {
	return `{"action":"lesson-step","to":"` + strconv.Itoa(i) + `"}`
}

// exportURL turns an Explorer URL (/?prompt=…) into its stage's SVG
// export URL (/export.svg?prompt=…).
func exportURL(explorerURL string) string {
	_, q, _ := strings.Cut(explorerURL, "?")
	return "/export.svg?" + q
}

// qrViewBox frames a QR code with the standard four-module quiet zone.
func qrViewBox(m [][]bool) string {
	n := len(m) + 8
	return fmt.Sprintf("-4 -4 %d %d", n, n)
}

// qrPath draws the dark modules as one SVG path, a run of dark modules in
// a row per subpath.
func qrPath(m [][]bool) string {
	var b strings.Builder
	for y, row := range m {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", start, y, x-start, x-start)
		}
	}
	return b.String()
}

// plural writes "1 answer", "2 answers".
// notDrawn says which positions the embed panel leaves out.
func notDrawn(hidden, shown int) string {
	first := "The first position is not drawn"
	if hidden > 1 {
		first = "The first " + strconv.Itoa(hidden) + " positions are not drawn"
	}
	last := "this is the last"
	if shown > 1 {
		last = "these are the last " + strconv.Itoa(shown)
	}
	return first + "; " + last + "."
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Join is how students reach a room.
type Join struct {
	Code, URL     string
	QR            [][]bool // the join URL as a QR code, modules (true = dark)
	Projector     string   // the projector view's path
	Loopback      bool     // the page was opened on a loopback address
	AllInterfaces bool     // the server listens on every interface
	LAN           []string // join links on this machine's network addresses
	Command       string   // how to serve on the network, as the README runs it (from the checkout)
	Binary        string   // the same with a built binary
	// Projected: the view the room sees; advice for the instructor (the
	// address students cannot reach) stays on the instructor's page.
	Projected bool
}
