package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseCreated(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Unix(0, 0).UTC(), false},
		{"@1764040000", time.Unix(1764040000, 0).UTC(), false},
		{"1764040000", time.Unix(1764040000, 0).UTC(), false},
		{"2026-11-25T04:30:00Z", time.Date(2026, 11, 25, 4, 30, 0, 0, time.UTC), false},
		{"2026-11-25T06:30:00+02:00", time.Date(2026, 11, 25, 4, 30, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
	} {
		got, err := parseCreated(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseCreated(%q) error %v, want error: %v", tc.in, err, tc.wantErr)
			continue
		}
		if !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("parseCreated(%q) = %s, want %s in UTC", tc.in, got, tc.want)
		}
	}
}

// TestRejectsBadFlags fails before building anything.
func TestRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--components", "kubelet"}, `unknown image "kubelet"`},
		{[]string{"--platforms", "linux/amd64,/"}, "--platforms"},
		{[]string{"--platforms", "windows/amd64"}, "not linux/ARCH"},
		{[]string{"--created", "soon"}, "--created"},
	} {
		err := run(context.Background(), tc.args, io.Discard, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}
