// Package image builds the container images of the CCM and the emulator
// without a Docker daemon or a base image: static Go binaries on scratch,
// with a CA bundle, a nonroot user (65532) and OCI labels, written as an
// OCI image layout holding one multi-arch index (and optionally one
// docker-archive tarball per platform for `docker load`). Every timestamp
// comes from Options.Created, so the same sources and options give the same
// digests.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/alicloud-ccm/alicloud-ccm/internal/version"
)

// Nonroot user and group of the images, as in distroless' "nonroot" user.
const (
	NonrootUID = 65532
	NonrootGID = 65532
)

// CABundlePath is where the images hold the CA bundle; Go's crypto/x509
// reads it there first.
const CABundlePath = "/etc/ssl/certs/ca-certificates.crt"

// hostCABundles are where Linux distributions keep their PEM bundle, in
// the order crypto/x509 tries them.
var hostCABundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// HostCABundle is the build machine's CA bundle, the first of the usual
// paths that exists.
func HostCABundle() (string, error) {
	for _, p := range hostCABundles {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no CA bundle found at %s; pass one (--ca-bundle)", strings.Join(hostCABundles, ", "))
}

// DefaultSource is the org.opencontainers.image.source label.
const DefaultSource = "https://github.com/alicloud-ccm/alicloud-ccm"

// License is the org.opencontainers.image.licenses label (SPDX).
const License = "Apache-2.0"

// OCI label keys set on every image's config.
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelLicenses    = "org.opencontainers.image.licenses"
	LabelCreated     = "org.opencontainers.image.created"
	// AnnotationRefName names the index in the layout's index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// Component is one image: a command of this module as the entrypoint.
type Component struct {
	// Name names the image, the binary and the entrypoint (/Name).
	Name string
	// Package is the main package to build, relative to the module root.
	Package string
	// Description is the org.opencontainers.image.description label.
	Description string
	// Cmd are the default arguments after the entrypoint.
	Cmd []string
	// ExposedPorts are the ports the command serves on, e.g. "10258/tcp".
	ExposedPorts []string
}

// CCM is the cloud-controller-manager image; deploy/deployment.yaml passes
// its arguments.
var CCM = Component{
	Name:         "cloud-controller-manager",
	Package:      "./cmd/cloud-controller-manager",
	Description:  "Kubernetes cloud controller manager for Alibaba Cloud (ECS nodes, VPC routes, CLB and NLB load balancers)",
	ExposedPorts: []string{"10258/tcp"},
}

// Emulator is the alicloud-emulator image; it listens on all interfaces so
// that it is reachable from outside its container.
var Emulator = Component{
	Name:         "alicloud-emulator",
	Package:      "./cmd/alicloud-emulator",
	Description:  "Local emulator of the Alibaba Cloud ECS, VPC, SLB and NLB OpenAPIs and the ECS metadata service",
	Cmd:          []string{"--listen=0.0.0.0:18080"},
	ExposedPorts: []string{"18080/tcp"},
}

// Components are the images `make image` builds.
var Components = []Component{CCM, Emulator}

// Platforms are the platforms `make image` builds.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}

// HostPlatform is the platform of the running Go toolchain, as Platforms
// names it.
func HostPlatform() v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if p.Architecture == "arm64" {
		p.Variant = "v8"
	}
	return p
}

// Options configure a build.
type Options struct {
	// Root is the module root (where go.mod is).
	Root string
	// OutDir receives one OCI layout directory per component (OutDir/Name)
	// and, with DockerArchives, OutDir/Name-ARCH.tar.
	OutDir string
	// Platforms to build; Platforms when empty.
	Platforms []v1.Platform
	// Version, Commit and Created are stamped into the binaries as
	// `make build` stamps them and into the labels; Created (truncated to
	// seconds, UTC) is also every file's mtime and the config's created time.
	Version, Commit string
	Created         time.Time
	// Revision is the org.opencontainers.image.revision label (the full
	// commit); Commit when empty.
	Revision string
	// Source is the org.opencontainers.image.source label; DefaultSource
	// when empty.
	Source string
	// CABundle is the PEM CA bundle copied to CABundlePath; HostCABundle()
	// when empty.
	CABundle string
	// DockerArchives also writes a docker-archive tarball per platform,
	// tagged Repository/Name:Version and :latest.
	DockerArchives bool
	// Repository prefixes the docker-archive tags; "alicloud-ccm" when empty.
	Repository string
	// Logf receives progress; nil discards it.
	Logf func(format string, args ...any)
}

