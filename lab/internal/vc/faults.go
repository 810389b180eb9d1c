package vc

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// FaultRule makes a vSphere method fail with a given fault, with some probability, for some
// number of calls.
type FaultRule struct {
	ID int `json:"id"`
	// Method is the vSphere method name ("RelocateVM_Task", "QueryPerf"), or "*" for every method.
	Method string `json:"method"`
	// ObjectType restricts the rule to calls on one managed object type ("VirtualMachine").
	ObjectType string `json:"object_type,omitempty"`
	// Object restricts the rule to one object, by moid ("vm-42") or name.
	Object string `json:"object,omitempty"`
	// Fault is the vSphere fault type ("TaskInProgress", "NoDiskSpace", "SystemError").
	Fault string `json:"fault"`
	// Message is the fault's message (faultstring / localizedMessage).
	Message string `json:"message,omitempty"`
	// Probability that a matching call fails, in (0, 1]; 1 when zero.
	Probability float64 `json:"probability,omitempty"`
	// Count is how many calls the rule fails before it retires; 0 = no limit.
	Count int `json:"count,omitempty"`
	// Delivery is "task" (a *_Task method returns a task that fails; the default for those) or
	// "call" (the call itself returns the SOAP fault; the only choice for other methods).
	Delivery string `json:"delivery,omitempty"`
	// Fired counts the calls the rule has failed.
	Fired int `json:"fired"`
}

type faultInjector struct {
	mu     sync.Mutex
	rules  []*FaultRule
	nextID int
	rng    *rand.Rand
}

var faultTypes = types.TypeFunc()

// newFault instantiates a vSphere fault type by name.
func newFault(name string) (types.BaseMethodFault, bool) {
	t, ok := faultTypes(name)
	if !ok || t.Kind() != reflect.Struct {
		return nil, false
	}
	f, ok := reflect.New(t).Interface().(types.BaseMethodFault)
	return f, ok
}

