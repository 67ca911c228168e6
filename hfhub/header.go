package hfhub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
)

// UnsupportedError is a file refused from its header before its bytes
// were fetched: the engine could not run it.
type UnsupportedError struct {
	File string
	Size int64
	Err  error
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s is not fetched (%s): the engine cannot run it: %v", e.File, Size(e.Size), e.Err)
}

func (e *UnsupportedError) Unwrap() error { return e.Err }

// checkHeader reads the head of a GGUF file with range requests (HeadBytes,
// doubled while the tensor infos go on, up to MaxHeadBytes) and refuses,
// with an *UnsupportedError, a file the engine cannot run: model.Check's
// verdict on gguf.ParseHeader's reading, the checks model.Load makes
// before it reads the weights.
func (c *Client) checkHeader(ctx context.Context, r remote) error {
	n, limit := cmp.Or(c.HeadBytes, 4<<20), cmp.Or(c.MaxHeadBytes, 64<<20)
	var head []byte
	for {
		want := min(n, r.Size)
		more, err := c.readRange(ctx, r, int64(len(head)), want)
		if err != nil {
			return err
		}
		head = append(head, more...)
		f, err := gguf.ParseHeader(head, r.Size)
		switch {
		case errors.Is(err, gguf.ErrShortHeader) && want < r.Size && n < limit:
			n = min(2*n, limit)
			continue
		case errors.Is(err, gguf.ErrShortHeader):
			return &UnsupportedError{r.File, r.Size, fmt.Errorf("its GGUF header goes on past its first %s, more than a header this tool reads", Size(want))}
		case err != nil:
			if fe := (*gguf.FormatError)(nil); errors.As(err, &fe) && strings.Contains(fe.Msg, "unsupported type") {
				err = fmt.Errorf("%w (the engine runs the tensor types %s)", err, typeNames())
			}
			return &UnsupportedError{r.File, r.Size, err}
		}
		if err := model.Check(f); err != nil {
			return &UnsupportedError{r.File, r.Size, err}
		}
		return nil
	}
}

// readRange reads bytes [from, to) of the file (Range: bytes=FROM-TO-1);
// a server that answers 200 is read from the start and the bytes before
// from dropped.
func (c *Client) readRange(ctx context.Context, r remote, from, to int64) ([]byte, error) {
	if from >= to {
		return nil, nil
	}
	what := fmt.Sprintf("read the header of %s/%s", r.Repo, r.File)
	var out []byte
	err := c.retry(ctx, func() (bool, bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
		if err != nil {
			return false, false, fmt.Errorf("%s: %w", what, err)
		}
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, to-1))
		resp, err := c.http.Do(req)
		if err != nil {
			return false, ctx.Err() == nil, fmt.Errorf("%s: %w", what, err)
		}
		defer resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusPartialContent:
			if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != from {
				return false, false, fmt.Errorf("%s: asked for the bytes from %d, the server sent %.80q", what, from, resp.Header.Get("Content-Range"))
			}
		case http.StatusOK:
			if _, err := io.CopyN(io.Discard, resp.Body, from); err != nil {
				return false, ctx.Err() == nil, fmt.Errorf("%s: %w", what, err)
			}
		default:
			return false, retryable(resp.StatusCode), c.statusError(what, r.Repo, resp)
		}
		out, err = io.ReadAll(io.LimitReader(resp.Body, to-from))
		if err == nil && int64(len(out)) < to-from {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return false, ctx.Err() == nil, fmt.Errorf("%s: %w", what, err)
		}
		return false, false, nil
	})
	return out, err
}
