package gateway_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/slb"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/emulatortest"
)

func TestUnknownActionIsInvalidApiNotFound(t *testing.T) {
	env := emulatortest.Start(t)
	c := env.SLB(t)
	req := requests.NewCommonRequest()
	req.Product, req.Version, req.ApiName = "Slb", slb.Version, "NoSuchAction"
	req.Domain = env.Endpoint
	req.Scheme = "HTTP"
	_, err := c.ProcessCommonRequest(req)
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("want a ServerError, got %v", err)
	}
	if se.ErrorCode() != "InvalidApi.NotFound" || se.HttpStatus() != http.StatusNotFound {
		t.Fatalf("got %s %d", se.ErrorCode(), se.HttpStatus())
	}
	if se.RequestId() == "" {
		t.Fatal("no RequestId")
	}
}
