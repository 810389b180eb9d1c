package vc

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"

	"github.com/google/uuid"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

// The simulator's SessionManager already implements Login (checked against the lab's user),
// AcquireCloneTicket and CloneSession. The lab adds the vSphere Client's REST endpoint that turns
// a client session token into a clone ticket, and the loss of every session.

// sessionHeader is the header carrying a vAPI (Automation API) session id, and the vSphere Client
// session token sent to the clone-ticket endpoint.
const sessionHeader = "vmware-api-session-id"

var sessionManagerRef = types.ManagedObjectReference{Type: "SessionManager", Value: "SessionManager"}

// soapSessions lists the SOAP sessions (the simulator keeps them private; a session's view of the
// SessionManager lists them all).
func (l *Lab) soapSessions() []types.UserSession {
	return soapSessionsOf(l.newContext().Map)
}

func soapSessionsOf(reg *simulator.Registry) []types.UserSession {
	probe := &simulator.Session{UserSession: types.UserSession{Key: "lab-probe"}, Registry: simulator.NewRegistry(), Map: reg}
	sm, ok := probe.Get(sessionManagerRef).(*simulator.SessionManager)
	if !ok {
		return nil
	}
	return sm.SessionList
}

// sessionUser resolves a vSphere Client session token: a SOAP session key or a vAPI session id.
func (l *Lab) sessionUser(token string) (types.UserSession, bool) {
	if token == "" {
		return types.UserSession{}, false
	}
	for _, s := range l.soapSessions() {
		if s.Key == token {
			return s, true
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/rest/com/vmware/cis/session", nil)
	req.Header.Set(sessionHeader, token)
	l.vapi.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return types.UserSession{}, false
	}
	var out struct {
		Value *struct {
			User string `json:"user"`
		} `json:"value"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Value == nil || out.Value.User == "" {
		return types.UserSession{}, false
	}
	now := l.clock.Now()
	return types.UserSession{
		Key: uuid.NewString(), UserName: out.Value.User, FullName: out.Value.User,
		LoginTime: now, LastActiveTime: now, Locale: "en", MessageLocale: "en",
	}, true
}

// cloneTicket acquires a clone ticket for a user session, as SessionManager.AcquireCloneTicket
// does for the caller's own session.
func (l *Lab) cloneTicket(us types.UserSession) string {
	ctx := l.newContext()
	ctx.Session = &simulator.Session{UserSession: us, Registry: simulator.NewRegistry(), Map: ctx.Map}
	body := ctx.Map.SessionManager().AcquireCloneTicket(ctx, &types.AcquireCloneTicket{This: sessionManagerRef})
	return body.(*methods.AcquireCloneTicketBody).Res.Returnval
}

// serveCloneTicket is POST /api/ui/vcenter/session/clone-ticket of the vSphere Client: a remote
// plugin server sends the client's session token in the vmware-api-session-id header and
// {"vc_guid": "<vCenter instance UUID>"}, and gets {"session_clone_ticket": "..."} for
// SessionManager.CloneSession.
func (l *Lab) serveCloneTicket(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		vapiError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "use POST")
		return
	}
	us, ok := l.sessionUser(r.Header.Get(sessionHeader))
	if !ok {
		vapiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "the session token in "+sessionHeader+" is missing or not valid")
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		vapiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the body must be a JSON object with vc_guid")
		return
	}
	guid, _ := body["vc_guid"].(string)
	if guid == "" {
		guid, _ = body["vc-guid"].(string)
	}
	if guid == "" {
		vapiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "vc_guid: is required")
		return
	}
	if guid != l.InstanceUUID() {
		vapiError(w, http.StatusNotFound, "NOT_FOUND", "vc_guid: no vCenter Server "+guid+" in this link group")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"session_clone_ticket": l.cloneTicket(us)})
}

// KillSessions ends every session, SOAP and Automation API: the next call of every client fails
// with NotAuthenticated (or 401) until it logs in again.
func (l *Lab) KillSessions() int {
	return killSessions(l.newContext(), l.vapi)
}

// killSessions ends every SOAP session of ctx's registry and every session of the vAPI handler.
func killSessions(ctx *simulator.Context, vapi http.Handler) int {
	ctx.Session = &simulator.Session{UserSession: types.UserSession{Key: "lab-control"}, Registry: simulator.NewRegistry(), Map: ctx.Map}
	sm := ctx.Map.SessionManager()
	n := 0
	for _, s := range soapSessionsOf(ctx.Map) {
		body := sm.TerminateSession(ctx, &types.TerminateSession{This: sessionManagerRef, SessionId: []string{s.Key}})
		if body.Fault() == nil {
			n++
		}
	}
	// The vAPI simulator keeps its sessions in an exported field of an unexported type, behind the
	// handler's own mutex.
	if locker, ok := vapi.(sync.Locker); ok {
		v := reflect.ValueOf(vapi)
		if v.Kind() == reflect.Pointer {
			if f := v.Elem().FieldByName("Session"); f.IsValid() && f.Kind() == reflect.Map && f.CanSet() {
				locker.Lock()
				n += f.Len()
				f.Set(reflect.MakeMap(f.Type()))
				locker.Unlock()
			}
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// vapiError writes an Automation API error body.
func vapiError(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, map[string]any{
		"error_type": kind,
		"messages":   []map[string]any{{"id": "com.vmware.lab." + kind, "default_message": msg, "args": []string{}}},
	})
}
