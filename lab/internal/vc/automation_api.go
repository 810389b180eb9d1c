package vc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
)

// The Automation API the lab offers besides SOAP. The simulator's vAPI handler keeps sessions,
// categories, tags and associations and speaks the legacy REST dialect (/rest, {"value": ...});
// the lab adds what clients of vSphere 7/8 use on top of that same state:
//   - JSON-RPC 2.0 on POST /api, the protocol of the vSphere Automation SDK for Python
//     (com.vmware.cis.session and com.vmware.cis.tagging.*);
//   - the /api REST dialect for sessions and tagging (/api/session, /api/cis/tagging/...).

const restBase = "/rest/com/vmware/cis"

// restCall sends a request to the simulator's vAPI handler and returns the status and the
// unwrapped "value".
func (l *Lab) restCall(method, path, session string, body any, basic *url.Userinfo) (int, json.RawMessage) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set(sessionHeader, session)
	}
	if basic != nil {
		pw, _ := basic.Password()
		req.SetBasicAuth(basic.Username(), pw)
	}
	rec := httptest.NewRecorder()
	l.vapi.ServeHTTP(rec, req)
	var out struct {
		Value json.RawMessage `json:"value"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out.Value
}

// ----- JSON-RPC (vSphere Automation SDK) -----

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id"`
	Params  struct {
		ServiceID   string         `json:"serviceId"`
		OperationID string         `json:"operationId"`
		Input       any            `json:"input"`
		Ctx         map[string]any `json:"ctx"`
	} `json:"params"`
}

// rpcFault is a vAPI standard error (com.vmware.vapi.std.errors.*).
type rpcFault struct {
	kind string // not_found, unauthenticated, invalid_argument, ...
	msg  string
}

func (e *rpcFault) value() any {
	fields := map[string]any{
		"messages": []any{structure("com.vmware.vapi.std.localizable_message", map[string]any{
			"id": "com.vmware.lab." + e.kind, "default_message": e.msg, "args": []any{},
			"params": optional(nil), "localized": optional(nil),
		})},
		"data":       optional(nil),
		"error_type": optional(strings.ToUpper(e.kind)),
	}
	if e.kind == "unauthenticated" {
		fields["challenge"] = optional(nil)
	}
	return map[string]any{"ERROR": map[string]any{"com.vmware.vapi.std.errors." + e.kind: fields}}
}

func structure(name string, fields map[string]any) any {
	return map[string]any{"STRUCTURE": map[string]any{name: fields}}
}

func optional(v any) any { return map[string]any{"OPTIONAL": v} }

// fromVAPI turns a vAPI JSON-RPC data value into plain JSON: structures become objects, optionals
// their value or null, secrets their string.
func fromVAPI(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, inner := range x {
				switch k {
				case "STRUCTURE", "ERROR":
					if m, ok := inner.(map[string]any); ok && len(m) == 1 {
						for _, fields := range m {
							if f, ok := fields.(map[string]any); ok {
								out := map[string]any{}
								for name, fv := range f {
									out[name] = fromVAPI(fv)
								}
								return out
							}
						}
					}
				case "OPTIONAL":
					if inner == nil {
						return nil
					}
					return fromVAPI(inner)
				case "SECRET", "BINARY":
					return inner
				}
			}
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fromVAPI(e)
		}
		return out
	default:
		return v
	}
}

