package mig

import "fmt"

// NVML GPU-instance profile enums (nvml.GPU_INSTANCE_PROFILE_*).
const (
	nvmlGI1Slice     = 0
	nvmlGI2Slice     = 1
	nvmlGI3Slice     = 2
	nvmlGI4Slice     = 3
	nvmlGI7Slice     = 4
	nvmlGI8Slice     = 5
	nvmlGI6Slice     = 6
	nvmlGI1SliceRev1 = 7 // +me
	nvmlGI2SliceRev1 = 8 // +me (A30)
	nvmlGI1SliceRev2 = 9 // double memory
)

// ciOptions builds the CI profiles of a GI with g compute slices whose name
// is giName. Placements follow NVML: kc CIs start at multiples of k (3c on a
// 7g at 0 and 4).
func ciOptions(g int, giName string) []CIProfile {
	var out []CIProfile
	for _, k := range []int{1, 2, 3, 4, 7} {
		if k > g {
			break
		}
		if k != g && k == 3 && g == 4 {
			continue // a 4g has no 3c
		}
		var starts []int
		step := k
		if k == 3 {
			step = 4
		}
		for s := 0; s+k <= g; s += step {
			starts = append(starts, s)
		}
		name := fmt.Sprintf("%dc.%s", k, giName)
		if k == g {
			name = giName
		}
		out = append(out, CIProfile{Name: name, ComputeSlices: k, MaxCount: len(starts), Starts: starts, Default: k == g})
		if k == g {
			break
		}
	}
	return out
}

// sevenSlice builds the seven-compute / eight-memory-slice profile table
// (-lgip IDs 19, 20, 15, 14, 9, 5, 0). mem are the memory sizes in GB of
// 1g, 1g double memory, 2g, 3g, 4g and 7g; sms the SM counts in the same
// order (0 = unknown).
func sevenSlice(mem [6]int, sms [6]int) []Profile {
	n := func(g, gb int) string { return fmt.Sprintf("%dg.%dgb", g, gb) }
	one, oneMe, oneDbl := n(1, mem[0]), n(1, mem[0])+"+me", n(1, mem[1])
	two, three, four, seven := n(2, mem[2]), n(3, mem[3]), n(4, mem[4]), n(7, mem[5])
	return []Profile{
		{ID: 19, NVMLProfile: nvmlGI1Slice, Name: one, ComputeSlices: 1, MemorySlices: 1, MemoryGB: mem[0], MaxCount: 7,
			Starts: []int{0, 1, 2, 3, 4, 5, 6}, SMs: sms[0], ComputeInstances: ciOptions(1, one)},
		{ID: 20, NVMLProfile: nvmlGI1SliceRev1, Name: oneMe, ComputeSlices: 1, MemorySlices: 1, MemoryGB: mem[0], MaxCount: 1,
			Starts: []int{0, 1, 2, 3, 4, 5, 6}, SMs: sms[0], MediaExtensions: true, ComputeInstances: ciOptions(1, oneMe)},
		{ID: 15, NVMLProfile: nvmlGI1SliceRev2, Name: oneDbl, ComputeSlices: 1, MemorySlices: 2, MemoryGB: mem[1], MaxCount: 4,
			Starts: []int{0, 2, 4, 6}, SMs: sms[1], ComputeInstances: ciOptions(1, oneDbl)},
		{ID: 14, NVMLProfile: nvmlGI2Slice, Name: two, ComputeSlices: 2, MemorySlices: 2, MemoryGB: mem[2], MaxCount: 3,
			Starts: []int{0, 2, 4}, SMs: sms[2], ComputeInstances: ciOptions(2, two)},
		{ID: 9, NVMLProfile: nvmlGI3Slice, Name: three, ComputeSlices: 3, MemorySlices: 4, MemoryGB: mem[3], MaxCount: 2,
			Starts: []int{0, 4}, SMs: sms[3], ComputeInstances: ciOptions(3, three)},
		{ID: 5, NVMLProfile: nvmlGI4Slice, Name: four, ComputeSlices: 4, MemorySlices: 4, MemoryGB: mem[4], MaxCount: 1,
			Starts: []int{0}, SMs: sms[4], ComputeInstances: ciOptions(4, four)},
		{ID: 0, NVMLProfile: nvmlGI7Slice, Name: seven, ComputeSlices: 7, MemorySlices: 8, MemoryGB: mem[5], MaxCount: 1,
			Starts: []int{0}, SMs: sms[5], ComputeInstances: ciOptions(7, seven)},
	}
}

func sevenSliceProduct(key string, names, aliases []string, ids []uint16, mem, sms [6]int, note string) Product {
	return Product{Key: key, Names: names, Aliases: aliases, DeviceIDs: ids, ComputeSlices: 7, MemorySlices: 8,
		MediaExtensionLimit: 1, Profiles: sevenSlice(mem, sms), Source: "builtin", Note: note}
}

const assumedPlacements = "placements assumed identical to H100 (not yet confirmed from -lgipp on this product)"

// builtinProducts returns the built-in catalogue data. Sources: NVIDIA MIG
// user guide profile tables, `nvidia-smi mig -lgip/-lgipp` output (A100-40,
// H100-80, H100 NVL), go-nvml's dgxa100/a30 mocks (SM counts) and
// mig-parted's default config (device ids).
func builtinProducts() []Product {
	ps := builtinTable()
	// On A100-40GB the double-memory 1g profile (1g.10gb, ID 15) came with R525.
	ps[0].Profiles[2].Note = "needs driver R525 or newer"
	return ps
}

