package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// Output formats of Render.
const (
	// FormatTable is the human table.
	FormatTable = "table"
	// FormatJSON is the Report as JSON.
	FormatJSON = "json"
)

// Render writes r in format (FormatTable or FormatJSON).
func Render(w io.Writer, r *Report, format string) error {
	switch format {
	case FormatJSON:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("plan: encode the report: %w", err)
		}
		if _, err := w.Write(escapeControls(b.Bytes())); err != nil {
			return fmt.Errorf("plan: write the report: %w", err)
		}
		return nil
	case FormatTable, "":
		return table(w, r)
	}
	return fmt.Errorf("plan: unknown output format %q (want %s or %s)", format, FormatTable, FormatJSON)
}

// table lists one line per write, under the item it is for; an item
// without writes gets one "no writes" line, so that a clean plan still
// shows what was checked.
func table(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tTARGET\tACTION\tFIELDS")
	for _, it := range r.Items {
		row := func(target, action, fields string) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(it.Kind), printable(it.Name), printable(target), printable(action), printable(fields))
		}
		for _, c := range it.Cloud {
			fields := formatFields(c.Fields)
			if c.Creates != "" {
				fields += " => " + c.Creates
			}
			row(c.Product, c.Action, strings.TrimSpace(fields))
		}
		for _, k := range it.Kubernetes {
			row("kubernetes", k.Verb+" "+k.Path, k.Body)
		}
		for _, msg := range it.Warnings {
			row("-", "warning", msg)
		}
		if it.Error != "" {
			row("-", "error", it.Error)
		}
		if len(it.Cloud)+len(it.Kubernetes)+len(it.Warnings) == 0 && it.Error == "" {
			row("-", "no writes", "")
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("plan: write the table: %w", err)
	}
	if len(r.WouldRefuse) > 0 {
		fmt.Fprintln(w)
	}
	for _, x := range r.WouldRefuse {
		fmt.Fprintf(w, "would be refused under loadBalancerReuse: %s: %s: %s\n", r.StricterPolicy, x.Service, x.Reason)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", summary(r))
	return err
}

// summary is the table's last line.
func summary(r *Report) string {
	s := fmt.Sprintf("%d cloud writes, %d Kubernetes writes over %d items", r.CloudWrites, r.KubeWrites, len(r.Items))
	if r.Errors > 0 {
		s += fmt.Sprintf("; %d items could not be planned", r.Errors)
	}
	if r.ExitCode() == ExitNoWrites {
		return s + ": nothing would be written."
	}
	return s + "."
}

// formatFields is k=v pairs in key order; values with spaces, quotes or
// non-printable characters are quoted.
func formatFields(f map[string]string) string {
	parts := make([]string, 0, len(f))
	for _, k := range slices.Sorted(maps.Keys(f)) {
		v := f[k]
		if v == "" || strings.ContainsAny(v, " \t\"") || !allPrintable(v) {
			v = strconv.Quote(v)
		}
		parts = append(parts, printable(k)+"="+v)
	}
	return strings.Join(parts, " ")
}

// printable is s, or s quoted (strconv.Quote) when it holds a character
// that is not printable: annotation values, messages and request fields
// come from users, and a terminal escape sequence or a line break must not
// reach the operator's terminal or break the table. JSON output is escaped
// by its encoder already.
func printable(s string) string {
	if allPrintable(s) {
		return s
	}
	return strconv.Quote(s)
}

// escapeControls escapes, in encoded JSON, the control characters the
// encoder leaves raw (DEL and the C1 controls U+0080-U+009F, which some
// terminals act on) as \uXXXX; the only controls outside strings are the
// indentation's line breaks, kept.
func escapeControls(js []byte) []byte {
	if !bytes.ContainsFunc(js, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }) {
		return js
	}
	var out bytes.Buffer
	for _, r := range string(js) {
		if r != '\n' && unicode.IsControl(r) {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return out.Bytes()
}

// allPrintable reports whether s is valid UTF-8 of printable characters
// and spaces only.
func allPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r != ' ' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
