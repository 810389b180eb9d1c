// Package control is the lab's control API under /lab/ on the lab's own listener: load or reset a
// scenario, run or step simulated time, read the ground truth and the placement, inject and clear
// faults. Tests and benchmarks use it; the Basil service never does. Every other path goes to the
// current lab's vSphere endpoints.
//
// Every control request needs the lab's user and password (HTTP Basic), and every POST or PUT a
// JSON (or, for a scenario, YAML) Content-Type: the listener is shared with the vSphere API, and a
// browser page elsewhere can send a cross-site form POST (form or text content types only) to it.
package control

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
	"github.com/basil-project/basil/lab/internal/vc"
)

// Factory builds a lab from a validated scenario (the options besides the scenario are fixed by
// the command line).
type Factory func(s *scenario.Scenario, speed float64) (*vc.Lab, error)

// maxScenarioBytes bounds an uploaded scenario.
const maxScenarioBytes = 32 << 20

// Credentials are the account the control API requires: the lab's own user and password.
type Credentials struct {
	User, Password string
}

// allows reports whether r carries these credentials (HTTP Basic). Both sides are hashed first so
// the comparison takes the same time whatever the length of a guess; empty credentials allow
// nothing.
func (c Credentials) allows(r *http.Request) bool {
	user, password, ok := r.BasicAuth()
	if !ok || c.User == "" || c.Password == "" {
		return false
	}
	gotUser, wantUser := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(c.User))
	gotPassword, wantPassword := sha256.Sum256([]byte(password)), sha256.Sum256([]byte(c.Password))
	userOK := subtle.ConstantTimeCompare(gotUser[:], wantUser[:])
	passwordOK := subtle.ConstantTimeCompare(gotPassword[:], wantPassword[:])
	return userOK&passwordOK == 1
}

// Front serves the control API and forwards everything else to the current lab.
type Front struct {
	factory Factory
	creds   Credentials

	mu     sync.RWMutex
	lab    *vc.Lab
	source []byte // the current scenario's text, for reset
	name   string // where it came from
}

// New serves lab, built from the scenario text source named name; control requests must carry
// creds.
func New(lab *vc.Lab, source []byte, name string, factory Factory, creds Credentials) *Front {
	return &Front{factory: factory, creds: creds, lab: lab, source: source, name: name}
}

// Lab returns the current lab.
func (f *Front) Lab() *vc.Lab {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.lab
}

// Close closes the current lab.
func (f *Front) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lab != nil {
		f.lab.Close()
		f.lab = nil
	}
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/lab" || strings.HasPrefix(r.URL.Path, "/lab/") {
		f.serveControl(w, r)
		return
	}
	lab := f.Lab()
	if lab == nil {
		http.Error(w, "the lab is shutting down", http.StatusServiceUnavailable)
		return
	}
	lab.Handler().ServeHTTP(w, r)
}

// Load replaces the current lab with one running the given scenario text; a malformed scenario
// is refused with the scenario package's message and changes nothing.
func (f *Front) Load(source []byte, name string) error {
	s, err := scenario.Parse(source, name)
	if err != nil {
		return err
	}
	speed := 1.0
	if cur := f.Lab(); cur != nil {
		speed = cur.Clock().Speed()
	}
	lab, err := f.factory(s, speed)
	if err != nil {
		return err
	}
	f.mu.Lock()
	old := f.lab
	f.lab, f.source, f.name = lab, source, name
	f.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	var he *httpError
	if errors.As(err, &he) {
		status = he.status
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// decode reads a JSON body into v, refusing unknown fields.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: %v", err)
	}
	return nil
}

type route struct {
	method, path string
	doc          string
	handle       func(f *Front, w http.ResponseWriter, r *http.Request) error
}

// jsonType is the Content-Type every POST and PUT must carry; a scenario may also be sent as YAML.
// None of them is a type a cross-site HTML form can send, and a script on another origin needs a
// CORS preflight for them, which the lab never grants.
const jsonType = "application/json"

var scenarioTypes = []string{jsonType, "application/yaml", "application/x-yaml"}

// accepts lists the media types a route's body may have; nil for GET and DELETE.
func (rt route) accepts() []string {
	switch {
	case rt.method != http.MethodPost && rt.method != http.MethodPut:
		return nil
	case rt.path == "/lab/scenario":
		return scenarioTypes
	default:
		return []string{jsonType}
	}
}

