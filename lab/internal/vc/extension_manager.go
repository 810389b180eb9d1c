package vc

import (
	"fmt"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// ExtensionManager is the lab's: registrations are checked the way vCenter and the vSphere
// Client need them (a key; for a remote plugin, a client of type vsphere-client-remote with a
// version and the HTTPS URL of its plugin.json), and their heartbeat time is the server's.
type ExtensionManager struct {
	*simulator.ExtensionManager
	lab *Lab
}

// RemotePluginClientType is the client type of a vSphere Client remote plugin.
const RemotePluginClientType = "vsphere-client-remote"

// RegisterExtension registers an extension (refusing a key already registered).
func (m *ExtensionManager) RegisterExtension(ctx *simulator.Context, req *types.RegisterExtension) soap.HasFault {
	if f := m.check(&req.Extension); f != nil {
		return &methods.RegisterExtensionBody{Fault_: f}
	}
	req.Extension.LastHeartbeatTime = m.lab.clock.Now()
	m.dropCertificates(&req.Extension)
	return m.ExtensionManager.RegisterExtension(ctx, req)
}

// UpdateExtension replaces a registered extension.
func (m *ExtensionManager) UpdateExtension(ctx *simulator.Context, req *types.UpdateExtension) soap.HasFault {
	if f := m.check(&req.Extension); f != nil {
		return &methods.UpdateExtensionBody{Fault_: f}
	}
	req.Extension.LastHeartbeatTime = m.lab.clock.Now()
	m.dropCertificates(&req.Extension)
	return m.ExtensionManager.UpdateExtension(ctx, req)
}

func (m *ExtensionManager) check(x *types.Extension) *soap.Fault {
	var problems []string
	var first string
	bad := func(field, msg string) {
		if first == "" {
			first = field
		}
		problems = append(problems, field+": "+msg)
	}
	if strings.TrimSpace(x.Key) == "" {
		bad("extension.key", "is required")
	}
	for i, c := range x.Client {
		if c.Type != RemotePluginClientType {
			continue
		}
		field := fmt.Sprintf("extension.client[%d]", i)
		if c.Version == "" {
			bad(field+".version", "is required for a remote plugin")
		}
		if !strings.HasPrefix(c.Url, "https://") || !strings.HasSuffix(c.Url, "plugin.json") {
			bad(field+".url", fmt.Sprintf("must be the https URL of the plugin's plugin.json, got %q", c.Url))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return simulator.Fault("A specified parameter was not correct: "+strings.Join(problems, "; "), &types.InvalidArgument{InvalidProperty: first})
}

// dropCertificates forgets the servers' certificates when the lab plays a vCenter older than 8.0.2.
func (m *ExtensionManager) dropCertificates(x *types.Extension) {
	if !m.lab.dropServerCert.Load() {
		return
	}
	for i := range x.Server {
		x.Server[i].ServerCertificate = ""
	}
}
