package vc

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// ServiceInstance answers CurrentTime with the lab's simulated time, so clients that build their
// performance queries from the server's clock see the same time as the samples.
type ServiceInstance struct {
	*simulator.ServiceInstance
	lab *Lab
}

// CurrentTime returns the simulated time.
func (s *ServiceInstance) CurrentTime(*simulator.Context, *types.CurrentTime) soap.HasFault {
	return &methods.CurrentTimeBody{Res: &types.CurrentTimeResponse{Returnval: s.lab.clock.Now()}}
}
