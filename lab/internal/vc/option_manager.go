package vc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// MaxQueryMetricsKey is the vCenter advanced setting capping the metrics of one QueryPerf.
const MaxQueryMetricsKey = "config.vpxd.stats.maxQueryMetrics"

// OptionManager is vCenter's advanced settings (ServiceContent.setting); the lab reads
// config.vpxd.stats.maxQueryMetrics from it.
type OptionManager struct {
	*simulator.OptionManager
	lab *Lab
}

// UpdateOptions checks the settings the lab understands before storing them.
func (m *OptionManager) UpdateOptions(ctx *simulator.Context, req *types.UpdateOptions) soap.HasFault {
	limit := int64(-2)
	for i, ch := range req.ChangedValue {
		v := ch.GetOptionValue()
		if v.Key != MaxQueryMetricsKey {
			continue
		}
		n, err := parseLimit(v.Value)
		if err != nil {
			field := fmt.Sprintf("changedValue[%d].value", i)
			return &methods.UpdateOptionsBody{Fault_: simulator.Fault(
				fmt.Sprintf("A specified parameter was not correct: %s (%s %v)", field, err, v.Value),
				&types.InvalidArgument{InvalidProperty: field})}
		}
		// vCenter keeps the value as the string it was given.
		v.Value = strconv.FormatInt(n, 10)
		limit = n
	}
	res := m.OptionManager.UpdateOptions(req)
	if res.Fault() == nil && limit != -2 {
		m.lab.maxQueryMetrics.Store(limit)
	}
	return res
}

// parseLimit reads a maxQueryMetrics value: an integer, -1 (or any negative) for no limit.
func parseLimit(v any) (int64, error) {
	var n int64
	switch x := v.(type) {
	case string:
		p, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("must be an integer, got")
		}
		n = p
	case int32:
		n = int64(x)
	case int64:
		n = x
	case int:
		n = int64(x)
	default:
		return 0, fmt.Errorf("must be an integer, got %T", v)
	}
	if n < 0 {
		n = -1
	}
	return n, nil
}

// addMaxQueryMetricsSetting publishes the scenario's limit as vCenter does, as a string.
func (l *Lab) addMaxQueryMetricsSetting(ctx *simulator.Context) {
	om := ctx.Map.OptionManager()
	v := strconv.FormatInt(l.maxQueryMetrics.Load(), 10)
	for _, o := range om.Setting {
		if ov := o.GetOptionValue(); ov.Key == MaxQueryMetricsKey {
			ov.Value = v
			return
		}
	}
	om.Setting = append(om.Setting, &types.OptionValue{Key: MaxQueryMetricsKey, Value: v})
}

// SetMaxQueryMetrics sets config.vpxd.stats.maxQueryMetrics (a negative value: no limit), as an
// administrator would in the advanced settings.
func (l *Lab) SetMaxQueryMetrics(n int64) {
	if n < 0 {
		n = -1
	}
	l.maxQueryMetrics.Store(n)
	ctx := l.newContext()
	om := ctx.Map.OptionManager()
	ctx.WithLock(om, func() { l.addMaxQueryMetricsSetting(ctx) })
}
