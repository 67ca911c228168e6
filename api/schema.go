package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds on one tool's parameters schema. A schema is compiled while the
// request is decoded, so its cost must be bounded before compiling:
// nesting and size are what make a compiler's work grow (a deeply nested
// schema costs time and memory well beyond its bytes).
const (
	MaxSchemaBytes = 32 << 10 // a tool's parameters, as sent
	MaxSchemaDepth = 32       // JSON nesting levels
	MaxSchemaNodes = 4096     // JSON values in all
)

// errExternal is the only answer a tool's schema gets for a reference
// outside itself: nothing is read from files or the network.
var errExternal = errors.New("only references inside the schema (such as #/$defs/name) are allowed")

// noLoader loads no resource: the compiler's default would open file:
// URLs, so a "$ref" could read the server's files.
type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errExternal }

// schemaBase is the schema's own address: absolute and in no scheme a
// loader serves, so a relative reference cannot resolve to a file.
const schemaBase = "urn:stepthrough:tool-parameters"

// validSchema checks a tool's parameters: within the bounds above, an
// object, references only inside itself, and a valid JSON Schema (draft
// 2020-12 unless it names another draft).
func validSchema(raw json.RawMessage) error {
	if len(raw) > MaxSchemaBytes {
		return fmt.Errorf("%d bytes; the limit is %d", len(raw), MaxSchemaBytes)
	}
	if err := checkShape(raw); err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if _, ok := doc.(map[string]any); !ok {
		return errors.New("it must be an object")
	}
	if err := localRefs(doc, 0); err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaBase, doc); err != nil {
		return err
	}
	_, err = c.Compile(schemaBase)
	return err
}

// checkShape walks the JSON tokens once, refusing nesting deeper than
// MaxSchemaDepth or more than MaxSchemaNodes values, before anything
// builds a tree of it.
func checkShape(raw []byte) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	depth, nodes := 0, 0
	for {
		t, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth > MaxSchemaDepth {
				return fmt.Errorf("nested more than %d levels deep", MaxSchemaDepth)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
			continue
		}
		if nodes++; nodes > MaxSchemaNodes {
			return fmt.Errorf("more than %d values", MaxSchemaNodes)
		}
	}
}

// localRefs refuses a reference, a meta-schema or an $id that would make
// the compiler look outside the schema.
func localRefs(v any, depth int) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			s, isStr := x.(string)
			switch {
			case (k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef") && isStr && !strings.HasPrefix(s, "#"):
				return fmt.Errorf("%s %.80q: %w", k, s, errExternal)
			case k == "$schema" && isStr && !knownDraft(s):
				return fmt.Errorf("$schema %.80q: name a JSON Schema draft (such as https://json-schema.org/draft/2020-12/schema) or leave it out", s)
			case k == "$id" && isStr && depth > 0:
				return fmt.Errorf("$id %.80q: only the top level may set $id", s)
			}
			if err := localRefs(x, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := localRefs(x, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// knownDraft reports a meta-schema the compiler carries itself.
func knownDraft(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
	switch s {
	case "json-schema.org/draft/2020-12/schema", "json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-04/schema",
		"json-schema.org/schema":
		return true
	}
	return false
}
