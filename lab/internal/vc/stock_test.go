package vc

import (
	"context"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
)

func TestStockServesVcsimsDefaultInventoryToAnyUser(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	public, _ := url.Parse(srv.URL)
	stock, err := NewStock(public, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stock.Close()
	srv.Config.Handler = stock.Handler()

	ctx := context.Background()
	u, _ := url.Parse(srv.URL + "/sdk")
	u.User = url.UserPassword("anyone", "anything")
	c, err := govmomi.NewClient(ctx, u, true)
	if err != nil {
		t.Fatalf("any user logs in: %v", err)
	}
	finder := find.NewFinder(c.Client, true)
	dc, err := finder.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	finder.SetDatacenter(dc)
	if _, err := finder.Datastore(ctx, "LocalDS_0"); err != nil {
		t.Error(err)
	}
	if _, err := finder.HostSystem(ctx, "DC0_C0_H0"); err != nil {
		t.Error(err)
	}
	pod, err := finder.Folder(ctx, dc.InventoryPath+"/datastore/DC0_POD0")
	if err != nil {
		t.Fatalf("DC0_POD0: %v", err)
	}
	var sp mo.StoragePod
	if err := property.DefaultCollector(c.Client).RetrieveOne(ctx, pod.Reference(), []string{"childEntity"}, &sp); err != nil {
		t.Fatal(err)
	}
	if len(sp.ChildEntity) != 0 {
		t.Errorf("DC0_POD0 holds %v, want it empty", sp.ChildEntity)
	}
	if n := stock.KillSessions(); n < 1 {
		t.Errorf("killed %d sessions, want at least the test client's", n)
	}
}