func (o *Options) defaults() {
	if len(o.Platforms) == 0 {
		o.Platforms = Platforms
	}
	if o.Version == "" {
		o.Version = version.DevVersion
	}
	if o.Revision == "" {
		o.Revision = o.Commit
	}
	if o.Source == "" {
		o.Source = DefaultSource
	}
	if o.Repository == "" {
		o.Repository = "alicloud-ccm"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	o.Created = o.Created.UTC().Truncate(time.Second)
}

// Result describes one written image layout.
type Result struct {
	// Component is what was built.
	Component Component
	// Dir is the OCI layout directory.
	Dir string
	// Index is the digest of the multi-arch image index.
	Index v1.Hash
	// Images are the per-platform images, in Options.Platforms order.
	Images []PlatformImage
}

// PlatformImage is one platform's image of a Result.
type PlatformImage struct {
	// Platform is the image's platform.
	Platform v1.Platform
	// Digest is the image manifest's digest.
	Digest v1.Hash
	// Size is the sum of the compressed layers, config and manifest: what a
	// registry stores and a node pulls.
	Size int64
	// BinarySize is the size of the uncompressed binary.
	BinarySize int64
	// Archive is the docker-archive tarball, when written.
	Archive string
}

// Build compiles each component for every platform, assembles the images
// and writes them under opts.OutDir, replacing what was there.
func Build(ctx context.Context, opts Options, comps ...Component) ([]Result, error) {
	opts.defaults()
	base, err := baseLayer(opts)
	if err != nil {
		return nil, err
	}
	binDir, err := os.MkdirTemp("", "image-bin-")
	if err != nil {
		return nil, fmt.Errorf("temp dir for binaries: %w", err)
	}
	defer os.RemoveAll(binDir)
	var results []Result
	for _, c := range comps {
		bins := map[string]string{}
		for _, p := range opts.Platforms {
			out := filepath.Join(binDir, platformDir(p), c.Name)
			opts.Logf("image: building %s for %s", c.Name, p.String())
			if err := BuildBinary(ctx, opts.Root, c.Package, p, out, LDFlags(opts.Version, opts.Commit, opts.Created)); err != nil {
				return nil, err
			}
			bins[p.String()] = out
		}
		r, err := write(c, bins, base, opts)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// LDFlags are the linker flags of an image binary: the version stamps of
// `make build`, without the symbol table and DWARF (a third of the size;
// panics keep their stack traces).
func LDFlags(ver, commit string, created time.Time) string {
	pkg := "github.com/alicloud-ccm/alicloud-ccm/internal/version"
	return fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s -X %s.BuildDate=%s",
		pkg, ver, pkg, commit, pkg, created.UTC().Format(time.RFC3339))
}

// BuildBinary compiles pkg for platform p into out: static (CGO_ENABLED=0)
// and without build paths (-trimpath), so that it runs on scratch and the
// same sources give the same bytes.
func BuildBinary(ctx context.Context, root, pkg string, p v1.Platform, out, ldflags string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	env := []string{"CGO_ENABLED=0", "GOOS=" + p.OS, "GOARCH=" + p.Architecture}
	if p.Architecture == "arm" && p.Variant != "" {
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, p.String(), err, b)
	}
	return nil
}

// Assemble makes the image index of c from its binaries, keyed by
// platform (v1.Platform.String()), in the order of opts.Platforms.
func Assemble(c Component, binaries map[string]string, opts Options) (v1.ImageIndex, error) {
	opts.defaults()
	base, err := baseLayer(opts)
	if err != nil {
		return nil, err
	}
	idx, _, err := assemble(c, binaries, base, opts)
	return idx, err
}

func assemble(c Component, binaries map[string]string, base v1.Layer, opts Options) (v1.ImageIndex, []v1.Image, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var imgs []v1.Image
	for _, p := range opts.Platforms {
		bin, ok := binaries[p.String()]
		if !ok {
			return nil, nil, fmt.Errorf("%s: no binary for %s", c.Name, p.String())
		}
		img, err := platformImage(c, p, bin, base, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("%s for %s: %w", c.Name, p.String(), err)
		}
		plat := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
		imgs = append(imgs, img)
	}
	return idx, imgs, nil
}

func platformImage(c Component, p v1.Platform, bin string, base v1.Layer, opts Options) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	binLayer, err := layer([]file{{name: c.Name, mode: 0o755, data: data}}, opts.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: opts.Created}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "alicloud-ccm image: /etc/passwd, /etc/group (nonroot 65532), CA certificates, /tmp, /home/nonroot", Comment: "base",
		}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: fmt.Sprintf("go build -trimpath %s (CGO_ENABLED=0 GOOS=%s GOARCH=%s)", c.Package, p.OS, p.Architecture), Comment: c.Name,
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Author = "alicloud-ccm"
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", NonrootUID, NonrootGID),
		Entrypoint: []string{"/" + c.Name},
		Cmd:        c.Cmd,
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot"},
		Labels: map[string]string{
			LabelTitle:       c.Name,
			LabelDescription: c.Description,
			LabelSource:      opts.Source,
			LabelVersion:     opts.Version,
			LabelRevision:    opts.Revision,
			LabelLicenses:    License,
			LabelCreated:     opts.Created.Format(time.RFC3339),
		},
	}
	if len(c.ExposedPorts) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, port := range c.ExposedPorts {
			cf.Config.ExposedPorts[port] = struct{}{}
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}

