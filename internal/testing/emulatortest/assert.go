package emulatortest

import (
	"errors"
	"testing"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/alibabacloud-go/tea/tea"
	sdkerrors "github.com/aliyun/alibaba-cloud-sdk-go/sdk/errors"
)

// WantServerError fails the test unless err is the official SDK's
// *errors.ServerError with code and HTTP status and a RequestId, as every
// emulator error response carries; it returns the error for further checks.
func WantServerError(t testing.TB, err error, code string, status int) *sdkerrors.ServerError {
	t.Helper()
	var se *sdkerrors.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("want ServerError %s/%d, got %v", code, status, err)
	}
	if se.ErrorCode() != code || se.HttpStatus() != status {
		t.Fatalf("got %s/%d (%s), want %s/%d", se.ErrorCode(), se.HttpStatus(), se.Message(), code, status)
	}
	if se.RequestId() == "" {
		t.Fatalf("error %s/%d without RequestId", code, status)
	}
	return se
}

// NoError fails the test at once on err.
func NoError(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Eventually polls cond until it holds, failing the test after a generous
// deadline; asynchronous states are computed from timestamps, so a short
// poll interval keeps tests fast.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CallV3 calls an RPC-style action through a darabonba generic client, which
// signs with ACS3-HMAC-SHA256 and sends the action only in headers, the
// parameters in the query and the form body; it returns CallApi's result
// (body, headers, statusCode).
func CallV3(c *openapi.Client, action, version string, query map[string]string, body map[string]any) (map[string]any, error) {
	params := &openapi.Params{
		Action: dara.String(action), Version: dara.String(version), Protocol: dara.String("HTTP"),
		Pathname: dara.String("/"), Method: dara.String("POST"), AuthType: dara.String("AK"),
		Style: dara.String("RPC"), ReqBodyType: dara.String("formData"), BodyType: dara.String("json"),
	}
	req := &openapi.OpenApiRequest{Query: map[string]*string{}}
	for k, v := range query {
		req.Query[k] = dara.String(v)
	}
	if body != nil {
		req.Body = body
	}
	return c.CallApi(params, req, &dara.RuntimeOptions{})
}

// CallV3 calls action as the package function CallV3 does, signed with
// the test key through the client of Env.OpenAPI.
func (env *Env) CallV3(t testing.TB, action, version string, query map[string]string, body map[string]any) (map[string]any, error) {
	t.Helper()
	return CallV3(env.OpenAPI(t), action, version, query, body)
}

// WantTeaError fails the test unless err is a darabonba client's
// *tea.SDKError with code and HTTP status, the V3 clients' counterpart of
// WantServerError; it returns the error for further checks.
func WantTeaError(t testing.TB, err error, code string, status int) *tea.SDKError {
	t.Helper()
	var se *tea.SDKError
	if !errors.As(err, &se) {
		t.Fatalf("want SDKError %s/%d, got %v", code, status, err)
	}
	if tea.StringValue(se.Code) != code || tea.IntValue(se.StatusCode) != status {
		t.Fatalf("got %s/%d (%s), want %s/%d", tea.StringValue(se.Code), tea.IntValue(se.StatusCode), tea.StringValue(se.Message), code, status)
	}
	return se
}
