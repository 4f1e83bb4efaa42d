package cli

// reportRefused prints a warning for every host path the command's FS
// refused to read because it was not a regular file (a FIFO, socket or device
// in place of a sysfs/procfs attribute or a journal). The read itself failed
// at once instead of hanging; this makes sure the path is named even where a
// command treated the failed read as "unknown".
func (a *App) reportRefused() {
	if a.host == nil {
		return
	}
	for _, msg := range a.host.Refused() {
		a.Warnf("%s: refused to read it", msg)
	}
}
