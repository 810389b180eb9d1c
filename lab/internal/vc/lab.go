// Package vc is the lab's vCenter: govmomi's simulator holding a scenario's inventory, extended
// so that storage answers to load. Performance counters come from the physics, Storage vMotion
// really moves disks and takes simulated time, storageIOAllocation and SIOC settings reach the
// physics, and faults can be injected. One Lab is one scenario loaded into one simulator.
package vc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	// Registers the vAPI (REST, tagging) endpoints of the simulator.
	_ "github.com/vmware/govmomi/vapi/simulator"

	"github.com/basil-project/basil/lab/internal/clock"
	"github.com/basil-project/basil/lab/internal/physics"
	"github.com/basil-project/basil/lab/internal/scenario"
)

// IntervalLength is vCenter's real-time sampling interval.
const IntervalLength = 20 * time.Second

// HistoryIntervals is how many real-time samples vCenter keeps: one hour.
const HistoryIntervals = 180

// Options configure a Lab beyond its scenario.
type Options struct {
	User, Password string
	// Speed is the pace of simulated time (1 = real time, 0 = paused).
	Speed float64
	// Start is the simulated time at load; the wall clock's now when zero.
	Start time.Time
	// PublicURL is the address clients use (scheme and host:port of the listener in front).
	PublicURL *url.URL
	// TLS is the listener's TLS configuration, nil for plain HTTP.
	TLS *tls.Config
	// CopyMBps is the Storage vMotion copy rate (MB/s); 200 when zero.
	CopyMBps float64
	// CapRealtimeQueries makes config.vpxd.stats.maxQueryMetrics apply to real-time queries too
	// (vCenter applies it to historical ones only).
	CapRealtimeQueries bool
}

// Lab is a scenario running in a simulated vCenter.
type Lab struct {
	Scenario *scenario.Scenario
	opts     Options

	instanceUUID string

	model   *simulator.Model
	server  *simulator.Server // the simulator's own listener, used by its internal clients only
	handler http.Handler
	vapi    http.Handler // the simulator's vAPI handler (sessions, tagging)
	tempDir string

	physics *physics.Model
	clock   *clock.Clock
	inv     *inventory
	perf    *perfStore

	// mu guards the lab's bookkeeping (placement, space, relocations, maintenance). It is never
	// held while a simulator object lock is taken, so SOAP handlers (which run holding their
	// object's lock) may take it.
	mu     sync.Mutex
	relocs *relocator

	// engineMu serialises the advance of time (interval solving, relocation progress).
	engineMu sync.Mutex
	lastEnd  time.Time // end of the last solved interval
	stop     chan struct{}
	done     chan struct{}
	wakeup   chan struct{}

	maxQueryMetrics atomic.Int64 // -1 = unlimited
	capRealtime     atomic.Bool
	dropServerCert  atomic.Bool
	faults          faultInjector
	latency         atomic.Int64 // added latency on every vSphere API call, in nanoseconds
	automation      atomic.Int64 // HTTP status the Automation API answers every call with (0: serves)
	podRefresh      atomic.Bool
	closed          atomic.Bool
}

// New loads a validated scenario into a fresh simulator and starts its clock.
func New(s *scenario.Scenario, opts Options) (*Lab, error) {
	if opts.User == "" || opts.Password == "" {
		return nil, errors.New("a user and a password are required")
	}
	if opts.CopyMBps == 0 {
		opts.CopyMBps = 200
	}
	if opts.CopyMBps < 0 {
		return nil, fmt.Errorf("copy rate must be positive, got %v MB/s", opts.CopyMBps)
	}
	start := opts.Start
	if start.IsZero() {
		start = time.Now()
	}
	start = start.UTC().Truncate(time.Second)
	clk, err := clock.New(start, opts.Speed, nil)
	if err != nil {
		return nil, err
	}
	ph, err := physics.New(s)
	if err != nil {
		return nil, fmt.Errorf("physics: %w", err)
	}
	// The scenario's time zero is the start aligned down to the sampling interval, as the intervals'
	// ends are: every interval then sits at the same offset in the workloads' ranged draws, phases
	// and bursts however many seconds past a 20 s boundary the lab started, and a scenario stepped at
	// speed 0 measures the same figures from one run to the next.
	ph.SetStart(start.Truncate(IntervalLength))

	l := &Lab{
		Scenario: s, opts: opts, physics: ph, clock: clk,
		stop: make(chan struct{}), done: make(chan struct{}), wakeup: make(chan struct{}, 1),
	}
	l.lastEnd = start.Truncate(IntervalLength)
	l.maxQueryMetrics.Store(int64(s.Settings.MaxQueryMetrics))
	l.capRealtime.Store(opts.CapRealtimeQueries)
	l.relocs = newRelocator(l)

	if err := l.build(); err != nil {
		l.teardown()
		return nil, err
	}
	l.perf = newPerfStore(l.inv)
	go l.run()
	return l, nil
}

