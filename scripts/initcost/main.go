// Command initcost reports what package initialisation costs a Go binary at
// start-up and which share of it is reachable only through given packages
// (so that leaving them out of the link would save it).
//
//	go list -deps -json ./cmd/gpunode >deps.json
//	for i in $(seq 21); do GODEBUG=inittrace=1 gpunode version 2>trace.$i >/dev/null; done
//	initcost -deps deps.json -root github.com/gpunode/gpunode/cmd/gpunode trace.* -- PKG[,PKG...] ...
//
// Each package's init time is its median over the trace files (one per
// run); a group of packages separated by commas is left out together.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	depsFile := flag.String("deps", "", "output of go list -deps -json for the binary")
	root := flag.String("root", "", "import path of the binary's main package")
	flag.Parse()
	args := flag.Args()
	sep := slices.Index(args, "--")
	if *depsFile == "" || *root == "" || sep < 1 {
		fmt.Fprintln(os.Stderr, "usage: initcost -deps deps.json -root MAIN trace... -- PKG[,PKG...] ...")
		os.Exit(2)
	}
	graph, err := readDeps(*depsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "initcost:", err)
		os.Exit(3)
	}
	cost, runs, err := readTraces(args[:sep])
	if err != nil {
		fmt.Fprintln(os.Stderr, "initcost:", err)
		os.Exit(3)
	}
	all := reach(graph, *root, nil)
	total := 0.0
	for p := range all {
		total += cost[p]
	}
	fmt.Printf("package inits: %d packages linked, %.2f ms (sum of per-package medians over %d runs)\n", len(all), total, runs)
	for _, group := range args[sep+1:] {
		skip := map[string]bool{}
		for _, p := range strings.Split(group, ",") {
			skip[p] = true
		}
		rest := reach(graph, *root, skip)
		var only []string
		sum := 0.0
		for p := range all {
			if !rest[p] {
				only = append(only, p)
				sum += cost[p]
			}
		}
		sort.Slice(only, func(i, j int) bool { return cost[only[i]] > cost[only[j]] })
		var top []string
		for _, p := range only[:min(4, len(only))] {
			top = append(top, fmt.Sprintf("%s %.2f", p, cost[p]))
		}
		fmt.Printf("  only through %s: %d packages, %.2f ms (%.0f%%); largest: %s\n", group, len(only), sum, 100*sum/max(total, 1e-9), strings.Join(top, ", "))
	}
}

func readDeps(name string) (map[string][]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := map[string][]string{}
	dec := json.NewDecoder(f)
	for len(g) < 1<<20 {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return g, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		g[p.ImportPath] = p.Imports
	}
	return nil, fmt.Errorf("%s: more than %d packages", name, 1<<20)
}

// readTraces returns each package's median init time (ms) over the files.
func readTraces(files []string) (map[string]float64, int, error) {
	samples := map[string][]float64{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// init PKG @T ms, D ms clock, B bytes, N allocs
			fs := strings.Fields(sc.Text())
			if len(fs) < 7 || fs[0] != "init" || fs[6] != "clock," {
				continue
			}
			v, err := strconv.ParseFloat(fs[4], 64)
			if err == nil {
				samples[fs[1]] = append(samples[fs[1]], v)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	cost := map[string]float64{}
	for p, v := range samples {
		sort.Float64s(v)
		cost[p] = v[len(v)/2]
	}
	return cost, len(files), nil
}

// reach is the set of packages reachable from root without entering skip.
func reach(g map[string][]string, root string, skip map[string]bool) map[string]bool {
	seen := map[string]bool{}
	stack := []string{root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] || skip[p] {
			continue
		}
		seen[p] = true
		stack = append(stack, g[p]...)
	}
	return seen
}
