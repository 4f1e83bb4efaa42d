package tune

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// SchemaProfiles and SchemaProfile are the schema versions of ProfileList
// and ProfileView.
const (
	SchemaProfiles = "gpunode.tune.profiles/v1"
	SchemaProfile  = "gpunode.tune.profile/v1"
)

// ProfileList is the output of 'tune profiles'.
type ProfileList struct {
	SchemaVersion string        `json:"schemaVersion"`
	Profiles      []ProfileInfo `json:"profiles"`
}

// WriteTable implements output.Tabler.
func (l *ProfileList) WriteTable(w io.Writer, o output.Options) error {
	g := output.Grid{Columns: []output.Column{
		{Name: "NAME"}, {Name: "INCLUDES"}, {Name: "SETTINGS"}, {Name: "SOURCE", Wrap: true}, {Name: "DESCRIPTION", Wrap: true},
	}}
	for _, p := range l.Profiles {
		desc := p.Description
		if p.Error != "" {
			desc = "ERROR: " + p.Error
		}
		g.AddRow(p.Name, orDash(p.Include), fmt.Sprint(p.Settings), p.Source, desc)
	}
	return output.Print(w, g, o)
}

// ListItems implements output.Lister: one row per profile.
func (l *ProfileList) ListItems() any { return l.Profiles }

// ProfileView is the output of 'tune show NAME': the resolved settings.
type ProfileView struct {
	SchemaVersion string        `json:"schemaVersion"`
	Name          string        `json:"name"`
	Description   string        `json:"description,omitempty"`
	Source        string        `json:"source"`
	Include       []string      `json:"include,omitempty"`
	Settings      []SettingView `json:"settings"`
}

// SettingView is one resolved setting of a profile.
type SettingView struct {
	ID          string    `json:"id"`
	Layer       string    `json:"layer"`
	Value       string    `json:"value"`
	From        string    `json:"from"`
	Title       string    `json:"title"`
	NeedsReboot bool      `json:"needsReboot,omitempty"`
	Why         string    `json:"why"`
	Mechanism   Mechanism `json:"mechanism"`
}

// View builds the 'tune show' model of p.
func View(cat *Catalogue, p *Profile) *ProfileView {
	v := &ProfileView{SchemaVersion: SchemaProfile, Name: p.Name, Description: p.Description, Source: p.Source, Include: p.Include, Settings: []SettingView{}}
	for _, id := range p.IDs(cat) {
		s := cat.Get(id)
		v.Settings = append(v.Settings, SettingView{ID: id, Layer: s.Layer, Value: p.Settings[id], From: p.Origin[id], Title: s.Title,
			NeedsReboot: s.NeedsReboot, Why: s.Why, Mechanism: s.Mechanism()})
	}
	return v
}

// ListItems implements output.Lister: one row per setting.
func (v *ProfileView) ListItems() any { return v.Settings }

// WriteTable implements output.Tabler.
func (v *ProfileView) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	if !o.NoHeaders {
		ew.Printf("profile %s (%s)", v.Name, v.Source)
		if len(v.Include) > 0 {
			ew.Printf(", includes %s", strings.Join(v.Include, ", "))
		}
		ew.Printf("\n")
		if v.Description != "" {
			ew.Printf("%s\n", v.Description)
		}
		ew.Printf("\n")
	}
	g := output.Grid{Columns: []output.Column{
		{Name: "LAYER"}, {Name: "SETTING"}, {Name: "VALUE", Wrap: true}, {Name: "FROM"}, {Name: "REBOOT"}, {Name: "TITLE", Wrap: true},
		{Name: "PERSISTENT", Wide: true}, {Name: "WHY", Wide: true},
	}}
	for _, s := range v.Settings {
		reboot := ""
		if s.NeedsReboot {
			reboot = "yes"
		}
		g.AddRow(s.Layer, s.ID, s.Value, s.From, orDash(reboot), s.Title, orDash(s.Mechanism.Persistent), s.Why)
	}
	if err := output.Print(ew, g, o); err != nil || o.NoHeaders {
		return err
	}
	ew.Printf("\n'auto' values are computed from the topology or memory size at audit time; 'report' shows a value without judging it.\n")
	return ew.Err
}
