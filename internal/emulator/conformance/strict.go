// Package conformance measures the emulator's responses against the
// official SDK's response models. The SDKs decode JSON leniently (a number
// fits a string field, unknown fields vanish), so a response they accept can
// still differ from what the real API sends; Check decodes strictly instead.
package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Mismatch is one place where a response differs from its model.
type Mismatch struct {
	// Path locates the value, e.g. Listeners[].TCPListenerConfig.HealthCheck;
	// array indexes are written [] so that one difference in many items is
	// one path.
	Path string
	// Problem says what differs, e.g. "string where the model has bool".
	Problem string
}

// String renders the mismatch as "path: problem".
func (m Mismatch) String() string { return m.Path + ": " + m.Problem }

// Result is what Check found in one response.
type Result struct {
	// Fields counts the object members checked, at every depth.
	Fields int
	// Mismatches lists each distinct difference once, sorted by path.
	Mismatches []Mismatch
}

// Check decodes a JSON response strictly against model, the Go type of the
// SDK's response (a struct, or a pointer to one): every member must be a
// field the model names (by its json tag, exactly) and carry the JSON type
// of that field's Go type, recursively through objects and arrays.
func Check(data []byte, model reflect.Type) (Result, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Result{}, fmt.Errorf("decode response: %w", err)
	}
	c := &checker{seen: map[Mismatch]bool{}}
	c.walk("", v, model)
	sort.Slice(c.res.Mismatches, func(i, j int) bool {
		a, b := c.res.Mismatches[i], c.res.Mismatches[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Problem < b.Problem
	})
	return c.res, nil
}

type checker struct {
	res  Result
	seen map[Mismatch]bool
}

func (c *checker) fail(path, format string, args ...any) {
	m := Mismatch{Path: path, Problem: fmt.Sprintf(format, args...)}
	if path == "" {
		m.Path = "(root)"
	}
	if !c.seen[m] {
		c.seen[m] = true
		c.res.Mismatches = append(c.res.Mismatches, m)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// jsonKind names the JSON type a Go type decodes from, as the problems
// report it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return t.Kind().String()
}

func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func (c *checker) walk(path string, v any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return
	}
	want := jsonKind(t)
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := structFields(t)
			for _, k := range sortedKeys(x) {
				c.res.Fields++
				ft, ok := fields[k]
				if !ok {
					c.fail(join(path, k), "not in the model (%s)", t.Name())
					continue
				}
				c.walk(join(path, k), x[k], ft)
			}
		case reflect.Map:
			for _, k := range sortedKeys(x) {
				c.res.Fields++
				c.walk(join(path, k), x[k], t.Elem())
			}
		default:
			c.fail(path, "object where the model has %s", want)
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			c.fail(path, "array where the model has %s", want)
			return
		}
		for _, e := range x {
			c.walk(path+"[]", e, t.Elem())
		}
	case json.Number:
		switch want {
		case "integer":
			if strings.ContainsAny(x.String(), ".eE") {
				c.fail(path, "non-integer number %s where the model has integer", x)
			}
		case "number":
		default:
			c.fail(path, "number where the model has %s", want)
		}
	default:
		if got := valueKind(v); got != want {
			c.fail(path, "%s where the model has %s", got, want)
		}
	}
}

// structFields maps the JSON names of a struct's exported fields to their
// types; untagged embedded structs contribute their own fields, as
// encoding/json treats them (the SDK embeds *responses.BaseResponse, whose
// fields are unexported and so contribute none).
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range structFields(et) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
