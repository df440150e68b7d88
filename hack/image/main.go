// Command image builds the container images of the cloud-controller-manager
// and the alicloud-emulator without a Docker daemon (`make image`): one OCI
// image layout per image under --out, each holding a multi-arch index, and
// with --docker-archive one `docker load` tarball per platform. It prints
// each image's digest and size.
//
//	go run ./hack/image --out _output/images --version v0.1.0 --commit abc1234 \
//	    --revision <full sha> --created @1764040000 [--platforms linux/amd64,linux/arm64] [--docker-archive]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	var (
		opts       image.Options
		platforms  string
		components string
		created    string
	)
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&opts.Root, "root", ".", "module root to build from")
	fs.StringVar(&opts.OutDir, "out", "_output/images", "directory receiving one OCI layout per image (and the docker archives)")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated platforms of the index")
	fs.StringVar(&components, "components", image.CCM.Name+","+image.Emulator.Name, "comma-separated images to build")
	fs.StringVar(&opts.Version, "version", "", "version stamped into the binaries and the labels (default v0.0.0-dev)")
	fs.StringVar(&opts.Commit, "commit", "", "short commit stamped into the binaries")
	fs.StringVar(&opts.Revision, "revision", "", "org.opencontainers.image.revision label (default: --commit)")
	fs.StringVar(&created, "created", getenv("SOURCE_DATE_EPOCH"), "build time: RFC 3339 or seconds since the epoch (@N or N; default $SOURCE_DATE_EPOCH, else the epoch); every timestamp of the images, so fixed for reproducible digests")
	fs.StringVar(&opts.Source, "source", image.DefaultSource, "org.opencontainers.image.source label")
	fs.StringVar(&opts.CABundle, "ca-bundle", "", "PEM CA bundle copied to "+image.CABundlePath+" (default: the build machine's, found where Linux distributions keep it)")
	fs.BoolVar(&opts.DockerArchives, "docker-archive", false, "also write NAME-ARCH.tar per platform for docker load / podman load")
	fs.StringVar(&opts.Repository, "repository", "alicloud-ccm", "repository of the docker archives' tags (REPOSITORY/NAME:VERSION and :latest)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := parseCreated(created)
	if err != nil {
		return err
	}
	opts.Created = t
	for _, p := range strings.Split(platforms, ",") {
		pl, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("--platforms: %w", err)
		}
		if pl.OS != "linux" || pl.Architecture == "" {
			return fmt.Errorf("--platforms: %q is not linux/ARCH", p)
		}
		if pl.Architecture == "arm64" && pl.Variant == "" {
			pl.Variant = "v8"
		}
		opts.Platforms = append(opts.Platforms, *pl)
	}
	var comps []image.Component
	for _, n := range strings.Split(components, ",") {
		c, ok := find(strings.TrimSpace(n))
		if !ok {
			return fmt.Errorf("--components: unknown image %q", n)
		}
		comps = append(comps, c)
	}
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(out, "==> "+format+"\n", args...) }
	start := time.Now()
	results, err := image.Build(ctx, opts, comps...)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tPLATFORM\tDIGEST\tSIZE (gzip)\tBINARY")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\tindex\t%s\t\t\n", r.Dir, r.Index)
		for _, pi := range r.Images {
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\n", pi.Platform.String(), pi.Digest, mib(pi.Size), mib(pi.BinarySize))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		for _, pi := range r.Images {
			if pi.Archive != "" {
				fmt.Fprintf(out, "docker load -i %s\n", pi.Archive)
			}
		}
	}
	fmt.Fprintf(out, "built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func find(name string) (image.Component, bool) {
	for _, c := range image.Components {
		if c.Name == name {
			return c, true
		}
	}
	return image.Component{}, false
}

// parseCreated reads --created: empty is the epoch, digits (with or
// without @) are seconds since the epoch (SOURCE_DATE_EPOCH), else RFC 3339.
func parseCreated(s string) (time.Time, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "@")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--created %q: want RFC 3339 or seconds since the epoch", s)
	}
	return t.UTC(), nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
