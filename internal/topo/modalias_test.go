package topo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// FuzzParseModalias: parseModalias accepts exactly what a second reader
// (a regular expression of the kernel's format, vendor and device at most
// 0xffff) accepts, with the same ids; accepted ids written back in the
// kernel's format read the same.
func FuzzParseModalias(f *testing.F) {
	f.Add("pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00")
	f.Add("pci:v0000ffffd0000ffffsvffffffffsdffffffffbcffscffiff")
	f.Add("pci:v00010000d00002330sv000010DEsd000016C1bc03sc02i00")
	f.Add("pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i+0")
	f.Add("pci:")
	re := regexp.MustCompile(`^pci:v([0-9A-Fa-f]{8})d([0-9A-Fa-f]{8})sv[0-9A-Fa-f]{8}sd[0-9A-Fa-f]{8}bc([0-9A-Fa-f]{2})sc([0-9A-Fa-f]{2})i([0-9A-Fa-f]{2})$`)
	f.Fuzz(func(t *testing.T, s string) {
		ids, ok := parseModalias(s)
		var want PCIIDs
		m := re.FindStringSubmatch(s)
		if m != nil {
			v, _ := strconv.ParseUint(m[1], 16, 32)
			d, _ := strconv.ParseUint(m[2], 16, 32)
			bc, _ := strconv.ParseUint(m[3], 16, 8)
			sc, _ := strconv.ParseUint(m[4], 16, 8)
			pi, _ := strconv.ParseUint(m[5], 16, 8)
			if v <= 0xffff && d <= 0xffff {
				want = PCIIDs{Vendor: fmt.Sprintf("0x%04x", v), Device: fmt.Sprintf("0x%04x", d),
					Class: fmt.Sprintf("0x%02x%02x%02x", bc, sc, pi), FromModalias: true}
			}
		}
		if ok != (want != PCIIDs{}) || ids != want {
			t.Fatalf("parseModalias(%q) = %+v, %v; the second reader: %+v", s, ids, ok, want)
		}
		if !ok {
			return
		}
		var v, d, c uint64
		if _, err := fmt.Sscanf(ids.Vendor+" "+ids.Device+" "+ids.Class, "0x%x 0x%x 0x%x", &v, &d, &c); err != nil {
			t.Fatalf("%+v: %v", ids, err)
		}
		back := fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X", v, d, 0, 0, c>>16, c>>8&0xff, c&0xff)
		if again, ok := parseModalias(back); !ok || again != ids {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, ids, back, again, ok)
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
