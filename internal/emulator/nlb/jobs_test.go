package nlb_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
)

// listAsynJobs calls ListAsynJobs, which the typed legacy SDK lacks, through
// the same official client's CommonRequest.
func listAsynJobs(t *testing.T, f *fixture, ids ...string) (jobs []struct{ Id, Status string }, total string, err error) {
	t.Helper()
	r := requests.NewCommonRequest()
	r.Method = "POST"
	r.Product = "Nlb"
	r.Version = "2022-04-30"
	r.ApiName = "ListAsynJobs"
	r.Domain = f.env.Endpoint
	r.Scheme = "http"
	for i, id := range ids {
		r.FormParams["JobIds."+strconv.Itoa(i+1)] = id
	}
	resp, err := f.c.ProcessCommonRequest(r)
	if err != nil {
		return nil, "", err
	}
	var body struct {
		Jobs       []struct{ Id, Status string }
		TotalCount string
	}
	noErr(t, json.Unmarshal(resp.GetHttpContentBytes(), &body))
	return body.Jobs, body.TotalCount, nil
}

func TestJobStatusAndConflictLock(t *testing.T) {
	f := newFixture(t)
	id := f.createLB(t, lbRequest("jobs"))
	setDelays(t, f.env, 0, 400*time.Millisecond)

	u := nlb.CreateUpdateLoadBalancerAttributeRequest()
	u.LoadBalancerId, u.LoadBalancerName = id, "first"
	resp, err := f.c.UpdateLoadBalancerAttribute(u)
	noErr(t, err)
	if st := f.jobStatus(t, resp.JobId); st != "Processing" {
		t.Fatalf("job status right after the call = %s, want Processing", st)
	}
	if st := f.getLB(t, id).LoadBalancerStatus; st != "Configuring" {
		t.Fatalf("LB status during update = %s, want Configuring", st)
	}

	// A conflicting mutation on the same LB while the job runs.
	u2 := nlb.CreateUpdateLoadBalancerAttributeRequest()
	u2.LoadBalancerId, u2.LoadBalancerName = id, "second"
	_, err = f.c.UpdateLoadBalancerAttribute(u2)
	wantErr(t, err, "Conflict.Lock", http.StatusBadRequest)
	if !strings.Contains(err.Error(), "The Lock ["+id+"] is conflict.") {
		t.Fatalf("lock message: %v", err)
	}
	d := nlb.CreateDeleteLoadBalancerRequest()
	d.LoadBalancerId = id
	_, err = f.c.DeleteLoadBalancer(d)
	wantErr(t, err, "Conflict.Lock", http.StatusBadRequest)

	jobs, total, err := listAsynJobs(t, f, resp.JobId, "no-such-job")
	noErr(t, err)
	if total != "1" || len(jobs) != 1 || jobs[0].Id != resp.JobId || jobs[0].Status != "Processing" {
		t.Fatalf("ListAsynJobs: %+v total %q", jobs, total)
	}

	eventually(t, "job Succeeded", func() bool { return f.jobStatus(t, resp.JobId) == "Succeeded" })
	got := f.getLB(t, id)
	if got.LoadBalancerStatus != "Active" || got.LoadBalancerName != "first" {
		t.Fatalf("after the job: %s %s", got.LoadBalancerStatus, got.LoadBalancerName)
	}
	jobs, _, err = listAsynJobs(t, f, resp.JobId)
	noErr(t, err)
	if len(jobs) != 1 || jobs[0].Status != "Succeeded" {
		t.Fatalf("ListAsynJobs after the job: %+v", jobs)
	}
	_, err = f.c.UpdateLoadBalancerAttribute(u2)
	noErr(t, err)

	g := nlb.CreateGetJobStatusRequest()
	g.JobId = "00000000-0000-0000-0000-000000000000"
	_, err = f.c.GetJobStatus(g)
	wantErr(t, err, "ResourceNotFound.JobId", http.StatusNotFound)
	_, _, err = listAsynJobs(t, f)
	wantErr(t, err, "MissingParameter", http.StatusBadRequest)
}

func TestClientTokenReplaysJob(t *testing.T) {
	f := newFixture(t)
	id := f.createLB(t, lbRequest("replay"))
	setDelays(t, f.env, 0, time.Hour)
	u := nlb.CreateUpdateLoadBalancerAttributeRequest()
	u.LoadBalancerId, u.LoadBalancerName, u.ClientToken = id, "once", "tok-upd"
	first, err := f.c.UpdateLoadBalancerAttribute(u)
	noErr(t, err)
	// The retry is answered from the token, not refused by the lock.
	again, err := f.c.UpdateLoadBalancerAttribute(u)
	noErr(t, err)
	if again.JobId != first.JobId {
		t.Fatalf("retry JobId %s, want %s", again.JobId, first.JobId)
	}
}
