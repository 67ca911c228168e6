package server

import "time"

// defaultWorkTimeout is Config.WorkTimeout's default.
const defaultWorkTimeout = 30 * time.Second
