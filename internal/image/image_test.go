package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/auth/credentials"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/image"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	testVersion  = "v9.8.7-imagetest"
	testCommit   = "abc1234"
	testRevision = "abc1234def5678abc1234def5678abc1234def56"
)

// testCreated is the fixed build time of the test images.
var testCreated = time.Date(2026, 11, 25, 4, 30, 0, 0, time.UTC)

func testOptions(t *testing.T, out string) image.Options {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return image.Options{
		Root: root, OutDir: out, Platforms: []v1.Platform{image.HostPlatform()},
		Version: testVersion, Commit: testCommit, Revision: testRevision, Created: testCreated,
		DockerArchives: true, Logf: t.Logf,
	}
}

// The host-arch images of both components, built once per test binary.
var (
	buildOnce    sync.Once
	buildDir     string
	buildResults []image.Result
	buildErr     error
)

func built(t *testing.T) []image.Result {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the images")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "image-test-")
		if buildErr != nil {
			return
		}
		start := time.Now()
		buildResults, buildErr = image.Build(context.Background(), testOptions(t, buildDir), image.Components...)
		t.Logf("images built in %s", time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildResults
}

func result(t *testing.T, name string) image.Result {
	t.Helper()
	for _, r := range built(t) {
		if r.Component.Name == name {
			return r
		}
	}
	t.Fatalf("no image %s built", name)
	return image.Result{}
}

// The OCI image layout, read with the standard library only, so that the
// test checks the format rather than go-containerregistry's view of it.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *v1.Platform      `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type config struct {
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Variant      string    `json:"variant"`
	Created      time.Time `json:"created"`
	Config       struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		Env          []string            `json:"Env"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// entry is one file of an image's filesystem.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// unpacked is one platform's image as a runtime would see it.
type unpacked struct {
	manifest manifest
	config   config
	files    map[string]entry
}

const (
	mtOCIIndex    = "application/vnd.oci.image.index.v1+json"
	mtOCIManifest = "application/vnd.oci.image.manifest.v1+json"
	mtOCIConfig   = "application/vnd.oci.image.config.v1+json"
	mtOCILayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// blob reads a blob of the layout and checks its digest and size.
func blob(t *testing.T, dir string, d descriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		t.Fatalf("digest %q is not sha256", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexDigest))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != d.Size {
		t.Errorf("blob %s: %d bytes, descriptor says %d", d.Digest, len(data), d.Size)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest {
		t.Errorf("blob %s: content digest sha256:%x", d.Digest, sum)
	}
	return data
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %.200s: %v", data, err)
	}
}

// readLayout checks the layout's index.json and returns its image index.
func readLayout(t *testing.T, dir string) (index, descriptor) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	if err != nil {
		t.Fatal(err)
	}
	var lay struct {
		Version string `json:"imageLayoutVersion"`
	}
	decode(t, raw, &lay)
	if lay.Version != "1.0.0" {
		t.Errorf("oci-layout version %q", lay.Version)
	}
	raw, err = os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top index
	decode(t, raw, &top)
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json holds %d entries, want the one multi-arch index", len(top.Manifests))
	}
	d := top.Manifests[0]
	if d.MediaType != mtOCIIndex {
		t.Errorf("index.json entry is %s, want an image index", d.MediaType)
	}
	if got := d.Annotations[image.AnnotationRefName]; got != testVersion {
		t.Errorf("index.json ref.name %q, want %q", got, testVersion)
	}
	var idx index
	decode(t, blob(t, dir, d), &idx)
	if idx.SchemaVersion != 2 || idx.MediaType != mtOCIIndex {
		t.Errorf("image index: schemaVersion %d mediaType %q", idx.SchemaVersion, idx.MediaType)
	}
	return idx, d
}

// unpack reads the manifest, config and layers of desc, checking every
// layer's diff_id against its uncompressed content.
func unpack(t *testing.T, dir string, desc descriptor) unpacked {
	t.Helper()
	var u unpacked
	if desc.MediaType != mtOCIManifest {
		t.Errorf("manifest media type %q", desc.MediaType)
	}
	decode(t, blob(t, dir, desc), &u.manifest)
	if u.manifest.Config.MediaType != mtOCIConfig {
		t.Errorf("config media type %q", u.manifest.Config.MediaType)
	}
	decode(t, blob(t, dir, u.manifest.Config), &u.config)
	if len(u.config.RootFS.DiffIDs) != len(u.manifest.Layers) {
		t.Fatalf("%d diff_ids for %d layers", len(u.config.RootFS.DiffIDs), len(u.manifest.Layers))
	}
	u.files = map[string]entry{}
	for i, l := range u.manifest.Layers {
		if l.MediaType != mtOCILayer {
			t.Errorf("layer %d media type %q", i, l.MediaType)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob(t, dir, l)))
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		h := sha256.New()
		tr := tar.NewReader(io.TeeReader(zr, h))
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("layer %d %s: %v", i, hdr.Name, err)
			}
			u.files[hdr.Name] = entry{hdr: hdr, data: data}
		}
		// The tar reader stops at the end-of-archive marker; the diff_id
		// covers the padding after it too.
		if _, err := io.Copy(h, zr); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("sha256:%x", h.Sum(nil)); got != u.config.RootFS.DiffIDs[i] {
			t.Errorf("layer %d: uncompressed digest %s, diff_id %s", i, got, u.config.RootFS.DiffIDs[i])
		}
	}
	return u
}

// TestImageContents reads each host-arch image as a runtime would: the
// layout, index, manifest, config and layers; then runs the binary taken
// from its layer with --version.
func TestImageContents(t *testing.T) {
	caPath, err := image.HostCABundle()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	host := image.HostPlatform()
	for _, tc := range []struct {
		comp    image.Component
		program string
		ports   []string
	}{
		{image.CCM, "alicloud-ccm", []string{"10258/tcp"}},
		{image.Emulator, "alicloud-emulator", []string{"18080/tcp"}},
	} {
		t.Run(tc.comp.Name, func(t *testing.T) {
			r := result(t, tc.comp.Name)
			idx, top := readLayout(t, r.Dir)
			if top.Digest != r.Index.String() {
				t.Errorf("index.json names %s, Build reported %s", top.Digest, r.Index)
			}
			if len(idx.Manifests) != 1 || idx.Manifests[0].Platform == nil || !idx.Manifests[0].Platform.Equals(host) {
				t.Fatalf("index manifests %+v, want one for %s", idx.Manifests, host.String())
			}
			if idx.Manifests[0].Digest != r.Images[0].Digest.String() {
				t.Errorf("index names %s, Build reported %s", idx.Manifests[0].Digest, r.Images[0].Digest)
			}
			u := unpack(t, r.Dir, idx.Manifests[0])
			cfg := u.config
			if cfg.OS != host.OS || cfg.Architecture != host.Architecture || cfg.Variant != host.Variant {
				t.Errorf("config platform %s/%s/%s, want %s", cfg.OS, cfg.Architecture, cfg.Variant, host.String())
			}
			if !cfg.Created.Equal(testCreated) {
				t.Errorf("created %s, want %s", cfg.Created, testCreated)
			}
			if cfg.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", cfg.Config.User)
			}
			if want := []string{"/" + tc.comp.Name}; !slices.Equal(cfg.Config.Entrypoint, want) {
				t.Errorf("entrypoint %q, want %q", cfg.Config.Entrypoint, want)
			}
			if !slices.Equal(cfg.Config.Cmd, tc.comp.Cmd) {
				t.Errorf("cmd %q, want %q", cfg.Config.Cmd, tc.comp.Cmd)
			}
			for _, p := range tc.ports {
				if _, ok := cfg.Config.ExposedPorts[p]; !ok {
					t.Errorf("exposed ports %v lack %s", cfg.Config.ExposedPorts, p)
				}
			}
			for k, want := range map[string]string{
				image.LabelTitle:    tc.comp.Name,
				image.LabelSource:   image.DefaultSource,
				image.LabelVersion:  testVersion,
				image.LabelRevision: testRevision,
				image.LabelLicenses: "Apache-2.0",
				image.LabelCreated:  "2026-11-25T04:30:00Z",
			} {
				if got := cfg.Config.Labels[k]; got != want {
					t.Errorf("label %s=%q, want %q", k, got, want)
				}
			}

			for name, want := range map[string]struct {
				mode     int64
				uid, gid int
				typ      byte
			}{
				"etc/passwd":                        {0o644, 0, 0, tar.TypeReg},
				"etc/group":                         {0o644, 0, 0, tar.TypeReg},
				"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0, tar.TypeReg},
				"tmp/":                              {0o1777, 0, 0, tar.TypeDir},
				"home/nonroot/":                     {0o700, 65532, 65532, tar.TypeDir},
				tc.comp.Name:                        {0o755, 0, 0, tar.TypeReg},
			} {
				e, ok := u.files[name]
				if !ok {
					t.Errorf("image lacks /%s", name)
					continue
				}
				if e.hdr.Mode != want.mode || e.hdr.Uid != want.uid || e.hdr.Gid != want.gid || e.hdr.Typeflag != want.typ {
					t.Errorf("/%s: mode %o uid %d gid %d type %c, want %o %d %d %c", name, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, e.hdr.Typeflag, want.mode, want.uid, want.gid, want.typ)
				}
			}
			for name, e := range u.files {
				if !e.hdr.ModTime.Equal(testCreated) {
					t.Errorf("/%s: mtime %s, want the build time %s", name, e.hdr.ModTime, testCreated)
				}
			}
			if !strings.Contains(string(u.files["etc/passwd"].data), "\nnonroot:x:65532:65532:") ||
				!strings.Contains(string(u.files["etc/group"].data), "\nnonroot:x:65532:") {
				t.Errorf("/etc/passwd or /etc/group lack the nonroot user:\n%s%s", u.files["etc/passwd"].data, u.files["etc/group"].data)
			}
			if !bytes.Equal(u.files["etc/ssl/certs/ca-certificates.crt"].data, ca) {
				t.Error("the image's CA bundle differs from the build machine's")
			}

			bin := extract(t, u, tc.comp.Name)
			if got := int64(len(u.files[tc.comp.Name].data)); got != r.Images[0].BinarySize {
				t.Errorf("binary of %d bytes, Build reported %d", got, r.Images[0].BinarySize)
			}
			checkStatic(t, bin, host)
			out, err := exec.Command(bin, "--version").Output()
			if err != nil {
				t.Fatalf("%s --version: %v", tc.comp.Name, err)
			}
			want := regexp.MustCompile(`^` + tc.program + ` v9\.8\.7-imagetest \(commit abc1234, built 2026-11-25T04:30:00Z(, kubernetes libraries v0\.\d+\.\d+)?, go\S+\)\n$`)
			if !want.Match(out) {
				t.Errorf("--version printed %q", out)
			}
			t.Logf("%s: image %s, %d bytes stored (gzip), binary %d bytes; %s", host.String(), r.Images[0].Digest, r.Images[0].Size, r.Images[0].BinarySize, strings.TrimSpace(string(out)))

			checkArchive(t, r, u)
		})
	}
}

// extract writes the binary of the image's filesystem to a temp file.
func extract(t *testing.T, u unpacked, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, u.files[name].data, os.FileMode(u.files[name].hdr.Mode)&0o777); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkStatic fails unless bin is an ELF executable for p with no dynamic
// loader: scratch holds no libc.
func checkStatic(t *testing.T, bin string, p v1.Platform) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%s is not ELF: %v", bin, err)
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != machine {
		t.Errorf("ELF machine %s, want %s", f.Machine, machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("binary is dynamically linked (%s)", prog.Type)
		}
	}
}

// checkArchive reads the docker-archive: manifest.json names both tags and
// the same config and layers as the layout.
func checkArchive(t *testing.T, r image.Result, u unpacked) {
	t.Helper()
	f, err := os.Open(r.Images[0].Archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	names := map[string]bool{}
	var man []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[hdr.Name] = true
		if hdr.Name == "manifest.json" {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			decode(t, data, &man)
		}
	}
	if len(man) != 1 {
		t.Fatalf("docker archive manifest.json: %d images", len(man))
	}
	repo := "alicloud-ccm/" + r.Component.Name
	if want := []string{repo + ":" + testVersion, repo + ":latest"}; !slices.Equal(man[0].RepoTags, want) {
		t.Errorf("docker archive tags %v, want %v", man[0].RepoTags, want)
	}
	if man[0].Config != u.manifest.Config.Digest || !names[man[0].Config] {
		t.Errorf("docker archive config %s, layout's %s", man[0].Config, u.manifest.Config.Digest)
	}
	if len(man[0].Layers) != len(u.manifest.Layers) {
		t.Fatalf("docker archive has %d layers, layout %d", len(man[0].Layers), len(u.manifest.Layers))
	}
	for i, l := range man[0].Layers {
		if want := strings.TrimPrefix(u.manifest.Layers[i].Digest, "sha256:") + ".tar.gz"; l != want || !names[l] {
			t.Errorf("docker archive layer %d: %s, want %s in the archive", i, l, want)
		}
	}
}

// TestReproducible builds the emulator's image again from scratch and
// expects the same digests; assembling the same binary with another build
// time must change them.
func TestReproducible(t *testing.T) {
	first := result(t, image.Emulator.Name)
	opts := testOptions(t, t.TempDir())
	again, err := image.Build(context.Background(), opts, image.Emulator)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Index != first.Index || again[0].Images[0].Digest != first.Images[0].Digest {
		t.Fatalf("rebuild gave index %s image %s, first build %s %s", again[0].Index, again[0].Images[0].Digest, first.Index, first.Images[0].Digest)
	}
	for _, f := range [][2]string{
		{filepath.Join(first.Dir, "index.json"), filepath.Join(again[0].Dir, "index.json")},
		{filepath.Join(first.Dir, "oci-layout"), filepath.Join(again[0].Dir, "oci-layout")},
		{first.Images[0].Archive, again[0].Images[0].Archive},
	} {
		a, errA := os.ReadFile(f[0])
		b, errB := os.ReadFile(f[1])
		if errA != nil || errB != nil {
			t.Fatalf("read %s: %v, %s: %v", f[0], errA, f[1], errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ", f[0], f[1])
		}
	}

	// Assembly alone is a function of the binary and the options.
	idx, _ := readLayout(t, first.Dir)
	bin := extract(t, unpack(t, first.Dir, idx.Manifests[0]), image.Emulator.Name)
	bins := map[string]string{image.HostPlatform().String(): bin}
	for _, tc := range []struct {
		name string
		edit func(*image.Options)
		same bool
	}{
		{"same options", func(*image.Options) {}, true},
		{"another build time", func(o *image.Options) { o.Created = o.Created.Add(time.Second) }, false},
		{"another version label", func(o *image.Options) { o.Version = "v9.8.8" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, "")
			tc.edit(&o)
			ii, err := image.Assemble(image.Emulator, bins, o)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ii.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if (d == first.Index) != tc.same {
				t.Errorf("index %s, first build %s; want equal: %v", d, first.Index, tc.same)
			}
		})
	}
}

const (
	accessKeyID     = "LTAI5tImageTestKey"
	accessKeySecret = "image-test-secret-c2NyYXRjaGltYWdl"
)

// TestCCMFromImage runs the emulator and the CCM binaries taken from their
// images against the local cluster: the CCM must initialize a Node from its
// ECS instance.
func TestCCMFromImage(t *testing.T) {
	ccmRes, emuRes := result(t, image.CCM.Name), result(t, image.Emulator.Name)
	if cluster == nil {
		t.Skip("no local control plane")
	}
	binary := func(r image.Result) string {
		idx, _ := readLayout(t, r.Dir)
		return extract(t, unpack(t, r.Dir, idx.Manifests[0]), r.Component.Name)
	}
	ccmBin, emuBin := binary(ccmRes), binary(emuRes)
	dir := t.TempDir()
	logDir := cluster.LogDir

	seed, err := json.Marshal(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 2, NamePrefix: "image-"}))
	if err != nil {
		t.Fatal(err)
	}
	seedPath := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seedPath, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	emu, err := localcluster.StartProcess("alicloud-emulator-from-image", emuBin, []string{"--listen=" + addr, "--seed=" + seedPath}, logDir,
		[]string{"ALICLOUD_EMULATOR_ACCESS_KEY_ID=" + accessKeyID, "ALICLOUD_EMULATOR_ACCESS_KEY_SECRET=" + accessKeySecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Stop(5 * time.Second) })
	poll(t, 30*time.Second, "emulator listening", func(context.Context) error {
		if done, err := emu.Exited(); done {
			return fmt.Errorf("emulator exited (%v): %s", err, emu.Tail(10))
		}
		data, _ := os.ReadFile(emu.LogPath())
		if !strings.Contains(string(data), "listening on "+addr) {
			return fmt.Errorf("not listening yet")
		}
		return nil
	})

	// The instance to register, through the official SDK.
	cfg := sdk.NewConfig()
	cfg.Scheme = "HTTP"
	ec, err := ecs.NewClientWithOptions(emulator.DefaultRegion, cfg, credentials.NewAccessKeyCredential(accessKeyID, accessKeySecret))
	if err != nil {
		t.Fatal(err)
	}
	ec.Domain = addr
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceName = "image-node-1"
	resp, err := ec.DescribeInstances(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Instances.Instance) != 1 {
		t.Fatalf("DescribeInstances image-node-1: %d instances", len(resp.Instances.Instance))
	}
	in := resp.Instances.Instance[0]
	ip := in.VpcAttributes.PrivateIpAddress.IpAddress[0]

	ccm, err := ccmtest.StartCCM(context.Background(), ccmtest.CCMOptions{
		Binary:     ccmBin,
		Kubeconfig: cluster.KubeconfigPath, Emulator: addr,
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		CloudConfig: "Global:\n  clusterID: c-image\n",
		Args:        []string{"--leader-elect=false", "--configure-cloud-routes=false"},
		LogPath:     filepath.Join(logDir, "ccm-from-image.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ccm.Stop)

	cs, err := cluster.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	name := "image-node"
	if _, err := localcluster.RegisterKubeletNode(context.Background(), cs, localcluster.KubeletNode{Name: name, InternalIP: ip}); err != nil {
		t.Fatal(err)
	}
	took := poll(t, 60*time.Second, "node initialized by the CCM from the image", func(ctx context.Context) error {
		if ccm.Exited() {
			return fmt.Errorf("the CCM exited; log tail:\n%s", tail(ccm.Log(), 30))
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == cloudapi.TaintExternalCloudProvider {
				return fmt.Errorf("still tainted")
			}
		}
		if want := emulator.DefaultRegion + "." + in.InstanceId; n.Spec.ProviderID != want {
			return fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
		}
		if n.Labels[corev1.LabelTopologyZone] != in.ZoneId {
			return fmt.Errorf("zone label %q, want %q", n.Labels[corev1.LabelTopologyZone], in.ZoneId)
		}
		if n.Labels[corev1.LabelInstanceTypeStable] != in.InstanceType {
			return fmt.Errorf("instance type label %q, want %q", n.Labels[corev1.LabelInstanceTypeStable], in.InstanceType)
		}
		return nil
	})
	t.Logf("Node %s initialized by the CCM from image %s in %s", name, ccmRes.Images[0].Digest, took.Round(time.Millisecond))
}

// poll retries cond every 100ms until it returns nil; on timeout the test
// fails with cond's last error.
func poll(t *testing.T, timeout time.Duration, what string, cond func(context.Context) error) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
	return time.Since(start)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
