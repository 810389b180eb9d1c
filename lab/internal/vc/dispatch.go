package vc

import (
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// dispatch is the simulator's Registry.Handler hook: for the methods the lab changes it returns a
// lab type embedding the simulator object, the way example_extend_test.go extends the simulator.
// The lab does not Map.Put its wrappers in place of the simulator's objects: the simulator asserts
// the concrete types of VMs, datastores, hosts, the option and extension managers in many places.
// Injected faults are decided here too.
func (l *Lab) dispatch(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	if ctx.Session == nil && !sessionlessRead(method) {
		return nil, &types.NotAuthenticated{NoPermission: types.NoPermission{Object: &method.This, PrivilegeId: "System.View"}}
	}
	h := l.handlerFor(ctx, method)
	if h != nil {
		// The simulator lets the caller's session resolve method.This after this hook, and a
		// session resolves every object of the registry, which would replace the lab's handler by
		// the plain simulator object. A reference no registry knows keeps the lab's handler; the
		// methods themselves read their object from the request body, which is untouched.
		method.This.Type = "Lab:" + method.This.Type
	}
	return h, nil
}

// handlerFor returns the lab's handler of a call, or nil for the simulator's.
func (l *Lab) handlerFor(ctx *simulator.Context, method *simulator.Method) mo.Reference {
	if h := l.injected(ctx, method); h != nil {
		return h
	}
	this := method.This
	switch this.Type {
	case "VirtualMachine":
		switch method.Name {
		case "RelocateVM_Task", "ReconfigVM_Task", "PowerOnVM_Task", "PowerOffVM_Task", "RefreshStorageInfo":
			if vm, ok := ctx.Map.Get(this).(*simulator.VirtualMachine); ok {
				return &VirtualMachine{VirtualMachine: vm, lab: l}
			}
		}
	case "Datastore":
		switch method.Name {
		case "DatastoreEnterMaintenanceMode", "DatastoreExitMaintenanceMode_Task", "RefreshDatastore",
			"RefreshDatastoreStorageInfo", "Destroy_Task", "RenameDatastore", "Rename_Task":
			if ds, ok := ctx.Map.Get(this).(*simulator.Datastore); ok {
				return &Datastore{Datastore: ds, lab: l}
			}
		}
	case "StoragePod":
		if method.Name == "MoveIntoFolder_Task" {
			if pod, ok := ctx.Map.Get(this).(*simulator.StoragePod); ok {
				return &StoragePod{StoragePod: pod, lab: l}
			}
		}
	case "Folder":
		if method.Name == "MoveIntoFolder_Task" {
			if f, ok := ctx.Map.Get(this).(*simulator.Folder); ok {
				return &Folder{Folder: f, lab: l}
			}
		}
	case "PerformanceManager":
		if pm, ok := ctx.Map.Get(this).(*simulator.PerformanceManager); ok {
			return &PerformanceManager{PerformanceManager: pm, lab: l}
		}
	case "StorageResourceManager":
		if m, ok := ctx.Map.Get(this).(*simulator.StorageResourceManager); ok {
			return &StorageResourceManager{StorageResourceManager: m, lab: l}
		}
	case "ExtensionManager":
		if m, ok := ctx.Map.Get(this).(*simulator.ExtensionManager); ok {
			return &ExtensionManager{ExtensionManager: m, lab: l}
		}
	case "OptionManager":
		if this == ctx.Map.OptionManager().Self && method.Name == "UpdateOptions" {
			return &OptionManager{OptionManager: ctx.Map.OptionManager(), lab: l}
		}
	case "ServiceInstance":
		if method.Name == "CurrentTime" {
			if si, ok := ctx.Map.Get(this).(*simulator.ServiceInstance); ok {
				return &ServiceInstance{ServiceInstance: si, lab: l}
			}
		}
	}
	return nil
}

// newHandler wraps the simulator's mux with the lab's HTTP endpoints: the vSphere Client's
// clone-ticket endpoint, the Automation API's JSON-RPC and /api routes the simulator lacks, and
// the injected latency.
func (l *Lab) newHandler(sim *http.ServeMux) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/ui/vcenter/session/clone-ticket", l.serveCloneTicket)
	mux.HandleFunc("/api", l.serveJSONRPC)
	mux.HandleFunc("/api/session", l.serveAPISession)
	mux.HandleFunc("/api/cis/tagging/", l.serveAPITagging)
	mux.Handle("/", sim)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(l.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		if l.automationDown(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// injectedFault answers a call that a fault rule fails. Call-level faults come back as a SOAP
// fault; for a *_Task method the fault comes, as vCenter mostly reports them, in a task that fails.
type injectedFault struct {
	Self   types.ManagedObjectReference
	lab    *Lab
	method string
	fault  types.BaseMethodFault
	msg    string
	inTask bool
}

func (h *injectedFault) Reference() types.ManagedObjectReference { return h.Self }

// injectedMethod is the name dispatch gives an intercepted call so the simulator invokes
// injectedFault's method whatever the original method was.
const injectedMethod = "LabInjectedFault"

// LabInjectedFault is invoked in place of the intercepted method.
func (h *injectedFault) LabInjectedFault(ctx *simulator.Context, body any) soap.HasFault {
	if !h.inTask {
		fillRefs(ctx, h.fault, h.Self, nil)
		return &faultBody{Fault_: simulator.Fault(h.msg, h.fault)}
	}
	id := strings.TrimSuffix(h.method, "_Task")
	entity := h.Self
	// A task on a manager runs on the entity it acts upon (ConfigureDatastoreIORM_Task: the datastore).
	if v := reflect.ValueOf(body); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("Datastore"); f.IsValid() && f.Type() == reflect.TypeOf(types.ManagedObjectReference{}) {
			entity = f.Interface().(types.ManagedObjectReference)
		}
	}
	t := h.lab.newTask(ctx, entity, h.method, lcFirst(id))
	ref := t.ref()
	fillRefs(ctx, h.fault, h.Self, &ref)
	t.fail(h.fault, h.msg)
	return &taskBody{Res: &taskReturn{name: h.method + "Response", Returnval: t.ref()}}
}

func lcFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// faultBody is a SOAP response carrying only a fault.
type faultBody struct {
	Fault_ *soap.Fault `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *faultBody) Fault() *soap.Fault { return b.Fault_ }

// taskBody is the response of any *_Task method: a task reference, in an element named after the
// method ("RelocateVM_TaskResponse").
type taskBody struct {
	Res    *taskReturn
	Fault_ *soap.Fault `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *taskBody) Fault() *soap.Fault { return b.Fault_ }

type taskReturn struct {
	name      string
	Returnval types.ManagedObjectReference `xml:"returnval"`
}

// MarshalXML names the element after the method, as the generated response types are named.
func (r *taskReturn) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Name.Local = r.name
	return e.EncodeElement(struct {
		Returnval types.ManagedObjectReference `xml:"returnval"`
	}{r.Returnval}, start)
}

// refTypes names the managed object type a fault's reference field holds, by field name.
var refTypes = map[string]string{
	"Task": "Task", "Host": "HostSystem", "Datastore": "Datastore", "Vm": "VirtualMachine",
	"Pool": "ResourcePool", "Folder": "Folder", "Datacenter": "Datacenter",
}

// fillRefs gives an injected fault's required object references a real object: left empty they go
// over the wire as a reference without a type, which clients cannot decode.
func fillRefs(ctx *simulator.Context, fault types.BaseMethodFault, this types.ManagedObjectReference, task *types.ManagedObjectReference) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f, sf := v.Field(i), v.Type().Field(i)
			switch {
			case sf.Anonymous && f.Kind() == reflect.Struct:
				walk(f)
			case f.Type() == morefType && f.CanSet():
				if f.Interface().(types.ManagedObjectReference).Type != "" {
					continue
				}
				want := refTypes[sf.Name]
				ref := this
				switch {
				case want == "" || want == this.Type:
				case want == "Task" && task != nil:
					ref = *task
				default:
					if e := ctx.Map.Any(want); e != nil {
						ref = e.Reference()
					}
				}
				f.Set(reflect.ValueOf(ref))
			}
		}
	}
	if v := reflect.ValueOf(fault); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		walk(v.Elem())
	}
}

