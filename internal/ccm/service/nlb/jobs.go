package nlb

import (
	"context"
	"errors"
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

// errJobFailed marks a job the cloud reports Failed.
var errJobFailed = errors.New("failed")

// maxJobsPerCall is how many job ids one ListAsynJobs call takes.
const maxJobsPerCall = 20

// wait blocks until every job succeeded: one ListAsynJobs (20 ids a call)
// per poll, for one job as for several, so that waits spend one action's
// quota. A Failed job is an error. Jobs still processing after JobTimeout
// give a *service.RetryError, so a slow cloud requeues the Service instead
// of holding a worker: the next sync recomputes the plan from what the
// cloud then shows.
func (p *Provider) wait(ctx context.Context, what string, ids ...string) error {
	// A job never finishes at once: look only after one interval.
	return p.poll(ctx, what, p.opts.JobPollInterval, ids...)
}

// settle waits for the listener job an earlier pass left running on the
// load balancer, if this process remembers one: one ListAsynJobs at once
// (it has usually finished long since), then as wait does.
func (p *Provider) settle(ctx context.Context, lbID string) error {
	job, ok := p.pending.Load(lbID)
	if !ok {
		return nil
	}
	err := p.poll(ctx, "the last listener change on "+lbID, 0, job.(string))
	if errors.Is(err, errJobFailed) {
		// This pass plans from what the cloud shows, failed change or not.
		klog.FromContext(ctx).Info("An earlier listener change failed", "loadBalancer", lbID, "err", err)
		err = nil
	}
	if err != nil {
		return err
	}
	p.pending.CompareAndDelete(lbID, job)
	return nil
}

// poll reads the jobs' statuses first after first, then every
// JobPollInterval, until all succeeded.
func (p *Provider) poll(ctx context.Context, what string, first time.Duration, ids ...string) error {
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
	for pause := first; ; pause = p.opts.JobPollInterval {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pause):
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
				return fmt.Errorf("%s: job %s %w", what, id, errJobFailed)
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

// statuses reads the status of each job; unknown ids are absent.
func (p *Provider) statuses(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range cloud.Chunks(ids, maxJobsPerCall) {
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

// waitDeleted reads a Deleting load balancer until it is gone, one
// GetLoadBalancerAttribute per JobPollInterval; past JobTimeout the sync
// ends with a RetryError.
func (p *Provider) waitDeleted(ctx context.Context, id string) error {
	deadline := time.Now().Add(p.opts.JobTimeout)
	for {
		lb, err := p.api.getLB(ctx, id)
		if err != nil {
			return fmt.Errorf("read load balancer %s: %w", id, err)
		}
		if lb == nil {
			return nil
		}
		if lb.Status != statusDeleting {
			return &service.RetryError{Err: fmt.Errorf("load balancer %s is %s, not gone, after its deletion", id, lb.Status)}
		}
		if time.Now().After(deadline) {
			return &service.RetryError{Err: fmt.Errorf("load balancer %s is still %s after %s", id, lb.Status, p.opts.JobTimeout)}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the deletion of load balancer %s: %w", id, ctx.Err())
		case <-time.After(p.opts.JobPollInterval):
		}
	}
}
