package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// SARIF 2.1.0 output: one run, the registry as the driver's rules, one
// result per finding located at its file (and the line its document starts
// on when known) with the object and field as a logical location.

// SARIFVersion and SARIFSchema identify the format.
const (
	SARIFVersion = "2.1.0"
	SARIFSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string            `json:"id"`
	ShortDescription     sarifText         `json:"shortDescription"`
	DefaultConfiguration sarifConfig       `json:"defaultConfiguration"`
	Properties           map[string]string `json:"properties,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind,omitempty"`
}

func sarifLevel(s Severity) string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes the report as a SARIF 2.1.0 log. lines maps a file to
// the start line of each of its documents (1-based document index).
func (r *Report) WriteSARIF(w io.Writer, lines map[string][]int) error {
	rules := Rules()
	index := map[string]int{}
	drv := sarifDriver{Name: "gpunode k8s lint", InformationURI: "https://github.com/gpunode/gpunode", Rules: []sarifRule{}}
	for i, ru := range rules {
		index[ru.ID] = i
		drv.Rules = append(drv.Rules, sarifRule{ID: ru.ID, ShortDescription: sarifText{ru.Summary},
			DefaultConfiguration: sarifConfig{sarifLevel(ru.Severity)}, Properties: map[string]string{"section": ru.Section}})
	}
	run := sarifRun{Tool: sarifTool{drv}, Results: []sarifResult{}}
	for _, f := range r.Findings {
		uri := filepath.ToSlash(f.File)
		if f.File == "-" || f.File == "" {
			uri = "stdin"
		}
		phys := &sarifPhysical{ArtifactLocation: sarifArtifact{URI: uri}}
		if l := lines[f.File]; f.Doc >= 1 && f.Doc <= len(l) {
			phys.Region = &sarifRegion{StartLine: l[f.Doc-1]}
		}
		fq := f.Object
		if f.Field != "" {
			fq += ":" + f.Field
		}
		msg := f.Message + " Fix: " + f.Fix + " (seed section " + f.Section + ")"
		run.Results = append(run.Results, sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity), Message: sarifText{msg},
			Locations: []sarifLocation{{PhysicalLocation: phys, LogicalLocations: []sarifLogical{{FullyQualifiedName: fq, Kind: "object"}}}}})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sarifLog{Schema: SARIFSchema, Version: SARIFVersion, Runs: []sarifRun{run}}); err != nil {
		return fmt.Errorf("encode sarif: %w", err)
	}
	return nil
}

// DocumentLines returns the 1-based line on which each non-empty YAML
// document of data starts (documents counted as objects.Documents counts
// them); a JSON file is one document on line 1.
func DocumentLines(data []byte) []int {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		return []int{1}
	}
	var out []int
	start, content := 0, false
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		tl := strings.TrimSpace(l)
		if strings.HasPrefix(l, "---") && strings.TrimSpace(l[3:]) == "" { // the YAML reader's separator
			if content {
				out = append(out, start+1)
			}
			start, content = i+1, false
			continue
		}
		if tl == "" || strings.HasPrefix(tl, "#") {
			continue
		}
		if !content {
			start = i
		}
		content = true
	}
	if content {
		out = append(out, start+1)
	}
	return out
}