// checkContentType refuses a state-changing request whose Content-Type is not one of accepted.
func checkContentType(r *http.Request, accepted []string) error {
	if accepted == nil {
		return nil
	}
	header := r.Header.Get("Content-Type")
	media, _, err := mime.ParseMediaType(header)
	if err == nil {
		for _, a := range accepted {
			if media == a {
				return nil
			}
		}
	}
	return &httpError{http.StatusUnsupportedMediaType,
		fmt.Sprintf("Content-Type: %s %s needs %s, got %q", r.Method, r.URL.Path, strings.Join(accepted, " or "), header)}
}

var routes []route

func init() {
	routes = []route{
		{"GET", "/lab/", "this index", (*Front).index},
		{"GET", "/lab/status", "scenario, simulated time, speed, last interval", (*Front).status},
		{"POST", "/lab/scenario", "load a scenario (YAML body); 400 with every problem if malformed", (*Front).loadScenario},
		{"POST", "/lab/reset", "reload the current scenario from scratch", (*Front).reset},
		{"GET", "/lab/time", "simulated time and speed", (*Front).getTime},
		{"PUT", "/lab/time", `set the speed: {"speed": 60} (0 pauses)`, (*Front).setTime},
		{"POST", "/lab/time/step", `advance now by N intervals, solving each: {"intervals": 3}`, (*Front).step},
		{"GET", "/lab/truth", "ground truth of the last interval, or ?intervals=N averaged", (*Front).truth},
		{"GET", "/lab/trace", "a request trace of one disk over the last N intervals: ?vm=NAME&unit=scsi0:1&intervals=N&format=spc|csv&seed=S", (*Front).trace},
		{"GET", "/lab/placement", "placement of VMs and disks, disk IO settings, datastores, relocations", (*Front).placement},
		{"GET", "/lab/settings", "max_query_metrics and cap_realtime_queries", (*Front).getSettings},
		{"PUT", "/lab/settings", `{"max_query_metrics": 64, "cap_realtime_queries": true} (either)`, (*Front).setSettings},
		{"GET", "/lab/faults", "armed fault rules, added latency, inaccessible datastores", (*Front).faults},
		{"POST", "/lab/faults/rules", `fail a method: {"method": "RelocateVM_Task", "fault": "TaskInProgress", "message": "...", "probability": 1, "count": 1, "object": "vm-42", "delivery": "task"|"call"}`, (*Front).addRule},
		{"POST", "/lab/faults/session-loss", "invalidate every SOAP and Automation API session", (*Front).sessionLoss},
		{"POST", "/lab/faults/datastore", `{"datastore": "ds-01", "accessible": false}`, (*Front).datastore},
		{"PUT", "/lab/faults/latency", `add latency to every vSphere API call: {"ms": 500}`, (*Front).latency},
		{"PUT", "/lab/faults/automation", `the Automation API answers every call with an HTTP 5xx: {"status": 503} (0 serves)`, (*Front).automation},
		{"DELETE", "/lab/faults", "clear every fault (rules, latency, inaccessible datastores)", (*Front).clearFaults},
	}
}

