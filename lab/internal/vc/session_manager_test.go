package vc

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
)

func TestCloneTicketEndpoint(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	var soapKey string
	for _, c := range tl.c.Client.Client.Jar.Cookies(tl.url) {
		if c.Name == soap.SessionCookieName {
			soapKey = c.Value
		}
	}
	apiReq := httptest.NewRequest(http.MethodPost, "/api/session", nil)
	apiReq.SetBasicAuth("tester", "secret")
	rec := httptest.NewRecorder()
	tl.Handler().ServeHTTP(rec, apiReq)
	var apiToken string
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &apiToken) != nil {
		t.Fatalf("POST /api/session: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		name   string
		token  string
		body   any
		status int
	}{
		{"SOAP session token", soapKey, map[string]string{"vc_guid": tl.InstanceUUID()}, http.StatusOK},
		{"Automation API session token", apiToken, map[string]string{"vc_guid": tl.InstanceUUID()}, http.StatusOK},
		{"no token", "", map[string]string{"vc_guid": tl.InstanceUUID()}, http.StatusUnauthorized},
		{"unknown token", "nope", map[string]string{"vc_guid": tl.InstanceUUID()}, http.StatusUnauthorized},
		{"another vCenter", soapKey, map[string]string{"vc_guid": "00000000-0000-0000-0000-000000000000"}, http.StatusNotFound},
		{"no vc_guid", soapKey, map[string]string{}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.body)
			req := httptest.NewRequest(http.MethodPost, "/api/ui/vcenter/session/clone-ticket", bytes.NewReader(b))
			req.Header.Set("vmware-api-session-id", tc.token)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			tl.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d (%s), want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status != http.StatusOK {
				return
			}
			var out struct {
				Ticket string `json:"session_clone_ticket"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Ticket == "" {
				t.Fatalf("no clone ticket in %s", rec.Body)
			}
			// A fresh client (a plugin server) turns the ticket into a session of its own.
			sc := soap.NewClient(&*tl.url, true)
			c, err := vim25.NewClient(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			m := session.NewManager(c)
			if err := m.CloneSession(ctx, out.Ticket); err != nil {
				t.Fatalf("CloneSession: %v", err)
			}
			us, err := m.UserSession(ctx)
			if err != nil || us == nil || us.UserName != "tester" {
				t.Fatalf("cloned session %+v (%v), want user tester", us, err)
			}
			if err := session.NewManager(c).CloneSession(ctx, out.Ticket); faultName(err) != "InvalidLogin" {
				t.Errorf("a clone ticket was usable twice: %v", err)
			}
		})
	}
}