// sessionlessRead reports whether a call without a session is one vCenter answers: logging in,
// the service content, and reading the SessionManager's or ServiceInstance's properties (a client
// reads currentSession to learn whether its session lives). The simulator also lets every other
// property read through without a session and answers it with nothing, which would hide a lost
// session from a client; vCenter answers NotAuthenticated.
func sessionlessRead(method *simulator.Method) bool {
	switch method.Name {
	case "RetrieveProperties", "RetrievePropertiesEx":
	case "Fetch":
		return sessionlessObject(method.This)
	default:
		return true // the simulator decides (logins pass, everything else is NotAuthenticated)
	}
	// The body is the request type decoded from the envelope; its specs are read by name, whatever
	// the wrapper the simulator decoded it into.
	v := reflect.ValueOf(method.Body)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	specs, ok := v.FieldByName("SpecSet").Interface().([]types.PropertyFilterSpec)
	if !ok || len(specs) == 0 {
		return false
	}
	for _, spec := range specs {
		for _, o := range spec.ObjectSet {
			if !sessionlessObject(o.Obj) {
				return false
			}
		}
	}
	return true
}

func sessionlessObject(ref types.ManagedObjectReference) bool {
	return ref.Type == "SessionManager" || ref.Type == "ServiceInstance"
}
