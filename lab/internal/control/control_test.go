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
	front := New(lab, []byte(small), "small", factory, Credentials{User: "u", Password: "p"})
	srv := httptest.NewServer(front)
	t.Cleanup(func() {
		srv.Close()
		front.Close()
	})
	return srv
}

// call sends a control request as the tests' clients do: with the lab's credentials and, for a
// POST or PUT, a JSON Content-Type.
func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	contentType := ""
	if method == http.MethodPost || method == http.MethodPut {
		contentType = "application/json"
	}
	status, _, out := send(t, srv, method, path, body, contentType, &Credentials{User: "u", Password: "p"})
	return status, out
}

// send sends a control request with the given Content-Type ("" for none) and credentials (nil for
// none), and returns the status, the headers and the decoded answer.
func send(t *testing.T, srv *httptest.Server, method, path, body, contentType string, creds *Credentials) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if creds != nil {
		req.SetBasicAuth(creds.User, creds.Password)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return res.StatusCode, res.Header, out
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
		{name: "automation API down", method: "PUT", path: "/lab/faults/automation", body: `{"status": 503}`, status: 200,
			check: func(t *testing.T, out map[string]any) {
				if out["automation_status"] != 503.0 {
					t.Errorf("faults %v", out)
				}
			}},
		{name: "automation API: not a 5xx", method: "PUT", path: "/lab/faults/automation", body: `{"status": 404}`, status: 400},
		{name: "clear", method: "DELETE", path: "/lab/faults", status: 200, check: func(t *testing.T, out map[string]any) {
			if l, _ := out["rules"].([]any); len(l) != 0 || out["latency_ms"] != 0.0 || out["automation_status"] != 0.0 {
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
	creds := &Credentials{User: "u", Password: "p"}
	status, _, out := send(t, srv, "POST", "/lab/scenario?name=bad.yaml", "name: bad\nhosts: [{name: h}]\nvms:\n  - name: v\n    host: nowhere\n", "application/yaml", creds)
	if status != 400 || !strings.Contains(out["error"].(string), `unknown host "nowhere"`) || !strings.Contains(out["error"].(string), "line 5") {
		t.Fatalf("malformed scenario: %d %v", status, out)
	}
	if _, out := call(t, srv, "GET", "/lab/status", ""); out["scenario"] != "control-test" {
		t.Fatalf("a refused scenario replaced the lab: %v", out)
	}
	other := strings.Replace(small, "control-test", "other", 1)
	if status, _, out := send(t, srv, "POST", "/lab/scenario?name=other.yaml", other, "application/x-yaml", creds); status != 200 || out["scenario"] != "other" {
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

func TestControlNeedsTheLabsCredentials(t *testing.T) {
	srv := newFront(t)
	for _, tc := range []struct {
		name, method, path, body string
		creds                    *Credentials
	}{
		{name: "no credentials, reset", method: "POST", path: "/lab/reset", body: "{}"},
		{name: "no credentials, fault", method: "POST", path: "/lab/faults/rules", body: `{"method": "RelocateVM_Task", "fault": "TaskInProgress"}`},
		{name: "no credentials, speed", method: "PUT", path: "/lab/time", body: `{"speed": 60}`},
		{name: "no credentials, clear", method: "DELETE", path: "/lab/faults"},
		{name: "no credentials, ground truth", method: "GET", path: "/lab/truth"},
		{name: "no credentials, index", method: "GET", path: "/lab/"},
		{name: "no credentials, unknown endpoint", method: "GET", path: "/lab/nope"},
		{name: "wrong password", method: "PUT", path: "/lab/time", body: `{"speed": 60}`, creds: &Credentials{User: "u", Password: "q"}},
		{name: "wrong user", method: "GET", path: "/lab/status", creds: &Credentials{User: "v", Password: "p"}},
		{name: "empty password", method: "GET", path: "/lab/status", creds: &Credentials{User: "u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, header, out := send(t, srv, tc.method, tc.path, tc.body, "application/json", tc.creds)
			if status != http.StatusUnauthorized {
				t.Fatalf("%s %s: status %d (%v), want 401", tc.method, tc.path, status, out)
			}
			if !strings.HasPrefix(header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("WWW-Authenticate %q, want a Basic challenge", header.Get("WWW-Authenticate"))
			}
			if msg, _ := out["error"].(string); !strings.Contains(msg, "user and password") {
				t.Errorf("error %q does not say what is needed", msg)
			}
		})
	}
	// Nothing refused changed the lab.
	status, out := call(t, srv, "GET", "/lab/faults", "")
	if rules, _ := out["rules"].([]any); status != 200 || len(rules) != 0 {
		t.Errorf("faults after refused requests: %d %v", status, out)
	}
	if _, out := call(t, srv, "GET", "/lab/time", ""); out["speed"] != 0.0 {
		t.Errorf("speed %v after a refused PUT, want 0", out["speed"])
	}
}

func TestStateChangesNeedAJSONContentType(t *testing.T) {
	srv := newFront(t)
	creds := &Credentials{User: "u", Password: "p"}
	for _, tc := range []struct {
		name, method, path, body, contentType string
	}{
		{name: "form POST of a reset", method: "POST", path: "/lab/reset", contentType: "application/x-www-form-urlencoded"},
		{name: "text POST of a fault rule", method: "POST", path: "/lab/faults/rules", body: `{"method": "RelocateVM_Task", "fault": "TaskInProgress"}`, contentType: "text/plain"},
		{name: "multipart POST of session loss", method: "POST", path: "/lab/faults/session-loss", contentType: "multipart/form-data; boundary=x"},
		{name: "no Content-Type on a step", method: "POST", path: "/lab/time/step", body: `{"intervals": 1}`},
		{name: "text PUT of the speed", method: "PUT", path: "/lab/time", body: `{"speed": 60}`, contentType: "text/plain; charset=utf-8"},
		{name: "YAML is for scenarios only", method: "PUT", path: "/lab/settings", body: `{"max_query_metrics": 1}`, contentType: "application/yaml"},
		{name: "text scenario", method: "POST", path: "/lab/scenario", body: strings.Replace(small, "control-test", "other", 1), contentType: "text/plain"},
		{name: "malformed Content-Type", method: "PUT", path: "/lab/faults/latency", body: `{"ms": 5}`, contentType: "application/json; charset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, out := send(t, srv, tc.method, tc.path, tc.body, tc.contentType, creds)
			if status != http.StatusUnsupportedMediaType {
				t.Fatalf("%s %s as %q: status %d (%v), want 415", tc.method, tc.path, tc.contentType, status, out)
			}
			if msg, _ := out["error"].(string); !strings.Contains(msg, "application/json") {
				t.Errorf("error %q does not name the type needed", msg)
			}
		})
	}
	// Nothing refused changed the lab: same scenario, no step, no fault, speed and settings kept.
	_, out := call(t, srv, "GET", "/lab/status", "")
	if out["scenario"] != "control-test" || out["speed"] != 0.0 || out["last_interval"] != "2030-01-01T00:00:00Z" {
		t.Errorf("status after refused requests: %v", out)
	}
	if _, out := call(t, srv, "GET", "/lab/faults", ""); out["latency_ms"] != 0.0 || len(out["rules"].([]any)) != 0 {
		t.Errorf("faults after refused requests: %v", out)
	}
	if _, out := call(t, srv, "GET", "/lab/settings", ""); out["max_query_metrics"] == 1.0 {
		t.Errorf("settings after a refused PUT: %v", out)
	}
	// A charset parameter is fine, and a body-less POST needs only the header.
	if status, _, out := send(t, srv, "PUT", "/lab/time", `{"speed": 0}`, "application/json; charset=utf-8", creds); status != 200 {
		t.Errorf("JSON with a charset: %d %v", status, out)
	}
	if status, _, out := send(t, srv, "POST", "/lab/reset", "", "application/json", creds); status != 200 {
		t.Errorf("body-less reset: %d %v", status, out)
	}
	// Reads need no Content-Type.
	if status, _, out := send(t, srv, "GET", "/lab/status", "", "", creds); status != 200 {
		t.Errorf("GET without Content-Type: %d %v", status, out)
	}
}
