package scenario

import (
	"strings"
	"testing"
)

// Fields the physics added: the LUN queue depth setting and the flash channels and stripe unit.
func TestPhysicsFields(t *testing.T) {
	src := good + "settings: {lun_queue_depth: 64}\n"
	src = strings.Replace(src, "device: {kind: sata7k, disks: 7, raid: \"6\"}", "device: {kind: sata7k, disks: 7, raid: \"6\", service: {stripe_kb: 128}}", 1)
	s, err := Parse([]byte(src), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Settings.LUNQueueDepth != 64 || s.Datastores[1].Device.Service.StripeKB != 128 {
		t.Fatalf("fields not decoded: %+v %+v", s.Settings, s.Datastores[1].Device.Service)
	}
	if d, _ := Parse([]byte(good), "default.yaml"); d.Settings.LUNQueueDepth != 32 {
		t.Errorf("default LUN queue depth %d, want ESXi's 32", d.Settings.LUNQueueDepth)
	}
	bad := good + "settings: {lun_queue_depth: 5000}\n"
	bad = strings.Replace(bad, "device: {kind: sata7k, disks: 7, raid: \"6\"}", "device: {kind: sata7k, disks: 7, raid: \"6\", service: {channels: -2, stripe_kb: -1}}", 1)
	_, err = Parse([]byte(bad), "bad.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"settings.lun_queue_depth", "service.channels", "service.stripe_kb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