// write assembles c and writes its layout (and archives) under opts.OutDir.
func write(c Component, binaries map[string]string, base v1.Layer, opts Options) (Result, error) {
	r := Result{Component: c, Dir: filepath.Join(opts.OutDir, c.Name)}
	idx, imgs, err := assemble(c, binaries, base, opts)
	if err != nil {
		return r, err
	}
	// A layout only ever gains blobs; start afresh so that the directory
	// holds this build alone.
	if err := os.RemoveAll(r.Dir); err != nil {
		return r, fmt.Errorf("clear %s: %w", r.Dir, err)
	}
	lp, err := layout.Write(r.Dir, empty.Index)
	if err != nil {
		return r, fmt.Errorf("create layout %s: %w", r.Dir, err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationRefName: opts.Version})); err != nil {
		return r, fmt.Errorf("write %s: %w", r.Dir, err)
	}
	if err := readable(r.Dir); err != nil {
		return r, err
	}
	if r.Index, err = idx.Digest(); err != nil {
		return r, err
	}
	for i, img := range imgs {
		p := opts.Platforms[i]
		pi := PlatformImage{Platform: p}
		if pi.Digest, err = img.Digest(); err != nil {
			return r, err
		}
		if pi.Size, err = storedSize(img); err != nil {
			return r, err
		}
		st, err := os.Stat(binaries[p.String()])
		if err != nil {
			return r, err
		}
		pi.BinarySize = st.Size()
		if opts.DockerArchives {
			pi.Archive = filepath.Join(opts.OutDir, c.Name+"-"+platformDir(p)+".tar")
			if err := writeArchive(pi.Archive, opts.Repository+"/"+c.Name, opts.Version, img, opts.Created); err != nil {
				return r, err
			}
		}
		r.Images = append(r.Images, pi)
	}
	return r, nil
}

// writeArchive writes img as a docker-archive (manifest.json, the config,
// the gzipped layers) tagged repo:version and repo:latest. Written here
// rather than by tarball.Write, whose tag order follows map iteration, so
// that the archive too is the same bytes for the same image.
func writeArchive(path, repo, ver string, img v1.Image, mtime time.Time) (err error) {
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: cfgName.String(), RepoTags: []string{repo + ":" + ver, repo + ":latest"}}
	for _, t := range entry.RepoTags {
		if _, err := name.NewTag(t); err != nil {
			return fmt.Errorf("docker archive tag %s: %w", t, err)
		}
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		entry.Layers = append(entry.Layers, d.Hex+".tar.gz")
	}
	man, err := json.Marshal([]any{entry})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create docker archive: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write docker archive %s: %w", path, cerr)
		}
	}()
	tw := tar.NewWriter(f)
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return fmt.Errorf("write docker archive %s: %w", path, err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			return fmt.Errorf("write docker archive %s: %s: %w", path, name, err)
		}
		return nil
	}
	if err := add(entry.Config, int64(len(cfg)), bytes.NewReader(cfg)); err != nil {
		return err
	}
	for i, l := range layers {
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = add(entry.Layers[i], size, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	if err := add("manifest.json", int64(len(man)), bytes.NewReader(man)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write docker archive %s: %w", path, err)
	}
	return nil
}

// readable gives every file of the layout mode 0644 and every directory
// 0755: the layout writer leaves blobs 0600 and index.json 0755, which
// neither another user's `podman load` nor a copy into a web root expects.
func readable(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", path, err)
		}
		return nil
	})
}

func storedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	n := m.Config.Size + int64(len(raw))
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// platformDir names a platform in paths: amd64, arm64.
func platformDir(p v1.Platform) string { return p.Architecture }

// passwd and group hold root, nobody and the nonroot user the images run
// as; tools that map a uid to a name (and Go's os/user) read them.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// baseLayer is what every image shares: users, CA certificates, a
// world-writable /tmp and the nonroot user's home.
func baseLayer(opts Options) (v1.Layer, error) {
	if opts.CABundle == "" {
		var err error
		if opts.CABundle, err = HostCABundle(); err != nil {
			return nil, err
		}
	}
	ca, err := os.ReadFile(opts.CABundle)
	if err != nil {
		return nil, fmt.Errorf("read CA bundle: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", opts.CABundle)
	}
	return layer([]file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CABundlePath, "/"), mode: 0o644, data: ca},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: NonrootUID, gid: NonrootGID},
		{name: "tmp/", mode: 0o1777, dir: true},
	}, opts.Created)
}

// file is one entry of a layer.
type file struct {
	name     string
	mode     int64
	dir      bool
	uid, gid int
	data     []byte
}

// layer tars files with fixed owners and mtimes, so that equal content
// gives an equal digest, and gzips it (OCI media type).
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: mtime,
			Typeflag: tar.TypeReg, Size: int64(len(f.data)),
		}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return l, nil
}
