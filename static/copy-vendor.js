// Copies the pinned front-end files from node_modules into vendor/, which
// the Go binary embeds (static/embed.go). Run by `npm ci` (postinstall).
const fs = require("fs");
const path = require("path");
const files = {
  "htmx.min.js": "node_modules/htmx.org/dist/htmx.min.js",
  "ws.min.js": "node_modules/htmx-ext-ws/dist/ws.min.js",
};
fs.mkdirSync(path.join(__dirname, "vendor"), { recursive: true });
for (const [dst, src] of Object.entries(files)) {
  fs.copyFileSync(path.join(__dirname, src), path.join(__dirname, "vendor", dst));
}
