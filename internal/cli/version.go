package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/output"
)

// SchemaVersionInfo is the schema version of VersionInfo.
const SchemaVersionInfo = "gpunode.version/v1"

// VersionInfo is the model printed by 'gpunode version'.
type VersionInfo struct {
	SchemaVersion string `json:"schemaVersion"`
	Version       string `json:"version"`
	Commit        string `json:"commit,omitempty"`
	GoVersion     string `json:"goVersion"`
	Platform      string `json:"platform"`
}

// WriteTable implements output.Tabler.
func (v VersionInfo) WriteTable(w io.Writer, _ output.Options) error {
	_, err := fmt.Fprintf(w, "gpunode %s", v.Version)
	if err == nil && v.Commit != "" {
		_, err = fmt.Fprintf(w, " (%s)", v.Commit)
	}
	if err == nil {
		_, err = fmt.Fprintf(w, " %s %s\n", v.GoVersion, v.Platform)
	}
	return err
}

// BuildVersion is what 'gpunode version' prints.
func BuildVersion() VersionInfo {
	v := VersionInfo{SchemaVersion: SchemaVersionInfo, Version: "(devel)", GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v.Commit = s.Value[:12]
			}
		}
	}
	return v
}

func (a *App) newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gpunode's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.Render(BuildVersion())
		},
	}
}
