package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool's schema is compiled with no loader: a reference to a file, a
// URL or a relative path is refused with the same sentence whether or not
// the thing exists, so nothing about the server's files leaks (the
// compiler's default loader used to open file: URLs).
func TestSchemaReferencesStayInside(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"password": "hunter2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if err := os.WriteFile(filepath.Join(wd, "testdata-rel.json"), []byte(`{"type": "string"}`), 0o600); err == nil {
		t.Cleanup(func() { os.Remove(filepath.Join(wd, "testdata-rel.json")) })
	}
	refused := []struct{ name, schema string }{
		{"an existing file", `{"type": "object", "properties": {"a": {"$ref": "file://` + secret + `"}}}`},
		{"a missing file", `{"type": "object", "properties": {"a": {"$ref": "file://` + filepath.Join(dir, "none.json") + `"}}}`},
		{"a relative path", `{"type": "object", "properties": {"a": {"$ref": "testdata-rel.json"}}}`},
		{"stdin", `{"type": "object", "properties": {"a": {"$ref": "file:///dev/stdin"}}}`},
		{"a URL", `{"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:1/x.json"}}}`},
		{"a dynamic reference", `{"type": "object", "properties": {"a": {"$dynamicRef": "file://` + secret + `"}}}`},
		{"a meta-schema file", `{"$schema": "file://` + secret + `", "type": "object"}`},
		{"a nested $id", `{"type": "object", "properties": {"a": {"$id": "file://` + dir + `/", "$ref": "#"}}}`},
	}
	var first string
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			err := validSchema(json.RawMessage(c.schema))
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "password") {
				t.Errorf("the error shows the file: %v", err)
			}
			if c.name == "an existing file" || c.name == "a missing file" {
				msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), "none.json", "X"), "secret.json", "X")
				if first == "" {
					first = msg
				} else if msg != first {
					t.Errorf("an existing file and a missing one answer differently:\n%s\n%s", first, msg)
				}
			}
		})
	}
	for _, ok := range []string{
		`{"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number"}}}`,
		`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"n": {"type": "number"}}, "properties": {"a": {"$ref": "#/definitions/n"}}}`,
	} {
		if err := validSchema(json.RawMessage(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// Nesting, size and the count of values are bounded before compiling
// (a deeply nested schema cost seconds of CPU and hundreds of MiB).
func TestSchemaBounds(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat(`{"type": "object", "properties": {"a": `, n) + `{"type": "string"}` + strings.Repeat(`}}`, n)
	}
	cases := []struct {
		name, schema, want string
	}{
		{"deep", nested(600), "nested more than"},
		{"just too deep", nested(MaxSchemaDepth/2 + 1), "nested more than"},
		{"big", `{"type": "object", "description": "` + strings.Repeat("x", MaxSchemaBytes) + `"}`, "bytes; the limit is"},
		{"many values", `{"type": "object", "enum": [` + strings.TrimSuffix(strings.Repeat("1,", MaxSchemaNodes+1), ",") + `]}`, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := validSchema(json.RawMessage(c.schema))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	if err := validSchema(json.RawMessage(nested(MaxSchemaDepth/2 - 1))); err != nil {
		t.Errorf("a schema within the bounds: %v", err)
	}
}

// BenchmarkSchemaWorst compiles the costliest schema the bounds allow:
// the deepest nesting, then as many values as fit.
func BenchmarkSchemaWorst(b *testing.B) {
	n := MaxSchemaDepth/2 - 1
	s := strings.Repeat(`{"type": "object", "properties": {"a": `, n) + `{"type": "string"}` + strings.Repeat(`}}`, n)
	s = s[:len(s)-1] + `, "enum": [` + strings.TrimSuffix(strings.Repeat("1,", 3000), ",") + `]}`
	if err := validSchema(json.RawMessage(s)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		validSchema(json.RawMessage(s))
	}
}

// FuzzToolSchema: any parameters either compile within the bounds or are
// refused with a sentence; a reference outside the schema is never
// accepted (nothing is loaded), and nothing panics.
func FuzzToolSchema(f *testing.F) {
	for _, s := range []string{
		`{"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number"}}}`,
		`{"$ref": "file:///etc/passwd"}`, `{"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "x.json"}`,
		`{"allOf": [{"$ref": "#"}], "$id": "urn:x"}`, `{"properties": {"p": {"pattern": "a{1000}"}}}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := validSchema(json.RawMessage(raw))
		if err == nil && (len(raw) > MaxSchemaBytes || externalRef(raw)) {
			t.Fatalf("accepted %s", raw)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("an empty error")
		}
	})
}

// externalRef reports a $ref in raw that does not start with "#".
func externalRef(raw []byte) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "$ref" || k == "$dynamicRef") && !strings.HasPrefix(s, "#") {
					return true
				}
				if walk(x) {
					return true
				}
			}
		case []any:
			for _, x := range v {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