func builtinTable() []Product {
	unknown := [6]int{}
	a100 := [6]int{14, 14, 28, 42, 56, 98}
	hopperNVL := [6]int{16, 26, 32, 60, 64, 132}
	return []Product{
		sevenSliceProduct("A100-40GB",
			[]string{"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100-PG509-200", "NVIDIA A800-SXM4-40GB", "NVIDIA A800 40GB Active"},
			[]string{"A100-SXM4-40GB", "A100-PCIE-40GB", "A100-40G"},
			[]uint16{0x20B0, 0x20B1, 0x20F1, 0x20F6}, [6]int{5, 10, 10, 20, 20, 40}, a100, ""),
		sevenSliceProduct("A100-80GB",
			[]string{"NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB", "NVIDIA A800-SXM4-80GB", "NVIDIA A800 80GB PCIe"},
			[]string{"A100-SXM4-80GB", "A100-PCIE-80GB", "A100-80G"},
			[]uint16{0x20B2, 0x20B5, 0x20F3, 0x20F5}, [6]int{10, 20, 20, 40, 40, 80}, a100, ""),
		{Key: "A30-24GB", Names: []string{"NVIDIA A30"}, Aliases: []string{"A30", "A30-PCIE-24GB"},
			DeviceIDs: []uint16{0x20B7}, ComputeSlices: 4, MemorySlices: 4, MediaExtensionLimit: 1, Source: "builtin",
			Profiles: []Profile{
				{ID: 14, NVMLProfile: nvmlGI1Slice, Name: "1g.6gb", ComputeSlices: 1, MemorySlices: 1, MemoryGB: 6, MaxCount: 4,
					Starts: []int{0, 1, 2, 3}, SMs: 14, ComputeInstances: ciOptions(1, "1g.6gb")},
				{ID: 21, NVMLProfile: nvmlGI1SliceRev1, Name: "1g.6gb+me", ComputeSlices: 1, MemorySlices: 1, MemoryGB: 6, MaxCount: 1,
					Starts: []int{0, 1, 2, 3}, SMs: 14, MediaExtensions: true, ComputeInstances: ciOptions(1, "1g.6gb+me")},
				{ID: 5, NVMLProfile: nvmlGI2Slice, Name: "2g.12gb", ComputeSlices: 2, MemorySlices: 2, MemoryGB: 12, MaxCount: 2,
					Starts: []int{0, 2}, SMs: 28, ComputeInstances: ciOptions(2, "2g.12gb")},
				{ID: 6, NVMLProfile: nvmlGI2SliceRev1, Name: "2g.12gb+me", ComputeSlices: 2, MemorySlices: 2, MemoryGB: 12, MaxCount: 1,
					Starts: []int{0, 2}, SMs: 28, MediaExtensions: true, Note: "needs driver R525 or newer", ComputeInstances: ciOptions(2, "2g.12gb+me")},
				{ID: 0, NVMLProfile: nvmlGI4Slice, Name: "4g.24gb", ComputeSlices: 4, MemorySlices: 4, MemoryGB: 24, MaxCount: 1,
					Starts: []int{0}, SMs: 56, ComputeInstances: ciOptions(4, "4g.24gb")},
			}},
		sevenSliceProduct("H100-80GB",
			[]string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H800", "NVIDIA H800 PCIe"},
			[]string{"H100-SXM5-80GB", "H100-PCIE-80GB", "H100-80G", "H100-SXM"},
			[]uint16{0x2330, 0x2331, 0x2322, 0x2324}, [6]int{10, 20, 20, 40, 40, 80}, unknown, ""), // SM counts differ between SXM (132) and PCIe (114) boards
		sevenSliceProduct("H100-94GB-NVL",
			[]string{"NVIDIA H100 NVL", "NVIDIA H800 NVL"},
			[]string{"H100-NVL", "H100-94GB", "H100-NVL-94GB"},
			[]uint16{0x2321, 0x233A}, [6]int{12, 24, 24, 47, 47, 94}, hopperNVL, ""),
		sevenSliceProduct("H200-141GB",
			[]string{"NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H200 141GB HBM3e"},
			[]string{"H200", "H200-NVL", "H200-SXM-141GB"},
			[]uint16{0x2335, 0x233B}, [6]int{18, 35, 35, 71, 71, 141}, unknown, assumedPlacements),
		sevenSliceProduct("GH200-96GB",
			[]string{"NVIDIA GH200 480GB", "NVIDIA H100 96GB HBM3"},
			[]string{"GH200-480GB", "H100-96GB"},
			[]uint16{0x2342, 0x233D}, [6]int{12, 24, 24, 48, 48, 96}, hopperNVL, assumedPlacements),
		sevenSliceProduct("GH200-144GB",
			[]string{"NVIDIA GH200 144G HBM3e"},
			[]string{"GH200-144G", "GH200-144G-HBM3E", "GH200-624GB"},
			[]uint16{0x2348}, [6]int{18, 36, 36, 72, 72, 144}, hopperNVL, assumedPlacements),
		sevenSliceProduct("B200-180GB",
			[]string{"NVIDIA B200", "NVIDIA B200 180GB HBM3e"},
			[]string{"B200", "B200-SXM-180GB"},
			[]uint16{0x2901}, [6]int{23, 45, 45, 90, 90, 180}, unknown, assumedPlacements),
	}
}
