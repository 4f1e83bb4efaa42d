package topo

// LinkGBps is the theoretical data rate of a PCIe link in one direction, in
// GB/s (10^9 bytes per second), from its speed and width: the transfer rate
// times the lanes times the encoding efficiency (8b/10b up to Gen2,
// 128b/130b for Gen3-Gen5, FLIT mode's 242/256 from Gen6), before packet
// overheads. 0 when either is unknown.
func LinkGBps(speed PCIeSpeed, width int) float64 {
	gts := speed.GTs
	if gts == 0 || width <= 0 {
		return 0
	}
	eff := 128.0 / 130.0
	switch {
	case gts <= 5:
		eff = 8.0 / 10.0
	case gts >= 64:
		eff = 242.0 / 256.0
	}
	return gts * eff * float64(width) / 8
}