// serveJSONRPC answers POST /api: vAPI invocations over JSON-RPC 2.0. Errors of the operations are
// vAPI errors in result.error with HTTP 200, as vCenter sends them.
func (l *Lab) serveJSONRPC(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Method != "invoke" {
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32600, "message": "Invalid Request."}})
		return
	}
	input, _ := fromVAPI(req.Params.Input).(map[string]any)
	if input == nil {
		input = map[string]any{}
	}
	var sec map[string]any
	if req.Params.Ctx != nil {
		sec, _ = req.Params.Ctx["securityCtx"].(map[string]any)
	}
	out, fault := l.invoke(req.Params.ServiceID, req.Params.OperationID, input, sec)
	result := map[string]any{}
	if fault != nil {
		result["error"] = fault.value()
	} else {
		result["output"] = out
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

// invoke runs one vAPI operation and returns its output in vAPI form.
func (l *Lab) invoke(service, op string, in map[string]any, sec map[string]any) (any, *rpcFault) {
	scheme, _ := sec["schemeId"].(string)
	if service == "com.vmware.cis.session" && op == "create" {
		user, _ := sec["userName"].(string)
		pass, _ := sec["password"].(string)
		if scheme != "com.vmware.vapi.std.security.user_pass" {
			return nil, &rpcFault{"unauthenticated", "session creation needs user name and password"}
		}
		code, val := l.restCall(http.MethodPost, restBase+"/session", "", nil, url.UserPassword(user, pass))
		var id string
		if code != http.StatusOK || json.Unmarshal(val, &id) != nil {
			return nil, &rpcFault{"unauthenticated", "Authentication required."}
		}
		return map[string]any{"SECRET": id}, nil
	}
	session, _ := sec["sessionId"].(string)
	if scheme != "com.vmware.vapi.std.security.session_id" || session == "" {
		return nil, &rpcFault{"unauthenticated", "Authentication required."}
	}
	if code, _ := l.restCall(http.MethodGet, restBase+"/session", session, nil, nil); code != http.StatusOK {
		return nil, &rpcFault{"unauthenticated", "Authentication required."}
	}
	str := func(key string) (string, *rpcFault) {
		s, ok := in[key].(string)
		if !ok || s == "" {
			return "", &rpcFault{"invalid_argument", key + ": is required"}
		}
		return s, nil
	}
	call := func(method, path string, body any) (json.RawMessage, *rpcFault) {
		code, val := l.restCall(method, path, session, body, nil)
		switch {
		case code == http.StatusNotFound:
			return nil, &rpcFault{"not_found", "the object does not exist: " + path}
		case code == http.StatusUnauthorized:
			return nil, &rpcFault{"unauthenticated", "Authentication required."}
		case code >= 300:
			return nil, &rpcFault{"invalid_argument", fmt.Sprintf("%s %s: HTTP %d", method, path, code)}
		}
		return val, nil
	}
	switch service + "/" + op {
	case "com.vmware.cis.session/delete":
		if _, f := call(http.MethodDelete, restBase+"/session", nil); f != nil {
			return nil, f
		}
		return nil, nil
	case "com.vmware.cis.session/get":
		val, f := call(http.MethodGet, restBase+"/session", nil)
		if f != nil {
			return nil, f
		}
		var s map[string]any
		_ = json.Unmarshal(val, &s)
		return structure("com.vmware.cis.session.info", map[string]any{
			"user": s["user"], "created_time": s["created_time"], "last_accessed_time": s["last_accessed_time"],
		}), nil
	case "com.vmware.cis.tagging.category/list", "com.vmware.cis.tagging.tag/list":
		kind := "category"
		if strings.HasSuffix(service, ".tag") {
			kind = "tag"
		}
		val, f := call(http.MethodGet, restBase+"/tagging/"+kind, nil)
		if f != nil {
			return nil, f
		}
		return stringList(val), nil
	case "com.vmware.cis.tagging.category/get":
		id, f := str("category_id")
		if f != nil {
			return nil, f
		}
		val, f := call(http.MethodGet, restBase+"/tagging/category/id:"+id, nil)
		if f != nil {
			return nil, f
		}
		var c map[string]any
		_ = json.Unmarshal(val, &c)
		return structure("com.vmware.cis.tagging.category_model", map[string]any{
			"id": c["id"], "name": orEmpty(c["name"]), "description": orEmpty(c["description"]),
			"cardinality": orString(c["cardinality"], "MULTIPLE"), "associable_types": orList(c["associable_types"]),
			"used_by": orList(c["used_by"]),
		}), nil
	case "com.vmware.cis.tagging.category/create":
		spec, _ := in["create_spec"].(map[string]any)
		if spec == nil {
			return nil, &rpcFault{"invalid_argument", "create_spec: is required"}
		}
		val, f := call(http.MethodPost, restBase+"/tagging/category", map[string]any{"create_spec": spec})
		if f != nil {
			return nil, f
		}
		var id string
		_ = json.Unmarshal(val, &id)
		return id, nil
	case "com.vmware.cis.tagging.tag/get":
		id, f := str("tag_id")
		if f != nil {
			return nil, f
		}
		val, f := call(http.MethodGet, restBase+"/tagging/tag/id:"+id, nil)
		if f != nil {
			return nil, f
		}
		var t map[string]any
		_ = json.Unmarshal(val, &t)
		return structure("com.vmware.cis.tagging.tag_model", map[string]any{
			"id": t["id"], "category_id": orEmpty(t["category_id"]), "name": orEmpty(t["name"]),
			"description": orEmpty(t["description"]), "used_by": orList(t["used_by"]),
		}), nil
	case "com.vmware.cis.tagging.tag/create":
		spec, _ := in["create_spec"].(map[string]any)
		if spec == nil {
			return nil, &rpcFault{"invalid_argument", "create_spec: is required"}
		}
		val, f := call(http.MethodPost, restBase+"/tagging/tag", map[string]any{"create_spec": spec})
		if f != nil {
			return nil, f
		}
		var id string
		_ = json.Unmarshal(val, &id)
		return id, nil
	case "com.vmware.cis.tagging.tag/list_tags_for_category":
		id, f := str("category_id")
		if f != nil {
			return nil, f
		}
		val, f := call(http.MethodPost, restBase+"/tagging/tag/id:"+id+"?~action=list-tags-for-category", nil)
		if f != nil {
			return nil, f
		}
		return stringList(val), nil
	case "com.vmware.cis.tagging.tag_association/list_attached_objects_on_tags":
		ids, _ := in["tag_ids"].([]any)
		val, f := call(http.MethodPost, restBase+"/tagging/tag-association?~action=list-attached-objects-on-tags", map[string]any{"tag_ids": ids})
		if f != nil {
			return nil, f
		}
		var rows []struct {
			TagID     string           `json:"tag_id"`
			ObjectIDs []map[string]any `json:"object_ids"`
		}
		_ = json.Unmarshal(val, &rows)
		out := []any{}
		for _, r := range rows {
			out = append(out, structure("com.vmware.cis.tagging.tag_association.tag_to_objects", map[string]any{
				"tag_id": r.TagID, "object_ids": dynamicIDs(r.ObjectIDs),
			}))
		}
		return out, nil
	case "com.vmware.cis.tagging.tag_association/list_attached_tags_on_objects":
		objs, _ := in["object_ids"].([]any)
		val, f := call(http.MethodPost, restBase+"/tagging/tag-association?~action=list-attached-tags-on-objects", map[string]any{"object_ids": objs})
		if f != nil {
			return nil, f
		}
		var rows []struct {
			ObjectID map[string]any `json:"object_id"`
			TagIDs   []string       `json:"tag_ids"`
		}
		_ = json.Unmarshal(val, &rows)
		out := []any{}
		for _, r := range rows {
			tags := []any{}
			for _, t := range r.TagIDs {
				tags = append(tags, t)
			}
			out = append(out, structure("com.vmware.cis.tagging.tag_association.object_to_tags", map[string]any{
				"object_id": dynamicID(r.ObjectID), "tag_ids": tags,
			}))
		}
		return out, nil
	case "com.vmware.cis.tagging.tag_association/list_attached_tags":
		obj, _ := in["object_id"].(map[string]any)
		if obj == nil {
			return nil, &rpcFault{"invalid_argument", "object_id: is required"}
		}
		val, f := call(http.MethodPost, restBase+"/tagging/tag-association?~action=list-attached-tags", map[string]any{"object_id": obj})
		if f != nil {
			return nil, f
		}
		return stringList(val), nil
	case "com.vmware.cis.tagging.tag_association/list_attached_objects":
		id, f := str("tag_id")
		if f != nil {
			return nil, f
		}
		val, f := call(http.MethodPost, restBase+"/tagging/tag-association/id:"+id+"?~action=list-attached-objects", nil)
		if f != nil {
			return nil, f
		}
		var objs []map[string]any
		_ = json.Unmarshal(val, &objs)
		return dynamicIDs(objs), nil
	case "com.vmware.cis.tagging.tag_association/attach", "com.vmware.cis.tagging.tag_association/detach":
		id, f := str("tag_id")
		if f != nil {
			return nil, f
		}
		obj, _ := in["object_id"].(map[string]any)
		if obj == nil {
			return nil, &rpcFault{"invalid_argument", "object_id: is required"}
		}
		if _, f := call(http.MethodPost, restBase+"/tagging/tag-association/id:"+id+"?~action="+op, map[string]any{"object_id": obj}); f != nil {
			return nil, f
		}
		return nil, nil
	}
	return nil, &rpcFault{"operation_not_found", fmt.Sprintf("the lab does not implement %s.%s", service, op)}
}

func stringList(raw json.RawMessage) []any {
	var ids []string
	_ = json.Unmarshal(raw, &ids)
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

func dynamicID(o map[string]any) any {
	return structure("com.vmware.vapi.std.dynamic_ID", map[string]any{"type": orEmpty(o["type"]), "id": orEmpty(o["id"])})
}

func dynamicIDs(objs []map[string]any) []any {
	out := []any{}
	for _, o := range objs {
		out = append(out, dynamicID(o))
	}
	return out
}

func orEmpty(v any) any { return orString(v, "") }

func orString(v any, dflt string) any {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	return dflt
}

func orList(v any) any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{}
}

// ----- /api REST dialect -----

// serveAPISession is /api/session: POST with basic authentication creates a session (201, the id
// as a JSON string), GET describes it, DELETE ends it.
func (l *Lab) serveAPISession(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get(sessionHeader)
	switch r.Method {
	case http.MethodPost:
		user, pass, ok := r.BasicAuth()
		if !ok {
			vapiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "basic authentication is required")
			return
		}
		code, val := l.restCall(http.MethodPost, restBase+"/session", "", nil, url.UserPassword(user, pass))
		if code != http.StatusOK {
			vapiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Authentication required.")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(val)
	case http.MethodGet:
		code, val := l.restCall(http.MethodGet, restBase+"/session", token, nil, nil)
		if code != http.StatusOK {
			vapiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Authentication required.")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(val)
	case http.MethodDelete:
		if code, _ := l.restCall(http.MethodDelete, restBase+"/session", token, nil, nil); code != http.StatusOK {
			vapiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Authentication required.")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// serveAPITagging translates /api/cis/tagging/{category,tag,tag-association}[/{id}][?action=...]
// to the simulator's /rest dialect and unwraps its answers.
func (l *Lab) serveAPITagging(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/cis/tagging/")
	parts := strings.SplitN(rest, "/", 2)
	kind := parts[0]
	if kind != "category" && kind != "tag" && kind != "tag-association" {
		vapiError(w, http.StatusNotFound, "NOT_FOUND", "no such resource: "+r.URL.Path)
		return
	}
	path := restBase + "/tagging/" + kind
	if len(parts) == 2 && parts[1] != "" {
		path += "/id:" + parts[1]
	}
	if a := r.URL.Query().Get("action"); a != "" {
		path += "?~action=" + url.QueryEscape(a)
	}
	var body any
	if r.Body != nil && r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil && err != io.EOF {
			vapiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the body is not valid JSON")
			return
		}
	}
	create := r.Method == http.MethodPost && len(parts) == 1 && r.URL.Query().Get("action") == ""
	if create {
		body = map[string]any{"create_spec": body}
	}
	if r.Method == http.MethodPatch {
		body = map[string]any{"update_spec": body}
	}
	code, val := l.restCall(r.Method, path, r.Header.Get(sessionHeader), body, nil)
	switch {
	case code == http.StatusUnauthorized:
		vapiError(w, code, "UNAUTHENTICATED", "Authentication required.")
	case code == http.StatusNotFound:
		vapiError(w, code, "NOT_FOUND", "no such object: "+r.URL.Path)
	case code >= 300:
		vapiError(w, code, "INVALID_ARGUMENT", fmt.Sprintf("the request was refused (HTTP %d)", code))
	case len(val) == 0 || string(val) == "null":
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Content-Type", "application/json")
		if create {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write(val)
	}
}

// createTags puts the scenario's tags in the tagging service: one category per tag category
// (multiple cardinality, every object type), one tag per name, attached to VMs and datastores.
func (l *Lab) createTags() error {
	s := l.Scenario
	type tagKey struct{ cat, name string }
	objects := map[tagKey][]map[string]string{}
	var order []tagKey
	add := func(t tagKey, typ, id string) {
		if _, ok := objects[t]; !ok {
			order = append(order, t)
		}
		objects[t] = append(objects[t], map[string]string{"type": typ, "id": id})
	}
	for _, d := range s.Datastores {
		for _, t := range d.Tags {
			add(tagKey{t.Category, t.Name}, "Datastore", l.inv.storeByName[d.Name].ref.Value)
		}
	}
	for _, v := range s.VMs {
		for _, t := range v.Tags {
			add(tagKey{t.Category, t.Name}, "VirtualMachine", l.inv.vmByName[v.Name].ref.Value)
		}
	}
	if len(order) == 0 {
		return nil
	}
	code, val := l.restCall(http.MethodPost, restBase+"/session", "", nil, url.UserPassword(l.opts.User, l.opts.Password))
	var session string
	if code != http.StatusOK || json.Unmarshal(val, &session) != nil {
		return fmt.Errorf("cannot log in to the tagging service (HTTP %d)", code)
	}
	defer l.restCall(http.MethodDelete, restBase+"/session", session, nil, nil)
	categories := map[string]string{}
	for _, t := range order {
		cid, ok := categories[t.cat]
		if !ok {
			code, val := l.restCall(http.MethodPost, restBase+"/tagging/category", session, map[string]any{"create_spec": map[string]any{
				"name": t.cat, "description": "", "cardinality": "MULTIPLE", "associable_types": []string{},
			}}, nil)
			if code != http.StatusOK || json.Unmarshal(val, &cid) != nil {
				return fmt.Errorf("category %q: HTTP %d", t.cat, code)
			}
			categories[t.cat] = cid
		}
		code, val := l.restCall(http.MethodPost, restBase+"/tagging/tag", session, map[string]any{"create_spec": map[string]any{
			"name": t.name, "description": "", "category_id": cid,
		}}, nil)
		var tid string
		if code != http.StatusOK || json.Unmarshal(val, &tid) != nil {
			return fmt.Errorf("tag %s/%s: HTTP %d", t.cat, t.name, code)
		}
		code, _ = l.restCall(http.MethodPost, restBase+"/tagging/tag-association/id:"+tid+"?~action=attach-tag-to-multiple-objects", session,
			map[string]any{"object_ids": objects[t]}, nil)
		if code != http.StatusOK {
			return fmt.Errorf("tag %s/%s: attach: HTTP %d", t.cat, t.name, code)
		}
	}
	return nil
}
