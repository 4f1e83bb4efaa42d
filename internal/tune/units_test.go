package tune

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
)

func TestEditGrub(t *testing.T) {
	tests := []struct {
		name, in string
		params   [][2]string
		want     string
	}{
		{"append", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"\"\n", [][2]string{{"iommu", "pt"}}, "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"iommu=pt\"\n"},
		{"replace keeps others", "GRUB_CMDLINE_LINUX=\"quiet iommu=on isolcpus=1\"\n# end\n", [][2]string{{"iommu", "pt"}, {"isolcpus", "2-7"}},
			"GRUB_CMDLINE_LINUX=\"quiet iommu=pt isolcpus=2-7\"\n# end\n"},
		{"single quotes", "GRUB_CMDLINE_LINUX='a b'\n", [][2]string{{"c", "1"}}, "GRUB_CMDLINE_LINUX=\"a b c=1\"\n"},
		{"no line", "GRUB_TIMEOUT=5", [][2]string{{"idle", "poll"}}, "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"idle=poll\"\n"},
		{"already there", "GRUB_CMDLINE_LINUX=\"iommu=pt\"\n", [][2]string{{"iommu", "pt"}}, "GRUB_CMDLINE_LINUX=\"iommu=pt\"\n"},
		// GRUB_CMDLINE_LINUX_DEFAULT comes later on the command line and
		// would win: the parameter leaves it.
		{"dropped from default", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash isolcpus=4-15 nohz_full=8-15\"\nGRUB_CMDLINE_LINUX=\"\"\n", [][2]string{{"nohz_full", "4-15"}},
			"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash isolcpus=4-15\"\nGRUB_CMDLINE_LINUX=\"nohz_full=4-15\"\n"},
		{"only in default", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet iommu=on\"\nGRUB_CMDLINE_LINUX=\"iommu=pt\"\n", [][2]string{{"iommu", "pt"}},
			"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"iommu=pt\"\n"},
	}
	for _, tt := range tests {
		b, err := editGrub([]byte(tt.in), tt.params)
		if got := string(b); err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
		// Idempotent.
		if again, err := editGrub(b, tt.params); err != nil || string(again) != string(b) {
			t.Errorf("%s: second edit changed %q to %q, %v", tt.name, b, again, err)
		}
	}
	// Shell expansion in GRUB_CMDLINE_LINUX is refused, not flattened.
	for _, in := range []string{"X=1\nGRUB_CMDLINE_LINUX=\"${X} quiet\"\n", "GRUB_CMDLINE_LINUX='a$b'\n", "GRUB_CMDLINE_LINUX=\"`cat /x`\"\n"} {
		if out, err := editGrub([]byte(in), [][2]string{{"iommu", "pt"}}); err == nil || !strings.Contains(err.Error(), "shell expansion") {
			t.Errorf("editGrub(%q) = %q, %v; want a shell expansion error", in, out, err)
		}
	}
}

