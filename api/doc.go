// Package api is Stepthrough's OpenAI-compatible HTTP API, below the
// server's routes: the wire types of /v1/chat/completions,
// /v1/completions and /v1/models, a strict request decoder whose errors
// are OpenAI's error objects, how a model's prompt is built (its own chat
// template, or the lesson model's tool dialect), and the generation loop
// (stop sequences that match across token boundaries and are never
// streamed, log-probabilities, tool calls) that streams deltas as tokens
// are produced. Requests run on the same engine as the Explorer.
package api
