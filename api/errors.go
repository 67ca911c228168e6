package api

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error is an API error as OpenAI writes it: an HTTP status and the
// "error" object (message, type, param, code).
type Error struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *Error) Error() string { return e.Message }

// JSON is the response body: {"error": {...}}.
func (e *Error) JSON() []byte {
	b, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	return b
}

func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// invalid is a 400 naming the parameter at fault.
func invalid(param, format string, a ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, a...), Type: "invalid_request_error", Param: str(param)}
}

// Errors the server writes.
func NotFoundModel(name string, offered []string) *Error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("The model %q does not exist (offered: %v)", name, offered),
		Type: "invalid_request_error", Param: str("model"), Code: str("model_not_found")}
}

// ModelUnavailable is an offered model that the server cannot load (its
// file is broken): 503, naming the model by its name; another model may
// serve.
func ModelUnavailable(name string, err error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("The model %q is offered but cannot be loaded (%v): choose another model", name, err),
		Type: "model_unavailable", Param: str("model"), Code: str("model_unavailable")}
}

// NonFinite is a pass of the model that computed logits that are not
// finite numbers (its weights overflow float32 on this prompt): nothing
// can be sampled from them, and the model is unusable here, as one whose
// file is broken (503); the message names where the overflow began.
func NonFinite(name string, err error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("The model %q cannot answer this prompt: %v", name, err),
		Type: "model_unavailable", Param: str("model"), Code: str("non_finite_logits")}
}

// Unauthorized is a missing or wrong API key.
func Unauthorized() *Error {
	return &Error{Status: http.StatusUnauthorized, Message: "Incorrect or missing API key: send Authorization: Bearer KEY (serve --api-key)",
		Type: "invalid_request_error", Code: str("invalid_api_key")}
}

// TooMany is a request beyond the concurrent limit.
func TooMany(limit int) *Error {
	return &Error{Status: http.StatusTooManyRequests, Message: fmt.Sprintf("Too many concurrent requests (the limit is %d): retry shortly", limit),
		Type: "requests", Code: str("rate_limit_exceeded")}
}

// TooLarge is a body over the limit.
func TooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("The request body exceeds %d bytes", limit), Type: "invalid_request_error"}
}

// ContextExceeded is a prompt and completion that do not fit.
func ContextExceeded(prompt, max, ctx int) *Error {
	return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("This model's context is %d tokens; the prompt is %d and max_tokens %d", ctx, prompt, max),
		Type: "invalid_request_error", Param: str("messages"), Code: str("context_length_exceeded")}
}

// Internal is a failure of the server's own.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Message: "The engine failed: " + err.Error(), Type: "server_error"}
}
