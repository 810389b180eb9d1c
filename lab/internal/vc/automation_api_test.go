package vc

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// rpc invokes a vAPI operation over JSON-RPC as the vSphere Automation SDK for Python does.
func rpc(t *testing.T, l *Lab, service, op string, input map[string]any, sec map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "method": "invoke", "id": "7",
		"params": map[string]any{
			"serviceId": service, "operationId": op,
			"input": map[string]any{"STRUCTURE": map[string]any{"operation-input": input}},
			"ctx":   map[string]any{"appCtx": map[string]any{}, "securityCtx": sec},
		},
	})
	rec := httptest.NewRecorder()
	l.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s.%s: HTTP %d", service, op, rec.Code)
	}
	var out struct {
		ID     string         `json:"id"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.ID != "7" {
		t.Fatalf("%s.%s: %s", service, op, rec.Body)
	}
	return out.Result
}

func TestJSONRPCSessionsAndTags(t *testing.T) {
	tl := newTestLab(t, `
name: tags
hosts: [{name: esx-01}]
datastores:
  - {name: ds-1, capacity_gb: 100, tags: [tier/gold], device: {kind: ssd, disks: 2, raid: "1"}}
vms:
  - {name: vm-1, host: esx-01, tags: [app/db], disks: [{unit: "scsi0:0", size_gb: 10, datastore: ds-1}]}
`)
	bad := rpc(t, tl.Lab, "com.vmware.cis.session", "create", map[string]any{},
		map[string]any{"schemeId": "com.vmware.vapi.std.security.user_pass", "userName": "tester", "password": "wrong"})
	if _, ok := bad["error"].(map[string]any)["ERROR"].(map[string]any)["com.vmware.vapi.std.errors.unauthenticated"]; !ok {
		t.Fatalf("a wrong password: %v", bad)
	}
	res := rpc(t, tl.Lab, "com.vmware.cis.session", "create", map[string]any{},
		map[string]any{"schemeId": "com.vmware.vapi.std.security.user_pass", "userName": "tester", "password": "secret"})
	id, _ := res["output"].(map[string]any)["SECRET"].(string)
	if id == "" {
		t.Fatalf("no session id: %v", res)
	}
	sec := map[string]any{"schemeId": "com.vmware.vapi.std.security.session_id", "sessionId": id}
	cats := rpc(t, tl.Lab, "com.vmware.cis.tagging.category", "list", map[string]any{}, sec)["output"].([]any)
	names := map[string]string{}
	for _, c := range cats {
		model := rpc(t, tl.Lab, "com.vmware.cis.tagging.category", "get", map[string]any{"category_id": c}, sec)
		fields := model["output"].(map[string]any)["STRUCTURE"].(map[string]any)["com.vmware.cis.tagging.category_model"].(map[string]any)
		names[fields["name"].(string)] = c.(string)
		if fields["cardinality"] != "MULTIPLE" {
			t.Errorf("category %v", fields)
		}
	}
	if len(names) != 2 || names["tier"] == "" || names["app"] == "" {
		t.Fatalf("categories %v", names)
	}
	vm := map[string]any{"STRUCTURE": map[string]any{"com.vmware.vapi.std.dynamic_ID": map[string]any{"type": "VirtualMachine", "id": tl.inv.vmByName["vm-1"].ref.Value}}}
	tags := rpc(t, tl.Lab, "com.vmware.cis.tagging.tag_association", "list_attached_tags", map[string]any{"object_id": vm}, sec)["output"].([]any)
	if len(tags) != 1 {
		t.Fatalf("vm-1 has tags %v", tags)
	}
	tag := rpc(t, tl.Lab, "com.vmware.cis.tagging.tag", "get", map[string]any{"tag_id": tags[0]}, sec)["output"].(map[string]any)
	if got := tag["STRUCTURE"].(map[string]any)["com.vmware.cis.tagging.tag_model"].(map[string]any)["name"]; got != "db" {
		t.Errorf("vm-1's tag is %v, want db", got)
	}
	missing := rpc(t, tl.Lab, "com.vmware.cis.tagging.tag", "get", map[string]any{"tag_id": "nope"}, sec)
	if _, ok := missing["error"].(map[string]any)["ERROR"].(map[string]any)["com.vmware.vapi.std.errors.not_found"]; !ok {
		t.Errorf("an unknown tag: %v", missing)
	}
	tl.KillSessions()
	lost := rpc(t, tl.Lab, "com.vmware.cis.tagging.category", "list", map[string]any{}, sec)
	if _, ok := lost["error"]; !ok {
		t.Errorf("a lost session still lists categories: %v", lost)
	}
}
