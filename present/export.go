package present

import (
	"fmt"
	"strconv"

	"stepthrough/spec"
	"stepthrough/views"
)

// StageExport is one stage of the Explorer view e (of run) as a handout:
// its panel, a title naming the token step, and a caption with the
// prompt, the settings and the text generated so far.
func StageExport(run spec.Run, e views.Explorer) views.StageExport {
	form := Form(run)
	return views.StageExport{Current: e.Current, Panel: e.Panel,
		Title: fmt.Sprintf("%s — token step %d of %d", Title(e.Current), e.Step+1, e.Steps),
		Caption: []string{
			"Prompt: " + strconv.Quote(run.Prompt),
			fmt.Sprintf("Model %s · temperature %s · top-k %s · top-p %s · min-p %s · order %s · seed %s", run.Model, form.Temperature, form.TopK, form.TopP, form.MinP, form.Order, e.Seed),
			"Generated so far: " + generatedText(e.Generated),
		}}
}

func generatedText(gs []views.GenToken) string {
	var b []byte
	for _, g := range gs {
		b = append(b, g.Bytes...)
	}
	return strconv.Quote(string(b))
}
