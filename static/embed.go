// Package static holds the browser assets: the stylesheet, the small
// script for what HTML cannot do (keyboard shortcuts, play/pause, keeping
// the URL current, hover read-outs), and the pinned htmx files that
// `npm ci` copies into vendor/.
package static

import (
	"embed"
	"io/fs"
)

//go:embed app.css app.js serving.js models.js favicon.svg vendor
var files embed.FS

// FS is the asset tree served under /static/.
var FS fs.FS = files

// Missing names the vendored files absent from this build, with the command
// that fetches them; empty when all are present.
func Missing() string {
	for _, f := range []string{"vendor/htmx.min.js", "vendor/ws.min.js"} {
		if _, err := fs.Stat(files, f); err != nil {
			return "front-end assets missing (" + f + "): run `npm ci --prefix static --no-audit --no-fund` and rebuild (the README's run command does both)"
		}
	}
	return ""
}