func (f *Front) serveControl(w http.ResponseWriter, r *http.Request) {
	if !f.creds.allows(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="basil-lab control", charset="UTF-8"`)
		writeError(w, &httpError{http.StatusUnauthorized, "the control API needs the lab's user and password (HTTP Basic)"})
		return
	}
	path := r.URL.Path
	if path == "/lab" {
		path = "/lab/"
	}
	allowed := []string{}
	for _, rt := range routes {
		if rt.path != path {
			continue
		}
		if rt.method != r.Method {
			allowed = append(allowed, rt.method)
			continue
		}
		if err := checkContentType(r, rt.accepts()); err != nil {
			writeError(w, err)
			return
		}
		if err := rt.handle(f, w, r); err != nil {
			writeError(w, err)
		}
		return
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: use %s", r.Method, path, strings.Join(allowed, " or "))})
		return
	}
	writeError(w, &httpError{http.StatusNotFound, "no control endpoint " + path + " (GET /lab/ lists them)"})
}

func (f *Front) index(w http.ResponseWriter, _ *http.Request) error {
	type entry struct{ Method, Path, Doc string }
	out := make([]entry, 0, len(routes))
	for _, rt := range routes {
		out = append(out, entry{rt.method, rt.path, rt.doc})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (f *Front) current() (*vc.Lab, error) {
	lab := f.Lab()
	if lab == nil {
		return nil, &httpError{http.StatusServiceUnavailable, "the lab is shutting down"}
	}
	return lab, nil
}

type statusView struct {
	Scenario     string    `json:"scenario"`
	Source       string    `json:"source"`
	InstanceUUID string    `json:"instance_uuid"`
	Time         time.Time `json:"time"`
	Speed        float64   `json:"speed"`
	LastInterval time.Time `json:"last_interval"`
	Hosts        int       `json:"hosts"`
	Datastores   int       `json:"datastores"`
	VMs          int       `json:"vms"`
	Disks        int       `json:"disks"`
}

func (f *Front) statusOf(lab *vc.Lab) statusView {
	f.mu.RLock()
	name := f.name
	f.mu.RUnlock()
	s := lab.Scenario
	disks := 0
	for _, v := range s.VMs {
		disks += len(v.Disks)
	}
	return statusView{
		Scenario: s.Name, Source: name, InstanceUUID: lab.InstanceUUID(), Time: lab.Clock().Now(),
		Speed: lab.Clock().Speed(), LastInterval: lab.LastInterval(),
		Hosts: len(s.Hosts), Datastores: len(s.Datastores), VMs: len(s.VMs), Disks: disks,
	}
}

func (f *Front) status(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f.statusOf(lab))
	return nil
}

func (f *Front) loadScenario(w http.ResponseWriter, r *http.Request) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxScenarioBytes+1))
	if err != nil {
		return badRequest("body: %v", err)
	}
	if len(data) > maxScenarioBytes {
		return badRequest("body: a scenario may not exceed %d bytes", maxScenarioBytes)
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "uploaded scenario"
	}
	if err := f.Load(data, name); err != nil {
		return badRequest("%v", err)
	}
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f.statusOf(lab))
	return nil
}

func (f *Front) reset(w http.ResponseWriter, r *http.Request) error {
	f.mu.RLock()
	src, name := f.source, f.name
	f.mu.RUnlock()
	if err := f.Load(src, name); err != nil {
		return err
	}
	return f.status(w, r)
}

type timeView struct {
	Now          time.Time `json:"now"`
	Speed        float64   `json:"speed"`
	LastInterval time.Time `json:"last_interval"`
}

func (f *Front) timeOf(lab *vc.Lab) timeView {
	return timeView{Now: lab.Clock().Now(), Speed: lab.Clock().Speed(), LastInterval: lab.LastInterval()}
}

func (f *Front) getTime(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f.timeOf(lab))
	return nil
}

func (f *Front) setTime(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var body struct {
		Speed *float64 `json:"speed"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Speed == nil {
		return badRequest("speed: is required")
	}
	if err := lab.SetSpeed(*body.Speed); err != nil {
		return badRequest("speed: %v", err)
	}
	writeJSON(w, http.StatusOK, f.timeOf(lab))
	return nil
}

func (f *Front) step(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var body struct {
		Intervals int `json:"intervals"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if _, err := lab.StepIntervals(body.Intervals); err != nil {
		return badRequest("%v", err)
	}
	writeJSON(w, http.StatusOK, f.timeOf(lab))
	return nil
}

func (f *Front) truth(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	n := 1
	if s := r.URL.Query().Get("intervals"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			return badRequest("intervals: must be a positive integer, got %q", s)
		}
	}
	t, err := lab.GroundTruth(n)
	if err != nil {
		return &httpError{http.StatusConflict, err.Error()}
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (f *Front) trace(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	n, format, seed := 1, q.Get("format"), int64(1)
	if s := q.Get("intervals"); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			return badRequest("intervals: must be a positive integer, got %q", s)
		}
	}
	if s := q.Get("seed"); s != "" {
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			return badRequest("seed: must be an integer, got %q", s)
		}
	}
	if format == "" {
		format = "spc"
	}
	if q.Get("vm") == "" || q.Get("unit") == "" {
		return badRequest("vm and unit: both are required (the VM's name and the disk's unit, scsi0:1)")
	}
	// Checked before anything is written, so a bad request is answered 400, not a truncated 200.
	if _, _, err := lab.CheckTrace(q.Get("vm"), q.Get("unit"), n, format); err != nil {
		return badRequest("%s", err.Error())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = lab.WriteTrace(w, q.Get("vm"), q.Get("unit"), n, format, seed)
	return nil
}

func (f *Front) placement(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, lab.Placement())
	return nil
}

func (f *Front) getSettings(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, lab.CurrentSettings())
	return nil
}

func (f *Front) setSettings(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var body struct {
		MaxQueryMetrics       *int64 `json:"max_query_metrics"`
		CapRealtimeQueries    *bool  `json:"cap_realtime_queries"`
		DropServerCertificate *bool  `json:"drop_server_certificate"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.MaxQueryMetrics != nil {
		lab.SetMaxQueryMetrics(*body.MaxQueryMetrics)
	}
	if body.CapRealtimeQueries != nil {
		lab.SetCapRealtimeQueries(*body.CapRealtimeQueries)
	}
	if body.DropServerCertificate != nil {
		lab.SetDropServerCertificate(*body.DropServerCertificate)
	}
	writeJSON(w, http.StatusOK, lab.CurrentSettings())
	return nil
}

type faultsView struct {
	Rules            []vc.FaultRule `json:"rules"`
	LatencyMs        float64        `json:"latency_ms"`
	Inaccessible     []string       `json:"inaccessible_datastores"`
	AutomationStatus int            `json:"automation_status"`
}

func (f *Front) faultsOf(lab *vc.Lab) faultsView {
	v := faultsView{
		Rules: lab.Faults(), LatencyMs: float64(lab.Latency()) / float64(time.Millisecond), Inaccessible: []string{},
		AutomationStatus: lab.AutomationStatus(),
	}
	if v.Rules == nil {
		v.Rules = []vc.FaultRule{}
	}
	for _, d := range lab.Placement().Datastores {
		if !d.Accessible {
			v.Inaccessible = append(v.Inaccessible, d.Name)
		}
	}
	return v
}

func (f *Front) faults(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f.faultsOf(lab))
	return nil
}

func (f *Front) addRule(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var rule vc.FaultRule
	if err := decode(r, &rule); err != nil {
		return err
	}
	added, err := lab.AddFault(rule)
	if err != nil {
		return badRequest("%v", err)
	}
	writeJSON(w, http.StatusCreated, added)
	return nil
}

func (f *Front) sessionLoss(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"sessions": lab.KillSessions()})
	return nil
}

