package vc

import (
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// mutate changes a simulator object under its lock and tells the PropertyCollector what changed,
// property by property down to the leaves under roots. Leaf-level change names matter: a client
// filter on "config.hardware.device" or "summary.storage.committed" is only notified of changes
// whose name it is a prefix of (or equal to).
func mutate(ctx *simulator.Context, obj mo.Reference, roots []string, f func()) {
	ctx.WithLock(obj, func() {
		before := simulator.Checkpoint(obj)
		f()
		changes := leafChanges(before, obj, roots)
		if len(changes) > 0 {
			ctx.Update(obj, changes)
		}
	})
}

var (
	morefType = reflect.TypeOf(types.ManagedObjectReference{})
	timeType  = reflect.TypeOf(time.Time{})
)

// managedValue returns the mo.* struct inside a simulator object (or the object itself).
func managedValue(obj mo.Reference) reflect.Value {
	v := reflect.ValueOf(obj).Elem()
	for path.Base(v.Type().PkgPath()) != "mo" {
		v = v.Field(0)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
	}
	return v
}

// leafChanges lists the differences between two states of an object under the given property
// paths, one change per differing leaf (slice, map, interface, scalar, reference or time).
func leafChanges(before, after mo.Reference, roots []string) []types.PropertyChange {
	var out []types.PropertyChange
	bv, av := managedValue(before), managedValue(after)
	for _, root := range roots {
		b, okb := fieldByPath(bv, root)
		a, oka := fieldByPath(av, root)
		if !okb || !oka {
			continue
		}
		diffLeaves(root, b, a, &out)
	}
	return out
}

// fieldByPath follows a dotted property path ("config.hardware.device") through struct fields
// named by their json tags, dereferencing pointers.
func fieldByPath(v reflect.Value, p string) (reflect.Value, bool) {
	for _, name := range strings.Split(p, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := fieldByTag(v, name)
		if !ok {
			return reflect.Value{}, false
		}
		v = f
	}
	return v, true
}

func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			inner := v.Field(i)
			if inner.Kind() == reflect.Pointer {
				if inner.IsNil() {
					continue
				}
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if f, ok := fieldByTag(inner, name); ok {
					return f, true
				}
			}
			continue
		}
		if tagName(sf) == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func tagName(sf reflect.StructField) string {
	for _, key := range []string{"json", "xml"} {
		if tag := sf.Tag.Get(key); tag != "" {
			if name := strings.Split(tag, ",")[0]; name != "" && name != "-" {
				return name
			}
		}
	}
	return ""
}

func diffLeaves(p string, b, a reflect.Value, out *[]types.PropertyChange) {
	if reflect.DeepEqual(b.Interface(), a.Interface()) {
		return
	}
	leaf := func() {
		*out = append(*out, types.PropertyChange{Name: p, Op: types.PropertyChangeOpAssign, Val: valueOf(a)})
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() || a.Elem().Kind() != reflect.Struct {
			leaf()
			return
		}
		diffLeaves(p, b.Elem(), a.Elem(), out)
	case reflect.Struct:
		if a.Type() == morefType || a.Type() == timeType {
			leaf()
			return
		}
		diffStruct(p, b, a, out)
	default:
		leaf()
	}
}

func diffStruct(p string, b, a reflect.Value, out *[]types.PropertyChange) {
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			fb, fa := b.Field(i), a.Field(i)
			if fa.Kind() == reflect.Struct {
				diffStruct(p, fb, fa, out)
			}
			continue
		}
		name := tagName(sf)
		if name == "" || !sf.IsExported() {
			continue
		}
		diffLeaves(p+"."+name, b.Field(i), a.Field(i), out)
	}
}

func valueOf(v reflect.Value) any {
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface || v.Kind() == reflect.Slice) && v.IsNil() {
		return nil
	}
	return v.Interface()
}
