package soak

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// TestBugFrontLosesACLDeletesOnly: through the injected bug's front a
// DeleteAccessControlList of the official SDK answers success and the list
// stays; every other call reaches the cloud (the create and the reads
// here), and a delete that bypasses the front deletes.
func TestBugFrontLosesACLDeletesOnly(t *testing.T) {
	env := emulatortest.Start(t)
	f, err := startBugFront(env.Emulator.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	fronted := *env
	fronted.Endpoint = f.addr
	c := fronted.SLB(t)

	create := slb.CreateCreateAccessControlListRequest()
	create.AclName = "bug-front"
	created, err := c.CreateAccessControlList(create)
	if err != nil {
		t.Fatalf("create through the front: %v", err)
	}
	del := slb.CreateDeleteAccessControlListRequest()
	del.AclId = created.AclId
	if _, err := c.DeleteAccessControlList(del); err != nil {
		t.Fatalf("delete through the front answered %v, want success", err)
	}
	if got := f.lost.Load(); got != 1 {
		t.Errorf("lost calls = %d, want 1", got)
	}
	if n := env.Emulator.Calls("slb", bugAction); n != 0 {
		t.Errorf("the cloud saw %d %s calls, want 0", n, bugAction)
	}
	get := slb.CreateDescribeAccessControlListAttributeRequest()
	get.AclId = created.AclId
	if _, err := c.DescribeAccessControlListAttribute(get); err != nil {
		t.Fatalf("the list is gone after a lost delete: %v", err)
	}

	// A request remembers the endpoint it was sent to: a new one each time.
	direct := slb.CreateDeleteAccessControlListRequest()
	direct.AclId = created.AclId
	if _, err := env.SLB(t).DeleteAccessControlList(direct); err != nil {
		t.Fatalf("delete without the front: %v", err)
	}
	get = slb.CreateDescribeAccessControlListAttributeRequest()
	get.AclId = created.AclId
	if _, err := c.DescribeAccessControlListAttribute(get); err == nil {
		t.Fatal("the list is still there after a delete that reached the cloud")
	}
}
