package topo

// LinkGBps is the theoretical data rate of a PCIe link in one direction, in
// GB/s (10^9 bytes per second), from the kernel's link speed ("32.0 GT/s
// PCIe") and width: the transfer rate times the lanes times the encoding
// efficiency (8b/10b up to Gen2, 128b/130b for Gen3-Gen5, FLIT mode's
// 242/256 from Gen6), before packet overheads. 0 when either is unknown.
func LinkGBps(speed string, width int) float64 {
	gts := parseGTs(speed)
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

// PCIeGen is the PCIe generation of a link speed ("Gen5"), or "".
func PCIeGen(speed string) string { return pcieGen(speed) }