// AddFault validates a rule (reporting every problem at once) and arms it.
func (l *Lab) AddFault(r FaultRule) (FaultRule, error) {
	var problems []string
	if r.Method == "" {
		problems = append(problems, "method: is required (a vSphere method name or *)")
	}
	if r.Fault == "" {
		problems = append(problems, "fault: is required (a vSphere fault type such as TaskInProgress)")
	} else if _, ok := newFault(r.Fault); !ok {
		problems = append(problems, fmt.Sprintf("fault: %q is not a vSphere fault type", r.Fault))
	}
	if r.Probability == 0 {
		r.Probability = 1
	}
	if math.IsNaN(r.Probability) || r.Probability <= 0 || r.Probability > 1 {
		problems = append(problems, fmt.Sprintf("probability: must be in (0, 1], got %v", r.Probability))
	}
	if r.Count < 0 {
		problems = append(problems, fmt.Sprintf("count: must be zero (no limit) or positive, got %d", r.Count))
	}
	isTask := strings.HasSuffix(r.Method, "_Task")
	switch r.Delivery {
	case "":
		r.Delivery = "call"
		if isTask {
			r.Delivery = "task"
		}
	case "call":
	case "task":
		if !isTask {
			problems = append(problems, fmt.Sprintf("delivery: only *_Task methods return a task, %q does not", r.Method))
		}
	default:
		problems = append(problems, fmt.Sprintf("delivery: must be task or call, got %q", r.Delivery))
	}
	if len(problems) > 0 {
		return FaultRule{}, errors.New(strings.Join(problems, "; "))
	}
	if r.Message == "" {
		r.Message = fmt.Sprintf("%s (fault injected by the lab)", r.Fault)
	}
	fi := &l.faults
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if fi.rng == nil {
		fi.rng = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	fi.nextID++
	r.ID, r.Fired = fi.nextID, 0
	rule := r
	fi.rules = append(fi.rules, &rule)
	return rule, nil
}

// Faults lists the armed rules.
func (l *Lab) Faults() []FaultRule {
	fi := &l.faults
	fi.mu.Lock()
	defer fi.mu.Unlock()
	out := make([]FaultRule, 0, len(fi.rules))
	for _, r := range fi.rules {
		out = append(out, *r)
	}
	return out
}

// ClearFaults disarms every rule, removes the added latency and makes inaccessible datastores
// accessible again.
func (l *Lab) ClearFaults() {
	fi := &l.faults
	fi.mu.Lock()
	fi.rules = nil
	fi.mu.Unlock()
	l.latency.Store(0)
	l.automation.Store(0)
	for _, d := range l.inv.stores {
		l.mu.Lock()
		inaccessible := !d.accessible && !d.sc.Inaccessible
		l.mu.Unlock()
		if inaccessible {
			_ = l.SetAccessible(d.name, true)
		}
	}
}

// SetLatency adds a delay to every call of the vSphere APIs (SOAP and REST).
func (l *Lab) SetLatency(d time.Duration) error {
	if d < 0 || d > time.Minute {
		return fmt.Errorf("latency: must be between 0 and 1m, got %v", d)
	}
	l.latency.Store(int64(d))
	return nil
}

// Latency returns the added latency.
func (l *Lab) Latency() time.Duration { return time.Duration(l.latency.Load()) }

var loginMethods = map[string]bool{
	"Login": true, "LoginByToken": true, "LoginExtensionByCertificate": true, "CloneSession": true,
	"RetrieveServiceContent": true,
}

// injected decides whether a call fails by a rule; it returns the object that answers it then.
func (l *Lab) injected(ctx *simulator.Context, method *simulator.Method) *injectedFault {
	// Calls without a session get vCenter's NotAuthenticated first; the simulator's in-process
	// clients (an empty user name) are the lab's own and never fail.
	if ctx.Session == nil && !loginMethods[method.Name] {
		return nil
	}
	if ctx.Session != nil && ctx.Session.UserName == "" {
		return nil
	}
	fi := &l.faults
	fi.mu.Lock()
	defer fi.mu.Unlock()
	for _, r := range fi.rules {
		if r.Count > 0 && r.Fired >= r.Count {
			continue
		}
		if r.Method != "*" && r.Method != method.Name {
			continue
		}
		if r.ObjectType != "" && r.ObjectType != method.This.Type {
			continue
		}
		if r.Object != "" && r.Object != method.This.Value && r.Object != entityName(ctx, method.This) {
			continue
		}
		if r.Probability < 1 && fi.rng.Float64() >= r.Probability {
			continue
		}
		r.Fired++
		fault, _ := newFault(r.Fault)
		h := &injectedFault{
			Self: method.This, lab: l, method: method.Name, fault: fault, msg: r.Message,
			inTask: r.Delivery == "task" && strings.HasSuffix(method.Name, "_Task"),
		}
		method.Name = injectedMethod
		return h
	}
	return nil
}

func entityName(ctx *simulator.Context, ref types.ManagedObjectReference) string {
	obj := ctx.Map.Get(ref)
	if obj == nil {
		return ""
	}
	v := managedValue(obj)
	if f := v.FieldByName("Name"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

// SetAutomationStatus makes the Automation API (/api, /rest; not the vSphere Client's clone-ticket
// endpoint) answer every call with an HTTP 5xx status, as a vCenter whose vAPI endpoint service is
// down does; 0 serves it again.
func (l *Lab) SetAutomationStatus(status int) error {
	if status != 0 && (status < 500 || status > 599) {
		return fmt.Errorf("status: must be 0 (serve) or an HTTP 5xx status, got %d", status)
	}
	l.automation.Store(int64(status))
	return nil
}

// AutomationStatus is the status the Automation API answers with (0: it serves).
func (l *Lab) AutomationStatus() int { return int(l.automation.Load()) }

// automationDown answers r with the injected status when the Automation API is made to fail.
func (l *Lab) automationDown(w http.ResponseWriter, r *http.Request) bool {
	status := int(l.automation.Load())
	if status == 0 || strings.HasPrefix(r.URL.Path, "/api/ui/") {
		return false
	}
	if p := r.URL.Path; p != "/api" && !strings.HasPrefix(p, "/api/") && !strings.HasPrefix(p, "/rest/") {
		return false
	}
	vapiError(w, status, "SERVICE_UNAVAILABLE", "the vAPI endpoint is not available (fault injected by the lab)")
	return true
}
