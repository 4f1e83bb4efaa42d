// Command proctime measures whole-process cost: it runs each given command
// line N times, round robin (so that a slow moment of the machine hits all
// of them alike), and prints per command the median and 90th percentile wall
// time and the peak RSS, one line each:
//
//	proctime -n 51 'true' 'numactl --cpunodebind=0 --membind=0 true' 'gpunode bind --node 0 --quiet -- true'
//	LABEL                       MEDIAN_MS  P90_MS  MAXRSS_KB
//
// A command line is split on white space (no shell, no quoting): the
// figures are for the program itself, not a shell around it. Output of the
// commands is discarded; their exit status is printed (gpunode audit exits
// 1 on drift, which is a result, not a failure); a command that cannot be
// started ends the run.
//
// With -cpu a last column CPU_MS is the median CPU time (user+sys, from the
// child's rusage) of the runs: on a loaded machine it moves far less than
// the wall time, which includes waiting for a core.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	n := flag.Int("n", 31, "runs per command")
	warm := flag.Int("warm", 3, "untimed runs per command first (page cache, CPU frequency)")
	withCPU := flag.Bool("cpu", false, "add a CPU_MS column: median user+sys time of the process")
	flag.Parse()
	if flag.NArg() == 0 || *n < 1 || *n > 100000 {
		fmt.Fprintln(os.Stderr, "usage: proctime [-n RUNS] [-warm RUNS] 'command args' ...")
		os.Exit(2)
	}
	cmds := make([][]string, flag.NArg())
	for i, line := range flag.Args() {
		cmds[i] = strings.Fields(line)
		if len(cmds[i]) == 0 {
			fmt.Fprintf(os.Stderr, "proctime: command %d is empty\n", i+1)
			os.Exit(2)
		}
	}
	walls := make([][]time.Duration, len(cmds))
	cpus := make([][]time.Duration, len(cmds))
	rss := make([]int64, len(cmds))
	codes := make([]int, len(cmds))
	for round := -*warm; round < *n; round++ {
		for i, c := range cmds {
			d, cpu, maxrss, code, err := runOnce(c)
			if err != nil {
				fmt.Fprintf(os.Stderr, "proctime: %s: %v\n", strings.Join(c, " "), err)
				os.Exit(3)
			}
			if round < 0 {
				continue
			}
			codes[i] = code
			walls[i] = append(walls[i], d)
			cpus[i] = append(cpus[i], cpu)
			rss[i] = max(rss[i], maxrss)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	head := "COMMAND\tMEDIAN_MS\tP90_MS\tMAXRSS_KB\tEXIT"
	if *withCPU {
		head += "\tCPU_MS"
	}
	fmt.Fprintln(tw, head)
	for i, c := range cmds {
		w := walls[i]
		sort.Slice(w, func(a, b int) bool { return w[a] < w[b] })
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%d\t%d", strings.Join(c, " "), ms(w[len(w)/2]), ms(w[(len(w)*9)/10]), rss[i], codes[i])
		if *withCPU {
			u := cpus[i]
			sort.Slice(u, func(a, b int) bool { return u[a] < u[b] })
			fmt.Fprintf(tw, "\t%.3f", ms(u[len(u)/2]))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func runOnce(argv []string) (wall, cpu time.Duration, maxrss int64, code int, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	t0 := time.Now()
	err = cmd.Run()
	wall = time.Since(t0)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, 0, 0, 0, err
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return wall, cpu, maxrss, cmd.ProcessState.ExitCode(), nil
}
