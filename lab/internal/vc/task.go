package vc

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// labTask is a vSphere task whose life the lab drives itself, on simulated time: the simulator's
// tasks run their work holding the entity's lock and stamp wall-clock times, which suits neither a
// copy that lasts minutes of simulated time nor an accelerated clock.
type labTask struct {
	lab  *Lab
	task *simulator.Task
}

// newTask creates a queued task on entity, named as vCenter names it ("RelocateVM_Task",
// description id "VirtualMachine.relocate").
func (l *Lab) newTask(ctx *simulator.Context, entity types.ManagedObjectReference, method, descriptionID string) *labTask {
	t := simulator.CreateTask(entity, descriptionID, nil)
	t.Info.Name = method
	t.Info.DescriptionId = entity.Type + "." + descriptionID
	// info.entity is a managed entity: a task on a manager (StorageResourceManager) names none.
	if e, ok := ctx.Map.Get(entity).(mo.Entity); ok {
		t.Info.EntityName = e.Entity().Name
	} else {
		t.Info.Entity, t.Info.EntityName = nil, ""
	}
	user := "lab"
	if ctx.Session != nil && ctx.Session.UserName != "" {
		user = ctx.Session.UserName
	}
	t.Info.Reason = &types.TaskReasonUser{UserName: user}
	t.Info.QueueTime = l.clock.Now()
	t.Info.State = types.TaskInfoStateQueued
	lt := &labTask{lab: l, task: t}
	bg := l.newContext()
	bg.Map.Put(t)
	bg.WithLock(t, func() {
		bg.Update(t, []types.PropertyChange{
			{Name: "info.key", Val: t.Self.Value},
			{Name: "info.task", Val: t.Self},
		})
	})
	return lt
}

func (t *labTask) ref() types.ManagedObjectReference { return t.task.Self }

func (t *labTask) update(changes ...types.PropertyChange) {
	ctx := t.lab.newContext()
	ctx.WithLock(t.task, func() { ctx.Update(t.task, changes) })
}

// running marks the task started.
func (t *labTask) running() {
	t.update(
		types.PropertyChange{Name: "info.state", Val: types.TaskInfoStateRunning},
		types.PropertyChange{Name: "info.startTime", Val: t.lab.clock.Now()},
	)
}

// progress reports the percentage done.
func (t *labTask) progress(pct int32) {
	t.update(types.PropertyChange{Name: "info.progress", Val: pct})
}

// succeed completes the task with a result (nil for none).
func (t *labTask) succeed(result types.AnyType) {
	changes := []types.PropertyChange{
		{Name: "info.state", Val: types.TaskInfoStateSuccess},
		{Name: "info.completeTime", Val: t.lab.clock.Now()},
		{Name: "info.progress", Val: int32(100)},
	}
	if result != nil {
		changes = append(changes, types.PropertyChange{Name: "info.result", Val: result})
	}
	t.update(changes...)
}

// fail completes the task with a fault and its message.
func (t *labTask) fail(fault types.BaseMethodFault, msg string) {
	if !t.started() {
		t.running()
	}
	t.update(
		types.PropertyChange{Name: "info.state", Val: types.TaskInfoStateError},
		types.PropertyChange{Name: "info.completeTime", Val: t.lab.clock.Now()},
		types.PropertyChange{Name: "info.error", Val: &types.LocalizedMethodFault{Fault: fault, LocalizedMessage: msg}},
	)
}

func (t *labTask) started() bool {
	ctx := t.lab.newContext()
	var started bool
	ctx.WithLock(t.task, func() { started = t.task.Info.StartTime != nil })
	return started
}

// finished reports whether the task has ended (it may have been cancelled by a client).
func (t *labTask) finished() bool {
	ctx := t.lab.newContext()
	var done bool
	ctx.WithLock(t.task, func() {
		done = t.task.Info.State == types.TaskInfoStateSuccess || t.task.Info.State == types.TaskInfoStateError
	})
	return done
}

// taskError is a fault with the message vCenter would show for it.
type taskError struct {
	fault types.BaseMethodFault
	msg   string
}

func (e *taskError) Error() string { return e.msg }

func faultf(fault types.BaseMethodFault, format string, args ...any) *taskError {
	return &taskError{fault: fault, msg: fmt.Sprintf(format, args...)}
}
