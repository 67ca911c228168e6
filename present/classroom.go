package present

import (
	"stepthrough/lessons"
	"stepthrough/views"
)

// ClassroomHome is the Classroom page: the lessons to start a room with,
// the open rooms this browser started (mine), and, after a refused
// request, its error (msg) and the code typed; ended names a room just
// ended ("" for none), which the page confirms unless there is an error.
func ClassroomHome(ls map[string]*lessons.Lesson, mine []views.MyRoom, msg, code, ended string) views.ClassroomHome {
	h := views.ClassroomHome{Lessons: LessonLinks(ls), Error: msg, Code: code, Mine: mine}
	if ended != "" && msg == "" {
		h.Notice = "Room " + ended + " has ended: its code and instructor link no longer work."
	}
	return h
}

// RoomSettings is a room's settings form (the Explorer's, without its
// view) over the offered models.
func RoomSettings(models []string, settings views.Settings) views.Page {
	return views.Page{Models: models, Settings: settings}
}