// build creates the simulator service, its inventory and its internal listener.
func (l *Lab) build() error {
	m := simulator.VPX()
	m.Datacenter, m.Host, m.Cluster, m.ClusterHost, m.Datastore, m.Machine, m.Portgroup = 0, 0, 0, 0, 0, 0, 0
	m.Autostart = false
	if err := m.Create(); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	l.model = m
	ctx := l.newContext()
	privatizeSettings(ctx)
	privatizeExtensions(ctx)
	l.addMaxQueryMetricsSetting(ctx)
	l.setAbout(ctx)

	dir, err := os.MkdirTemp(fastTempDir(), "basil-lab-")
	if err != nil {
		return err
	}
	l.tempDir = dir
	inv, err := l.buildInventory(dir)
	if err != nil {
		return err
	}
	l.inv = inv

	// The simulator's own listener serves its internal clients (the vAPI simulator logs in over
	// it); clients of the lab come through Handler().
	svc := m.Service
	svc.Listen = &url.URL{Scheme: "http", Host: "127.0.0.1:0", User: url.UserPassword(l.opts.User, l.opts.Password)}
	svc.RegisterEndpoints = true
	l.server = svc.NewServer()
	l.adoptPublicURL(ctx)
	l.vapi = findHandler(svc.ServeMux, "/rest/")

	if err := l.createTags(); err != nil {
		return fmt.Errorf("tags: %w", err)
	}
	// The datastores' local directories served the simulator while VMs were created; from here on
	// datastores carry vCenter-like URLs and no files.
	l.finishDatastores(ctx)
	_ = os.RemoveAll(dir)
	l.tempDir = ""

	ctx.Map.Handler = l.dispatch
	l.handler = l.newHandler(svc.ServeMux)
	return nil
}

// fastTempDir prefers a memory file system: the simulator creates a directory per VM while the
// inventory is built.
func fastTempDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "basil-lab-probe-"); err == nil {
			name := f.Name()
			_ = f.Close()
			_ = os.Remove(name)
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

// adoptPublicURL points the simulator's self-references (service URLs in settings, the generic
// service ticket host) at the listener clients really use.
func (l *Lab) adoptPublicURL(ctx *simulator.Context) {
	pub := l.opts.PublicURL
	if pub == nil {
		pub = l.server.URL
	}
	sm := ctx.Map.SessionManager()
	sm.ServiceHostName = pub.Host
	if l.opts.TLS != nil {
		cfg := l.opts.TLS
		sm.TLS = func() *tls.Config { return cfg }
	}
	om := ctx.Map.OptionManager()
	for _, o := range om.Setting {
		v := o.GetOptionValue()
		s, ok := v.Value.(string)
		if !ok {
			continue
		}
		if strings.HasSuffix(v.Key, ".uri") || v.Key == "vcsim.server.url" {
			if u, err := url.Parse(s); err == nil && u.Host != "" {
				u.Scheme, u.Host, u.User = pub.Scheme, pub.Host, nil
				v.Value = u.String()
			}
		}
	}
}

// findHandler returns the handler a mux routes path to.
func findHandler(mux *http.ServeMux, path string) http.Handler {
	h, _ := mux.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}})
	return h
}

// newContext returns a simulator context for the lab's own (non-SOAP) work.
func (l *Lab) newContext() *simulator.Context {
	return &simulator.Context{Context: context.Background(), Map: l.model.Map()}
}

// Handler serves the vSphere SOAP API (/sdk), the Automation API (/api, /rest) and the vSphere
// Client session clone-ticket endpoint.
func (l *Lab) Handler() http.Handler { return l.handler }

// Clock returns the lab's simulated clock.
func (l *Lab) Clock() *clock.Clock { return l.clock }

// InstanceUUID is the vCenter instance UUID (the vc_guid of the vSphere Client).
func (l *Lab) InstanceUUID() string { return l.instanceUUID }

// Close stops the lab's clock and listener and fails its running tasks.
func (l *Lab) Close() {
	if l.closed.Swap(true) {
		return
	}
	close(l.stop)
	<-l.done
	l.relocs.abortAll()
	l.teardown()
}

func (l *Lab) teardown() {
	if l.server != nil {
		l.server.Close()
	}
	if l.model != nil && l.model.Service != nil {
		l.model.Remove()
	}
	if l.tempDir != "" {
		_ = os.RemoveAll(l.tempDir)
	}
}

// privatizeSettings gives this service its own copy of the option values: the simulator starts
// every vCenter with the same package-level slice, and several labs may live in one process.
func privatizeSettings(ctx *simulator.Context) {
	om := ctx.Map.OptionManager()
	own := make([]types.BaseOptionValue, 0, len(om.Setting)+1)
	for _, o := range om.Setting {
		v := *o.GetOptionValue()
		own = append(own, &v)
	}
	om.Setting = own
}

// privatizeExtensions does the same for the extension list.
func privatizeExtensions(ctx *simulator.Context) {
	em := ctx.Map.ExtensionManager()
	em.ExtensionList = append([]types.Extension(nil), em.ExtensionList...)
}

// setAbout makes the service content describe this vCenter with a stable instance UUID (derived
// from the scenario, so a client's stored vc_guid survives a restart of the lab).
func (l *Lab) setAbout(ctx *simulator.Context) {
	si := ctx.Map.Get(types.ManagedObjectReference{Type: "ServiceInstance", Value: "ServiceInstance"}).(*simulator.ServiceInstance)
	id := stableUUID(l.Scenario.Seed, "vcenter", l.Scenario.Name)
	si.Content.About.InstanceUuid = id
	l.instanceUUID = id
	// The simulator's template is a vCenter 6.5; clients of today (pyVmomi 8 and 9) expect 8.0.
	si.Content.About.Version = "8.0.3"
	si.Content.About.Build = "24322831"
	si.Content.About.ApiVersion = "8.0.3.0"
	si.Content.About.LicenseProductVersion = "8.0"
	si.Content.About.Name = "VMware vCenter Server"
	si.Content.About.FullName = fmt.Sprintf("VMware vCenter Server %s build-lab (Basil lab: %s)", si.Content.About.Version, l.Scenario.Name)
	l.model.ServiceContent.About = si.Content.About
}