func (f *Front) datastore(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var body struct {
		Datastore  string `json:"datastore"`
		Accessible *bool  `json:"accessible"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	var problems []string
	if body.Datastore == "" {
		problems = append(problems, "datastore: is required")
	}
	if body.Accessible == nil {
		problems = append(problems, "accessible: is required (true or false)")
	}
	if len(problems) > 0 {
		return badRequest("%s", strings.Join(problems, "; "))
	}
	if err := lab.SetAccessible(body.Datastore, *body.Accessible); err != nil {
		return badRequest("%v", err)
	}
	writeJSON(w, http.StatusOK, f.faultsOf(lab))
	return nil
}

func (f *Front) latency(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var body struct {
		Ms *float64 `json:"ms"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Ms == nil {
		return badRequest("ms: is required")
	}
	if err := lab.SetLatency(time.Duration(*body.Ms * float64(time.Millisecond))); err != nil {
		return badRequest("%v", err)
	}
	writeJSON(w, http.StatusOK, f.faultsOf(lab))
	return nil
}

func (f *Front) automation(w http.ResponseWriter, r *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	var body struct {
		Status *int `json:"status"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Status == nil {
		return badRequest("status: is required (an HTTP 5xx status, or 0 to serve again)")
	}
	if err := lab.SetAutomationStatus(*body.Status); err != nil {
		return badRequest("%v", err)
	}
	writeJSON(w, http.StatusOK, f.faultsOf(lab))
	return nil
}

func (f *Front) clearFaults(w http.ResponseWriter, _ *http.Request) error {
	lab, err := f.current()
	if err != nil {
		return err
	}
	lab.ClearFaults()
	writeJSON(w, http.StatusOK, f.faultsOf(lab))
	return nil
}
