// Package version reports which build of alicloud-ccm is running: the
// version, commit and build date stamped by the Makefile with -ldflags -X,
// else read from the Go build information (module version, vcs.revision,
// vcs.time), and the Kubernetes library version the binary links.
//
//	go build -ldflags "-X github.com/alicloud-ccm/alicloud-ccm/internal/version.Version=v0.1.0 \
//	    -X github.com/alicloud-ccm/alicloud-ccm/internal/version.Commit=abc1234 \
//	    -X github.com/alicloud-ccm/alicloud-ccm/internal/version.BuildDate=2026-11-25T04:40:00Z" ./cmd/...
package version

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by -ldflags -X; empty means "read the build information".
var (
	// Version is the release, e.g. v0.1.0 (git describe --tags --dirty).
	Version string
	// Commit is the short git commit the binary was built from.
	Commit string
	// BuildDate is when the binary was built, RFC 3339 in UTC.
	BuildDate string
)

// DevVersion is the version of a build that is neither stamped nor built
// from a module version.
const DevVersion = "v0.0.0-dev"

// kubernetesModules are the Kubernetes library modules whose version is
// reported, first found wins.
var kubernetesModules = []string{"k8s.io/cloud-provider", "k8s.io/client-go", "k8s.io/component-base", "k8s.io/apimachinery"}

// Info is the resolved version information of this binary.
type Info struct {
	// Version is the release (DevVersion when unknown).
	Version string
	// Commit is the short git commit, with "-dirty" for a modified tree
	// when read from the build information; empty when unknown.
	Commit string
	// BuildDate is the stamped build date, else the commit time from the
	// build information; empty when unknown.
	BuildDate string
	// Kubernetes is the version of the linked Kubernetes libraries, e.g.
	// v0.36.3; empty when the binary links none.
	Kubernetes string
	// Go is the Go toolchain version, e.g. go1.26.8.
	Go string
}

// Get returns this binary's version information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, BuildDate, bi)
}

// resolve fills what -ldflags did not stamp from the build information.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, BuildDate: date, Go: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		// A pseudo-version (v0.0.0-20261125030846-1f2628baeea9+dirty) says
		// no more than the commit does.
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" && !pseudo.MatchString(bi.Main.Version) {
			info.Version = bi.Main.Version
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if info.Commit == "" && settings["vcs.revision"] != "" {
			info.Commit = short(settings["vcs.revision"])
			if settings["vcs.modified"] == "true" {
				info.Commit += "-dirty"
			}
		}
		if info.BuildDate == "" {
			info.BuildDate = settings["vcs.time"]
		}
		for _, path := range kubernetesModules {
			if v := depVersion(bi, path); v != "" {
				info.Kubernetes = v
				break
			}
		}
	}
	if info.Version == "" {
		info.Version = DevVersion
	}
	return info
}

// depVersion is the version of the dependency path, honouring replaces.
func depVersion(bi *debug.BuildInfo, path string) string {
	for _, d := range bi.Deps {
		if d.Path != path {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return d.Replace.Version
		}
		return d.Version
	}
	return ""
}

// pseudo matches Go pseudo-versions: a 14-digit timestamp and a 12-hex
// revision after the base version.
var pseudo = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+.*)?$`)

func short(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

// String is the one-line description printed by --version, e.g.
// "v0.1.0 (commit abc1234, built 2026-11-25T04:40:00Z, kubernetes libraries v0.36.3, go1.26.8)".
func (i Info) String() string {
	var parts []string
	if i.Commit != "" {
		parts = append(parts, "commit "+i.Commit)
	} else {
		parts = append(parts, "commit unknown")
	}
	if i.BuildDate != "" {
		parts = append(parts, "built "+i.BuildDate)
	}
	if i.Kubernetes != "" {
		parts = append(parts, "kubernetes libraries "+i.Kubernetes)
	}
	parts = append(parts, i.Go)
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, ", "))
}

// Line is the --version output of the named program, without a newline:
// "alicloud-ccm v0.1.0 (commit abc1234, ...)".
func Line(program string) string { return program + " " + Get().String() }
