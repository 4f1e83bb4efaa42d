package hostfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrNotSocket is the error (inside a *fs.PathError naming the path) for a
// path given to DialUnix that exists but is not a unix socket.
var ErrNotSocket = errors.New("not a unix socket")

// DialUnix connects to the unix stream socket at host path p (the kubelet's
// pod-resources socket, for one). Below a non-/ root the socket is found
// like every other file, resolved inside the root by openat2
// (RESOLVE_IN_ROOT), so a link in a captured or mounted tree cannot send
// the connection outside it; the connection is then made through the
// descriptor's /proc/self/fd name, which also keeps a deep root clear of the
// 108-byte limit of a socket address. The dial honours ctx (its deadline
// and cancellation); nothing here blocks without it. A missing socket is a
// *fs.PathError wrapping fs.ErrNotExist; a path that is no socket wraps
// ErrNotSocket.
func (f *FS) DialUnix(ctx context.Context, p string) (net.Conn, error) {
	p = clean(p)
	fd, err := f.openFD(p, unix.O_PATH)
	if err != nil {
		return nil, rename(err, p)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, &fs.PathError{Op: "dial", Path: p, Err: fmt.Errorf("%w (%s)", ErrNotSocket, fileType(st.Mode))}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		return nil, &fs.PathError{Op: "dial", Path: p, Err: unwrapDial(err)}
	}
	return c, nil
}

// unwrapDial drops the *net.OpError around a dial error: its address is
// the descriptor's /proc name, not the host path the caller knows.
func unwrapDial(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
