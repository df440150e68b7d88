package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWhiteBoxTests: -short runs the tests of the package's own test
// files, not those of its external _test package, nor helpers or TestMain.
func TestWhiteBoxTests(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"a_internal_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\nfunc Testing() {}\nfunc TestMain(m *testing.M) {}\nfunc (x) TestMethod(t *testing.T) {}\n",
		"b_test.go":          "package a\n\nimport \"testing\"\n\nfunc Test_B(t *testing.T) {}\n",
		"c_test.go":          "package a_test\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {}\n",
		"d.go":               "package a\n\nfunc TestD() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := whiteBoxTests(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"TestA", "Test_B"}; !slices.Equal(got, want) {
		t.Fatalf("white-box tests %v, want %v", got, want)
	}
}
