package houserules

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apache2SHA256 is the digest of the Apache-2.0 licence text as the Apache
// Software Foundation publishes it (https://www.apache.org/licenses/LICENSE-2.0.txt,
// also Debian's /usr/share/common-licenses/Apache-2.0).
const apache2SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestLicenceFiles keeps the project usable: LICENSE is the unmodified
// Apache-2.0 text, NOTICE names it, and the README and the Helm chart say so.
func TestLicenceFiles(t *testing.T) {
	lic, err := os.ReadFile(filepath.Join(repoRoot, "LICENSE"))
	if err != nil {
		t.Fatalf("no LICENSE: %v", err)
	}
	sum := sha256.Sum256(lic)
	if got := hex.EncodeToString(sum[:]); got != apache2SHA256 {
		t.Errorf("LICENSE sha256 %s, want the Apache-2.0 text's %s", got, apache2SHA256)
	}
	for _, c := range []struct{ file, want string }{
		{"NOTICE", "Apache License, " + "Version 2.0"},
		{"README.md", "Apache-2.0"},
		{"README.md", "[LICENSE](LICENSE)"},
		{"deploy/helm/gpunode/Chart.yaml", "artifacthub.io/license: Apache-2.0"},
	} {
		data, err := os.ReadFile(filepath.Join(repoRoot, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), c.want) {
			t.Errorf("%s does not contain %q", c.file, c.want)
		}
	}
}
