package nlb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Job statuses the NLB API reports.
const (
	jobSucceeded = "Succeeded"
	jobFailed    = "Failed"
)

// maxJobsPerCall is how many job ids one ListAsynJobs call takes.
const maxJobsPerCall = 20

// wait blocks until every job succeeded: one GetJobStatus per poll for a
// single job, ListAsynJobs (20 ids a call) for more. A Failed job is an
// error. Jobs still processing after JobTimeout give a *service.RetryError,
// so a slow cloud requeues the Service instead of holding a worker: the
// next sync recomputes the plan from what the cloud then shows.
func (p *Provider) wait(ctx context.Context, what string, ids ...string) error {
	pending := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" {
			pending = append(pending, id)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	deadline := time.Now().Add(p.opts.JobTimeout)
	for {
		// A job never finishes at once: look only after one interval.
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(p.opts.JobPollInterval):
		}
		statuses, err := p.statuses(ctx, pending)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		var still []string
		for _, id := range pending {
			st, known := statuses[id]
			switch {
			case !known:
				// Expired or never recorded: nothing left to wait for.
				klog.FromContext(ctx).V(4).Info("Job unknown to the cloud; not waiting for it", "job", id, "what", what)
			case strings.EqualFold(st, jobFailed):
				return fmt.Errorf("%s: job %s failed", what, id)
			case !strings.EqualFold(st, jobSucceeded):
				still = append(still, id)
			}
		}
		if len(still) == 0 {
			return nil
		}
		pending = still
		if time.Now().After(deadline) {
			return &service.RetryError{Err: fmt.Errorf("%s: jobs %s still processing after %s", what, strings.Join(pending, ", "), p.opts.JobTimeout)}
		}
	}
}

// statuses reads the status of each job.
func (p *Provider) statuses(ctx context.Context, ids []string) (map[string]string, error) {
	if len(ids) == 1 {
		st, err := p.api.jobStatus(ctx, ids[0])
		if err != nil {
			if cloud.IsNotFound(err) {
				return map[string]string{}, nil
			}
			return nil, err
		}
		return map[string]string{ids[0]: st}, nil
	}
	out := map[string]string{}
	for _, part := range service.Chunks(ids, maxJobsPerCall) {
		m, err := p.api.jobStatuses(ctx, part)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// op is one job-returning call.
type op func(context.Context) (string, error)

// runQueues runs several independent queues of calls (one queue per
// server group: each group is locked while its job runs) in rounds: the
// next call of every queue, then one wait for all their jobs.
func (p *Provider) runQueues(ctx context.Context, what string, queues [][]op) error {
	for round := 0; ; round++ {
		var jobs []string
		started := false
		for _, q := range queues {
			if round >= len(q) {
				continue
			}
			started = true
			job, err := q[round](ctx)
			if err != nil {
				return err
			}
			jobs = append(jobs, job)
		}
		if !started {
			return nil
		}
		if err := p.wait(ctx, what, jobs...); err != nil {
			return err
		}
	}
}
