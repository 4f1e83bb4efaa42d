package topo

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

func TestParseModalias(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want PCIIDs
		ok   bool
	}{
		{"pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00", PCIIDs{Class: "0x030200", Vendor: "0x10de", Device: "0x2330", FromModalias: true}, true},
		{"pci:v000015B3d00001021sv000015B3sd00000041bc02sc07i00", PCIIDs{Class: "0x020700", Vendor: "0x15b3", Device: "0x1021", FromModalias: true}, true},
		{"pci:v0000144Dd0000A80Asv0000144Dsd0000A812bc01sc08i02", PCIIDs{Class: "0x010802", Vendor: "0x144d", Device: "0xa80a", FromModalias: true}, true},
		{"pci:v000010ded00002330sv000010desd000016c1bc03sc02i00", PCIIDs{Class: "0x030200", Vendor: "0x10de", Device: "0x2330", FromModalias: true}, true},
		// Not what the kernel prints: the caller falls back to the attributes.
		{"", PCIIDs{}, false},
		{"usb:v1D6Bp0002d0606dc09dsc00dp03ic09isc00ip00in00", PCIIDs{}, false},
		{"pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i0", PCIIDs{}, false},   // short
		{"pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i000", PCIIDs{}, false}, // long
		{"pci:v000010DEx00002330sv000010DEsd000016C1bc03sc02i00", PCIIDs{}, false},  // marker
		{"pci:v000010DEd00002330sv000010DEsd000016C1bc0Gsc02i00", PCIIDs{}, false},  // hex
		{"pci:v100010DEd00002330sv000010DEsd000016C1bc03sc02i00", PCIIDs{}, false},  // vendor over 16 bits
		{"pci:v000010DEd10002330sv000010DEsd000016C1bc03sc02i00", PCIIDs{}, false},  // device over 16 bits
	} {
		got, ok := parseModalias(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseModalias(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseModalias(f *testing.F) {
	f.Add("pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00")
	f.Add("pci:v0000ffffd0000ffffsvffffffffsdffffffffbcffscffiff")
	f.Add("pci:")
	f.Fuzz(func(t *testing.T, s string) {
		ids, ok := parseModalias(s)
		if !ok {
			if ids != (PCIIDs{}) {
				t.Fatalf("refused %q but returned %+v", s, ids)
			}
			return
		}
		if len(ids.Class) != 8 || len(ids.Vendor) != 6 || len(ids.Device) != 6 || !ids.FromModalias {
			t.Fatalf("%q: malformed ids %+v", s, ids)
		}
		for _, v := range []string{ids.Class, ids.Vendor, ids.Device} {
			if strings.ToLower(v) != v || !strings.HasPrefix(v, "0x") {
				t.Fatalf("%q: id %q not lower-case 0x hex", s, v)
			}
		}
	})
}

// Discovery reads a PCI function's ids from modalias when it has one and
// from class, vendor and device otherwise (older captures): both give the
// same topology on every fixture host, and each path reads what it says.
func TestModaliasAndAttributesAgree(t *testing.T) {
	hosts, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(hosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			// What discovery reads (a capture); without: the same with each
			// modalias replaced by the fixture's class, vendor and device.
			src := testhost.Path(t, e.Name())
			with, without := minimalCopy(t, e.Name()), minimalCopy(t, e.Name())
			removed := 0
			err := filepath.WalkDir(filepath.Join(without, "sys", "devices"), func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.Name() != "modalias" || !isBDF(filepath.Base(filepath.Dir(p))) {
					return err
				}
				removed++
				rel, err := filepath.Rel(without, filepath.Dir(p))
				if err != nil {
					return err
				}
				for _, attr := range []string{"class", "vendor", "device"} {
					b, err := os.ReadFile(filepath.Join(src, rel, attr))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(without, rel, attr), b, 0o644); err != nil {
						return err
					}
				}
				return os.Remove(p)
			})
			if err != nil {
				t.Fatal(err)
			}
			a, b := discover(t, with), discover(t, without)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("topology differs without modalias (%d removed):\nwith:    %s\nwithout: %s", removed, ja, jb)
			}
			if removed > 0 && len(a.GPUs)+len(a.NICs)+len(a.NVMe)+len(a.NVSwitches) == 0 {
				t.Fatalf("no devices found: the comparison proves nothing")
			}
			// The device id comes from modalias when it is there: a device
			// attribute that disagrees is not read.
			if len(a.GPUs) > 0 {
				dev := filepath.Join(with, "sys", "bus", "pci", "devices", a.GPUs[0].BDF, "device")
				if err := os.WriteFile(dev, []byte("0xdead\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := discover(t, with).GPUs[0].DeviceID; got != a.GPUs[0].DeviceID {
					t.Errorf("device id %q read from the device attribute, want %q from modalias", got, a.GPUs[0].DeviceID)
				}
				dev = filepath.Join(without, "sys", "bus", "pci", "devices", a.GPUs[0].BDF, "device")
				if err := os.WriteFile(dev, []byte("0xdead\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := discover(t, without).GPUs[0].DeviceID; got != "0xdead" {
					t.Errorf("without modalias the device id is %q, want the device attribute's 0xdead", got)
				}
			}
		})
	}
}
