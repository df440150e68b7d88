package version

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func buildInfo(mainVersion string, settings map[string]string, deps ...*debug.Module) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/alicloud-ccm/alicloud-ccm", Version: mainVersion}, Deps: deps}
	for k, v := range settings {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
	}
	return bi
}

func TestResolve(t *testing.T) {
	k8s := &debug.Module{Path: "k8s.io/client-go", Version: "v0.36.3"}
	vcs := map[string]string{"vcs.revision": "1f2628baeea9c0ffee", "vcs.time": "2026-11-25T03:08:46Z", "vcs.modified": "false"}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{"stamped wins", "v0.1.0", "abc1234", "2026-11-25T04:40:00Z", buildInfo("(devel)", vcs, k8s),
			"v0.1.0 (commit abc1234, built 2026-11-25T04:40:00Z, kubernetes libraries v0.36.3, go1.26.8)"},
		{"build info", "", "", "", buildInfo("(devel)", vcs, k8s),
			"v0.0.0-dev (commit 1f2628b, built 2026-11-25T03:08:46Z, kubernetes libraries v0.36.3, go1.26.8)"},
		{"dirty tree, pseudo-version", "", "", "", buildInfo("v0.0.0-20261125030846-1f2628baeea9+dirty",
			map[string]string{"vcs.revision": "1f2628baeea9", "vcs.modified": "true"}),
			"v0.0.0-dev (commit 1f2628b-dirty, go1.26.8)"},
		{"module version (go install @v0.2.0)", "", "", "", buildInfo("v0.2.0", nil,
			&debug.Module{Path: "k8s.io/cloud-provider", Version: "v0.36.0", Replace: &debug.Module{Path: "../cp", Version: "v0.36.1"}}),
			"v0.2.0 (commit unknown, kubernetes libraries v0.36.1, go1.26.8)"},
		{"nothing", "", "", "", nil, "v0.0.0-dev (commit unknown, "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.version, tc.commit, tc.date, tc.bi).String()
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	got := Line("alicloud-ccm")
	if !regexp.MustCompile(`^alicloud-ccm v\S+ \(commit \S+(, built \S+)?(, kubernetes libraries v\S+)?, go\S+\)$`).MatchString(got) {
		t.Errorf("Line = %q", got)
	}
}
