package control

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
	"github.com/basil-project/basil/lab/internal/vc"
)

const small = `
name: control-test
hosts: [{name: esx-01}]
datastores:
  - {name: ds-1, capacity_gb: 100, device: {kind: ssd, disks: 2, raid: "1"}}
vms:
  - name: vm-1
    host: esx-01
    disks: [{unit: "scsi0:0", size_gb: 10, datastore: ds-1, workload: {oio: 4, io_size_kb: 8, read_pct: 70, random_pct: 100}}]
`

func newFront(t *testing.T) *httptest.Server {
	t.Helper()
	factory := func(s *scenario.Scenario, speed float64) (*vc.Lab, error) {
		return vc.New(s, vc.Options{User: "u", Password: "p", Speed: speed, Start: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)})
	}
	s, err := scenario.Parse([]byte(small), "small")
	if err != nil {
		t.Fatal(err)
	}
	lab, err := factory(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	front := New(lab, []byte(small), "small", factory)
	srv := httptest.NewServer(front)
	t.Cleanup(func() {
		srv.Close()
		front.Close()
	})
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return res.StatusCode, out
}

func TestControlAPI(t *testing.T) {
	srv := newFront(t)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		check                    func(t *testing.T, out map[string]any)
	}{
		{name: "status", method: "GET", path: "/lab/status", status: 200, check: func(t *testing.T, out map[string]any) {
			if out["scenario"] != "control-test" || out["disks"] != 1.0 {
				t.Errorf("status %v", out)
			}
		}},
		{name: "no truth before an interval is solved", method: "GET", path: "/lab/truth", status: 409},
		{name: "step", method: "POST", path: "/lab/time/step", body: `{"intervals": 3}`, status: 200, check: func(t *testing.T, out map[string]any) {
			if out["last_interval"] != "2030-01-01T00:01:00Z" {
				t.Errorf("last interval %v after 3 steps from midnight", out["last_interval"])
			}
		}},
		{name: "truth over 3 intervals", method: "GET", path: "/lab/truth?intervals=3", status: 200, check: func(t *testing.T, out map[string]any) {
			if out["intervals"] != 3.0 || out["total_iops"].(float64) <= 0 {
				t.Errorf("truth %v", out)
			}
		}},
		{name: "bad step", method: "POST", path: "/lab/time/step", body: `{"intervals": 0}`, status: 400},
		{name: "unknown field", method: "PUT", path: "/lab/time", body: `{"sped": 2}`, status: 400},
		{name: "speed", method: "PUT", path: "/lab/time", body: `{"speed": 60}`, status: 200, check: func(t *testing.T, out map[string]any) {
			if out["speed"] != 60.0 {
				t.Errorf("speed %v", out["speed"])
			}
		}},
		{name: "pause", method: "PUT", path: "/lab/time", body: `{"speed": 0}`, status: 200},
		{name: "fault rule", method: "POST", path: "/lab/faults/rules", body: `{"method": "RelocateVM_Task", "fault": "TaskInProgress", "count": 1}`, status: 201},
		{name: "bad fault rule names every problem", method: "POST", path: "/lab/faults/rules", body: `{"fault": "Nope", "probability": 3}`, status: 400,
			check: func(t *testing.T, out map[string]any) {
				msg, _ := out["error"].(string)
				for _, w := range []string{"method:", "fault:", "probability:"} {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not name %s", msg, w)
					}
				}
			}},
		{name: "inaccessible datastore", method: "POST", path: "/lab/faults/datastore", body: `{"datastore": "ds-1", "accessible": false}`, status: 200,
			check: func(t *testing.T, out map[string]any) {
				if l, _ := out["inaccessible_datastores"].([]any); len(l) != 1 {
					t.Errorf("faults %v", out)
				}
			}},
		{name: "latency", method: "PUT", path: "/lab/faults/latency", body: `{"ms": 5}`, status: 200},
		{name: "clear", method: "DELETE", path: "/lab/faults", status: 200, check: func(t *testing.T, out map[string]any) {
			if l, _ := out["rules"].([]any); len(l) != 0 || out["latency_ms"] != 0.0 {
				t.Errorf("faults after clear %v", out)
			}
		}},
		{name: "settings", method: "PUT", path: "/lab/settings", body: `{"max_query_metrics": 64, "cap_realtime_queries": true}`, status: 200,
			check: func(t *testing.T, out map[string]any) {
				if out["max_query_metrics"] != 64.0 || out["cap_realtime_queries"] != true {
					t.Errorf("settings %v", out)
				}
			}},
		{name: "session loss", method: "POST", path: "/lab/faults/session-loss", status: 200},
		{name: "unknown endpoint", method: "GET", path: "/lab/nope", status: 404},
		{name: "wrong method", method: "DELETE", path: "/lab/status", status: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := call(t, srv, tc.method, tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("%s %s: status %d (%v), want %d", tc.method, tc.path, status, out, tc.status)
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}

func TestLoadScenario(t *testing.T) {
	srv := newFront(t)
	status, out := call(t, srv, "POST", "/lab/scenario?name=bad.yaml", "name: bad\nhosts: [{name: h}]\nvms:\n  - name: v\n    host: nowhere\n")
	if status != 400 || !strings.Contains(out["error"].(string), `unknown host "nowhere"`) || !strings.Contains(out["error"].(string), "line 5") {
		t.Fatalf("malformed scenario: %d %v", status, out)
	}
	if _, out := call(t, srv, "GET", "/lab/status", ""); out["scenario"] != "control-test" {
		t.Fatalf("a refused scenario replaced the lab: %v", out)
	}
	other := strings.Replace(small, "control-test", "other", 1)
	if status, out := call(t, srv, "POST", "/lab/scenario?name=other.yaml", other); status != 200 || out["scenario"] != "other" {
		t.Fatalf("load: %d %v", status, out)
	}
	if status, out := call(t, srv, "POST", "/lab/reset", ""); status != 200 || out["scenario"] != "other" {
		t.Fatalf("reset: %d %v", status, out)
	}
	// The vSphere endpoints answer for the new lab.
	res, err := srv.Client().Get(srv.URL + "/sdk/vimServiceVersions.xml")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("vSphere endpoint after reload: %v %v", res, err)
	}
	res.Body.Close()
}
