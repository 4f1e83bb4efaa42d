package cli

import "golang.org/x/sys/unix"

// execve replaces the current process image; it returns only on failure.
func execve(argv0 string, argv, envv []string) error {
	return unix.Exec(argv0, argv, envv)
}
