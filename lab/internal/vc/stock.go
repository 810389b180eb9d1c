package vc

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"

	"github.com/vmware/govmomi/simulator"
)

// Stock is govmomi's stock vCenter simulator as vcsim serves it with its default inventory: one
// datacenter DC0, a standalone host DC0_H0, a cluster DC0_C0 of three hosts, the local datastore
// LocalDS_0, an empty datastore cluster DC0_POD0, VMs DC0_H0_VM0/1 and DC0_C0_RP0_VM0/1. Any user
// and password log in; the Automation API's JSON-RPC answers everything but sessions with a null
// output; the performance manager returns its canned series (instance "*" echoed back). None of
// the lab's physics, relocation or fault machinery is there: it is a vCenter shaped differently
// from the scenarios, for clients to be tested against.
type Stock struct {
	model   *simulator.Model
	server  *simulator.Server
	vapi    http.Handler
	handler http.Handler
}

// NewStock builds the stock model; public is the listener clients use, tlsConfig its TLS
// configuration (nil for plain HTTP).
func NewStock(public *url.URL, tlsConfig *tls.Config) (*Stock, error) {
	m := simulator.VPX()
	m.Pod = 1 // vcsim's default inventory has one (empty) datastore cluster per datacenter
	if err := m.Create(); err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	svc := m.Service
	// No user in Listen: the simulator's SessionManager then accepts any non-empty user and password.
	svc.Listen = &url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	svc.RegisterEndpoints = true
	s := &Stock{model: m, server: svc.NewServer()}
	ctx := &simulator.Context{Context: context.Background(), Map: m.Map()}
	sm := ctx.Map.SessionManager()
	if public != nil {
		sm.ServiceHostName = public.Host
	}
	if tlsConfig != nil {
		sm.TLS = func() *tls.Config { return tlsConfig }
	}
	s.vapi = findHandler(svc.ServeMux, "/rest/")
	s.handler = svc.ServeMux
	return s, nil
}

// Handler serves the vSphere SOAP API (/sdk) and the simulator's Automation API (/api, /rest).
func (s *Stock) Handler() http.Handler { return s.handler }

// KillSessions ends every SOAP and Automation API session, as the lab's does.
func (s *Stock) KillSessions() int {
	return killSessions(&simulator.Context{Context: context.Background(), Map: s.model.Map()}, s.vapi)
}

// Close stops the simulator.
func (s *Stock) Close() {
	if s.server != nil {
		s.server.Close()
	}
	s.model.Remove()
}
