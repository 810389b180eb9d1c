package vc

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

func TestConfigureDatastoreIORM(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ds        string
		spec      types.StorageIORMConfigSpec
		want      string // fault type, "" for success
		enabled   bool
		threshold int32
		mode      string
	}{
		{name: "enable with a manual threshold", ds: "ds-a",
			spec:    types.StorageIORMConfigSpec{Enabled: types.NewBool(true), CongestionThreshold: 20},
			enabled: true, threshold: 20, mode: "manual"},
		{name: "automatic threshold at 80% of peak", ds: "ds-a",
			spec:    types.StorageIORMConfigSpec{Enabled: types.NewBool(true), CongestionThresholdMode: "automatic", PercentOfPeakThroughput: 80},
			enabled: true, threshold: 30, mode: "automatic"},
		{name: "threshold out of range", ds: "ds-a",
			spec: types.StorageIORMConfigSpec{Enabled: types.NewBool(true), CongestionThreshold: 200},
			want: "InvalidArgument", threshold: 30, mode: "manual"},
		{name: "unknown mode", ds: "ds-a",
			spec: types.StorageIORMConfigSpec{CongestionThresholdMode: "sometimes"},
			want: "InvalidArgument", threshold: 30, mode: "manual"},
		{name: "vSAN has no SIOC", ds: "ds-vsan",
			spec: types.StorageIORMConfigSpec{Enabled: types.NewBool(true)},
			want: "NotSupported", threshold: 30, mode: "manual"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTestLab(t, testScenario)
			ctx := context.Background()
			srm := object.NewStorageResourceManager(tl.c.Client)
			tk, err := srm.ConfigureDatastoreIORM(ctx, tl.ds(t, tc.ds), tc.spec, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := typeName(tl.waitTask(t, tk, 0)); got != tc.want {
				t.Fatalf("fault %q, want %q", got, tc.want)
			}
			iorm := tl.dsMO(t, tc.ds).IormConfiguration
			if iorm.Enabled != tc.enabled || iorm.CongestionThreshold != tc.threshold || iorm.CongestionThresholdMode != tc.mode {
				t.Errorf("iormConfiguration = enabled %v, %d ms, %s; want %v, %d ms, %s",
					iorm.Enabled, iorm.CongestionThreshold, iorm.CongestionThresholdMode, tc.enabled, tc.threshold, tc.mode)
			}
			tl.step(t, 1)
			truth, err := tl.GroundTruth(1)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range truth.Datastores {
				if d.Name != tc.ds {
					continue
				}
				if tc.enabled && tc.mode == "manual" && d.ThresholdMs != float64(tc.threshold) {
					t.Errorf("the physics applies a %v ms threshold, want %d", d.ThresholdMs, tc.threshold)
				}
				if !tc.enabled && d.ThresholdMs != 0 {
					t.Errorf("the physics has SIOC on (%v ms) on a datastore where it is off", d.ThresholdMs)
				}
			}
		})
	}
}

func TestQueryIORMConfigOption(t *testing.T) {
	tl := newTestLab(t, testScenario)
	host := tl.inv.hostByName["esx-01"].ref
	res, err := methods.QueryIORMConfigOption(context.Background(), tl.c.Client, &types.QueryIORMConfigOption{
		This: *tl.c.Client.ServiceContent.StorageResourceManager, Host: host,
	})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Returnval.CongestionThresholdOption
	if o.Min != 5 || o.Max != 100 || o.DefaultValue != 30 {
		t.Errorf("congestion threshold option %d..%d default %d, want 5..100 default 30", o.Min, o.Max, o.DefaultValue)
	}
}
