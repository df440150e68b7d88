package nlb

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Job statuses as GetJobStatus reports them.
const (
	JobProcessing = "Processing"
	JobSucceeded  = "Succeeded"
	JobFailed     = "Failed"
)

// Job is one asynchronous operation. Its status is computed from DoneAt, so
// reads never mutate: Processing before, Succeeded after.
type Job struct {
	// ID is the JobId, an upper-case UUID.
	ID string `json:"id"`
	// Action is the API action that started the job, e.g. CreateListener.
	Action string `json:"action"`
	// ResourceType is the locked resource's kind: loadbalancer or
	// servergroup.
	ResourceType string `json:"resourceType"`
	// ResourceID is the locked resource (nlb-... or sgp-...).
	ResourceID string `json:"resourceId"`
	// RegionID is the job's region.
	RegionID string `json:"regionId"`
	// CreatedAt is when the job started.
	CreatedAt time.Time `json:"createdAt"`
	// DoneAt is when the job succeeds (after store.DelayNLBJob) and its lock
	// is released.
	DoneAt time.Time `json:"doneAt"`
	// Fails makes the job end Failed instead of Succeeded (a failJob
	// fault); its change was rolled back (failJob in nlb.go).
	Fails bool `json:"fails,omitempty"`
}

func (j *Job) status(now time.Time) string {
	switch {
	case now.Before(j.DoneAt):
		return JobProcessing
	case j.Fails:
		return JobFailed
	}
	return JobSucceeded
}

// newJobID returns a job id in the cloud's UUID format.
func newJobID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	h := hex.EncodeToString(b[:])
	return strings.ToUpper(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}

// startJob records a job for req on a resource and returns it; the caller
// locks the resource until job.DoneAt.
func (s *Service) startJob(req *api.Request, resourceType, resourceID string) *Job {
	d := s.st.Settings().Delay(store.DelayNLBJob)
	j := &Job{
		ID: newJobID(), Action: req.Action, ResourceType: resourceType, ResourceID: resourceID,
		RegionID: req.RegionID, CreatedAt: req.Now, DoneAt: req.Now.Add(d),
	}
	s.state.Jobs[j.ID] = j
	return j
}

func (s *Service) getJobStatus(req *api.Request) (map[string]any, error) {
	id, err := req.Params.Required("JobId")
	if err != nil {
		return nil, err
	}
	j, ok := s.state.Jobs[id]
	if !ok || j.RegionID != req.RegionID {
		return nil, api.NotFound("ResourceNotFound.JobId", "The specified resource %s is not found.", id)
	}
	return map[string]any{"Status": j.status(req.Now)}, nil
}

// maxJobIDs is how many JobIds.N ListAsynJobs accepts in one call.
const maxJobIDs = 20

func (s *Service) listAsynJobs(req *api.Request) (map[string]any, error) {
	ids := req.Params.List("JobIds")
	if len(ids) == 0 {
		return nil, api.MissingParameter("JobIds")
	}
	if len(ids) > maxJobIDs {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidParameter", "The number of JobIds exceeds the limit of %d.", maxJobIDs)
	}
	jobs := []map[string]any{}
	for _, id := range ids {
		j, ok := s.state.Jobs[id]
		if !ok || j.RegionID != req.RegionID {
			continue
		}
		jobs = append(jobs, map[string]any{"Id": j.ID, "Status": j.status(req.Now)})
	}
	return map[string]any{"Jobs": jobs, "TotalCount": strconv.Itoa(len(jobs))}, nil
}