func TestParseShellAndCmdline(t *testing.T) {
	env := map[string]string{}
	vars := parseShellVars([]byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n# c\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT console=ttyS0\"\nX='$NOT' # comment\nexport Y=${X}z\n"), env)
	if vars["GRUB_CMDLINE_LINUX_DEFAULT"] != "quiet splash console=ttyS0" || vars["X"] != "$NOT" || vars["Y"] != "$NOTz" {
		t.Errorf("vars = %q", vars)
	}
	cl := parseCmdline(`BOOT_IMAGE=/vmlinuz root=UUID=1 ro isolcpus=managed_irq,domain,2-7 quiet dyndbg="file x +p" iommu=pt iommu=off`)
	if cl["isolcpus"] != "managed_irq,domain,2-7" || cl["dyndbg"] != "file x +p" || cl["iommu"] != "off" || cl["ro"] != "" {
		t.Errorf("cmdline = %q", cl)
	}
	k := cmdlineKnob{cpulist: true}
	if !k.equal("managed_irq,domain,2-7", "2-7") || k.equal("2-7", "2-6") || k.equal(unset, "2-7") {
		t.Error("cpulist comparison")
	}
}

func TestSysctlOrder(t *testing.T) {
	root := t.TempDir()
	fsys, _ := hostfs.New(root)
	for p, c := range map[string]string{
		"/usr/lib/sysctl.d/50-default.conf": "vm.swappiness = 30\nkernel.numa_balancing=1\n",
		"/usr/lib/sysctl.d/90-masked.conf":  "vm.swappiness = 99\n",
		"/etc/sysctl.d/90-masked.conf":      "# masks the /usr/lib one\n",
		"/etc/sysctl.d/60-net.conf":         "net/ipv4/tcp_rmem = 4096\t1  2\n-vm.zone_reclaim_mode = 0\n; c\n",
		"/etc/sysctl.conf":                  "kernel.numa_balancing = 0\n",
	} {
		mkfile(t, root, p, c)
	}
	h := &Host{FS: fsys}
	b := h.sysctlBoot()
	want := map[string]string{"vm.swappiness": "30", "kernel.numa_balancing": "0", "net.ipv4.tcp_rmem": "4096 1 2", "vm.zone_reclaim_mode": "0"}
	for k, v := range want {
		if b[k].value != v {
			t.Errorf("%s = %q (from %s), want %q", k, b[k].value, b[k].source, v)
		}
	}
	if b["kernel.numa_balancing"].source != "/etc/sysctl.conf" {
		t.Errorf("numa_balancing from %s", b["kernel.numa_balancing"].source)
	}
}

func TestLimitsAndSystemd(t *testing.T) {
	root := t.TempDir()
	fsys, _ := hostfs.New(root)
	mkfile(t, root, "/etc/security/limits.conf", "* soft memlock 64 # comment\n* hard memlock 64\n@g - nofile 10\n")
	mkfile(t, root, "/etc/security/limits.d/90-x.conf", "* - memlock infinity\n* soft nofile 100\n")
	mkfile(t, root, "/etc/systemd/system.conf", "[Manager]\nDefaultLimitMEMLOCK=64K\n[Other]\nDefaultLimitNOFILE=1\n")
	mkfile(t, root, "/etc/systemd/system.conf.d/90-x.conf", "[Manager]\nDefaultLimitMEMLOCK=infinity\n")
	h := &Host{FS: fsys}
	o, _ := limitsKnob{item: "memlock"}.read(context.Background(), h)
	if o.Current != "unlimited" {
		t.Errorf("memlock = %q", o.Current)
	}
	o, _ = limitsKnob{item: "nofile"}.read(context.Background(), h)
	if o.Current != "soft=100" {
		t.Errorf("nofile = %q", o.Current)
	}
	o, _ = systemdKnob{key: "DefaultLimitMEMLOCK", spec: spec{kind: valLimit}}.read(context.Background(), h)
	if o.Current != "unlimited" {
		t.Errorf("DefaultLimitMEMLOCK = %q", o.Current)
	}
	o, _ = systemdKnob{key: "DefaultLimitNOFILE", spec: spec{kind: valLimit}}.read(context.Background(), h)
	if o.Current != unset {
		t.Errorf("DefaultLimitNOFILE from [Other] = %q", o.Current)
	}
}

func TestFstab(t *testing.T) {
	in := "UUID=1 / ext4 defaults 0 1\n/swap.img\tnone\tswap\tsw\t0\t0\n# /old none swap sw 0 0\nUUID=2 none swap sw 0 0"
	if got := fstabSwaps([]byte(in)); strings.Join(got, ",") != "/swap.img,UUID=2" {
		t.Errorf("swaps = %q", got)
	}
	out := commentFstabSwaps([]byte(in))
	if len(fstabSwaps(out)) != 0 || !strings.Contains(string(out), "#gpunode# /swap.img\tnone") || !strings.HasPrefix(string(out), "UUID=1 / ext4") {
		t.Errorf("commented = %q", out)
	}
	if string(commentFstabSwaps(out)) != string(out) {
		t.Error("commenting twice changed the file")
	}
}

func TestDirty(t *testing.T) {
	tests := []struct {
		mem  uint64
		bg   bool
		want string
	}{
		{32 << 30, false, "20%"},
		{32 << 30, true, "10%"},
		{512 << 30, false, "8589934592"},
		{512 << 30, true, "2147483648"},
		{4 << 40, false, "34359738368"},
		{4 << 40, true, "8589934592"},
	}
	for _, tt := range tests {
		if got := autoDirty(tt.mem, tt.bg); got != tt.want {
			t.Errorf("autoDirty(%d, %v) = %s, want %s", tt.mem, tt.bg, got, tt.want)
		}
	}
	for v, want := range map[string]string{"20%": "20%", "32G": "34359738368", "8GiB": "8589934592", "100000": "100000"} {
		if got, err := (dirtyKnob{}).resolve(nil, v); err != nil || got != want {
			t.Errorf("resolve(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	for _, bad := range []string{"101%", "x", "1", "99999999999999999999T"} {
		if err := (dirtyKnob{}).validate(bad); err == nil {
			t.Errorf("validate(%q) accepted", bad)
		}
	}
	if dirtyString("20", "0") != "20%" || dirtyString("0", "123456") != "123456" {
		t.Error("dirtyString")
	}
}

func TestHousekeeping(t *testing.T) {
	cases := map[string][2]string{
		"dgx-h100":   {"0-6,56-62,112-118,168-174", "7-55,63-111,119-167,175-223"},
		"downgraded": {"0-1,16-17", "2-15,18-31"},
	}
	for host, want := range cases {
		h := NewHost(context.Background(), mustFS(t, sharedHost(t, host)))
		hk, iso, err := housekeeping(h)
		if err != nil {
			t.Fatal(err)
		}
		if hk.String() != want[0] || iso.String() != want[1] {
			t.Errorf("%s: housekeeping %s isolated %s; want %s / %s", host, hk, iso, want[0], want[1])
		}
		if !hk.Intersection(iso).IsEmpty() {
			t.Errorf("%s: overlap", host)
		}
	}
}

func TestACSControl(t *testing.T) {
	cfg := make([]byte, 4096)
	binary.LittleEndian.PutUint32(cfg[0x100:], 0x0001|1<<16|0x200<<20) // AER -> 0x200
	binary.LittleEndian.PutUint32(cfg[0x200:], 0x000d|1<<16)           // ACS, last
	binary.LittleEndian.PutUint16(cfg[0x206:], 0x001d)
	ctrl, ok, err := acsControl(cfg)
	if err != nil || !ok || ctrl != 0x1d {
		t.Errorf("acsControl = %#x, %v, %v", ctrl, ok, err)
	}
	binary.LittleEndian.PutUint32(cfg[0x200:], 0x0010|1<<16) // SR-IOV instead
	if _, ok, err := acsControl(cfg); ok || err != nil {
		t.Errorf("found ACS where there is none: %v %v", ok, err)
	}
	// A loop in the capability list terminates.
	binary.LittleEndian.PutUint32(cfg[0x200:], 0x0010|1<<16|0x100<<20)
	if _, ok, _ := acsControl(cfg); ok {
		t.Error("loop")
	}
	if _, _, err := acsControl(cfg[:64]); err == nil {
		t.Error("short config space accepted")
	}
}

func TestProcessParsers(t *testing.T) {
	if allocatorOf([]byte("7f r-xp 0 0 1 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n7f r-xp /usr/lib/libc.so.6")) != "jemalloc" {
		t.Error("jemalloc")
	}
	if allocatorOf([]byte("7f r-xp 0 0 1 /usr/lib/x86_64-linux-gnu/libc.so.6")) != "glibc" {
		t.Error("glibc")
	}
	soft, hard, ok := parseLimitsMemlock([]byte("Limit Soft Hard Units\nMax locked memory         unlimited            unlimited            bytes\n"))
	if !ok || soft != "unlimited" || hard != "unlimited" {
		t.Errorf("limits = %q %q %v", soft, hard, ok)
	}
	pols := numaPolicies([]byte("1 default anon=1\n2 bind:0-1 anon=2\n3 prefer=static:1 x\n"))
	if strings.Join(pols, " ") != "bind:0-1 default prefer=static:1" {
		t.Errorf("policies = %q", pols)
	}
	if n, ok := policyNodes("prefer=static:1"); !ok || n.String() != "1" {
		t.Errorf("policyNodes = %v %v", n, ok)
	}
	if _, ok := policyNodes("default"); ok {
		t.Error("default has nodes")
	}
	if kB("12 kB") != 12288 {
		t.Error("kB")
	}
}

func mkfile(t *testing.T, root, p, c string) {
	t.Helper()
	fsys, _ := hostfs.New(root)
	if _, err := fsys.MkdirAll(p[:strings.LastIndex(p, "/")], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzCommentFstabSwaps(f *testing.F) {
	f.Add("UUID=1 / ext4 defaults 0 1\n/swap.img\tnone\tswap\tsw\t0\t0\n# /old none swap sw 0 0\nUUID=2 none swap sw 0 0")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		out := string(commentFstabSwaps([]byte(in)))
		if sw := fstabSwaps([]byte(out)); len(sw) != 0 {
			t.Fatalf("swaps left after commenting: %q in %q", sw, out)
		}
		if again := string(commentFstabSwaps([]byte(out))); again != out {
			t.Fatalf("commenting twice changed %q to %q", out, again)
		}
		// Only whole lines are prefixed; removing the prefixes gives the input back.
		if strings.ReplaceAll(out, "#gpunode# ", "") != strings.ReplaceAll(in, "#gpunode# ", "") {
			t.Fatalf("commenting changed more than swap lines: %q -> %q", in, out)
		}
	})
}

func FuzzEditGrub(f *testing.F) {
	f.Add("GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"quiet iommu=on\"\n", "iommu", "pt")
	f.Add("GRUB_CMDLINE_LINUX='a b'", "isolcpus", "2-7")
	f.Add("", "idle", "poll")
	f.Fuzz(func(t *testing.T, in, key, val string) {
		if !isShellName(strings.ReplaceAll(strings.ReplaceAll(key, ".", "_"), "-", "_")) || strings.ContainsAny(val, " \t\n\"'\\$`") {
			t.Skip()
		}
		params := [][2]string{{key, val}}
		once, err := editGrub([]byte(in), params)
		if err != nil {
			if !strings.Contains(err.Error(), "shell expansion") {
				t.Fatalf("editGrub(%q): %v", in, err)
			}
			return
		}
		if twice, err := editGrub(once, params); err != nil || string(twice) != string(once) {
			t.Fatalf("second edit changed %q to %q, %v", once, twice, err)
		}
		// What the next boot reads has the parameter.
		cl := parseCmdline(parseShellVars(once, map[string]string{})["GRUB_CMDLINE_LINUX"])
		if got, ok := cl[key]; !ok || got != val {
			t.Fatalf("edited %q: GRUB_CMDLINE_LINUX has %s=%q (%v), want %q", once, key, got, ok, val)
		}
	})
}

// specACS is a second reader of PCIe extended config space, from the
// spec: capabilities start at 0x100; each header has the ID in bits 0-15
// and the next offset in bits 20-31 (low two bits reserved); a next offset
// of 0 (or one below 0x100) ends the list; ACS is ID 0x000D, and its
// Control register is the 16 bits at +6. A revisited offset is a loop.
func specACS(cfg []byte) (ctrl uint16, found bool) {
	seen := map[int]bool{}
	for off := 0x100; off >= 0x100 && off+8 <= len(cfg) && !seen[off]; {
		seen[off] = true
		hdr := uint32(cfg[off]) | uint32(cfg[off+1])<<8 | uint32(cfg[off+2])<<16 | uint32(cfg[off+3])<<24
		if hdr == 0 || hdr == 0xffffffff {
			return 0, false
		}
		if hdr&0xffff == 0x000d {
			return uint16(cfg[off+6]) | uint16(cfg[off+7])<<8, true
		}
		off = int(hdr>>20) &^ 3
	}
	return 0, false
}

// FuzzACSControl: below 4096 bytes an error; else the ACS Control value
// agrees with specACS, the list walked again by the spec.
func FuzzACSControl(f *testing.F) {
	cfg := make([]byte, 4096)
	binary.LittleEndian.PutUint32(cfg[0x100:], 0x0001|1<<16|0x200<<20)
	binary.LittleEndian.PutUint32(cfg[0x200:], 0x000d|1<<16)
	binary.LittleEndian.PutUint16(cfg[0x206:], 0x5f)
	f.Add(cfg)
	loop := make([]byte, 4096)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x0001|0x104<<20)
	binary.LittleEndian.PutUint32(loop[0x104:], 0x0002|0x100<<20)
	f.Add(loop)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4096 && len(b) > 0 {
			// Short inputs say little; widen them to a config space so the
			// walk is exercised too (the short case is the empty seed).
			b = append(b, make([]byte, 4096-len(b))...)
		}
		ctrl, ok, err := acsControl(b)
		if len(b) < 4096 {
			if err == nil || ok {
				t.Fatalf("%d bytes: %#x, %v, %v; want an error", len(b), ctrl, ok, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		want, found := specACS(b)
		if ok != found || ctrl != want {
			t.Fatalf("acsControl = %#x, %v; the spec's walk finds %#x, %v", ctrl, ok, want, found)
		}
	})
}
