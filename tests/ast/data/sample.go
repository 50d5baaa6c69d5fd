// Package queue is a small bounded work queue, written for infill's tests.
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is returned by Push after Close.
var ErrClosed = errors.New("queue: closed")

// Job is one unit of work.
type Job struct {
	ID       int
	Payload  string
	Attempts int
	Deadline time.Time
}

// Queue holds jobs for a fixed pool of workers.
type Queue struct {
	mu      sync.Mutex
	jobs    chan Job
	closed  bool
	done    sync.WaitGroup
	results map[int]error
}

// New makes a queue that holds at most size pending jobs.
func New(size int) *Queue {
	if size <= 0 {
		size = 1
	}
	return &Queue{jobs: make(chan Job, size), results: make(map[int]error)}
}

// Push adds a job, or fails when the queue is closed or ctx ends first.
func (q *Queue) Push(ctx context.Context, j Job) error {
	q.mu.Lock()
	closed := q.closed
	q.mu.Unlock()
	if closed {
		return ErrClosed
	}
	select {
	case q.jobs <- j:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("queue: push %d: %w", j.ID, ctx.Err())
	}
}

// Run starts n workers that call handle for each job.
func (q *Queue) Run(n int, handle func(Job) error) {
	for i := 0; i < n; i++ {
		q.done.Add(1)
		go func(worker int) {
			defer q.done.Done()
			for j := range q.jobs {
				err := handle(j)
				q.mu.Lock()
				q.results[j.ID] = err
				q.mu.Unlock()
			}
		}(i)
	}
}

// Close stops accepting jobs and waits for the workers.
func (q *Queue) Close() map[int]error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.jobs)
	}
	q.mu.Unlock()
	q.done.Wait()
	return q.results
}

// Retry calls f until it succeeds or attempts run out, doubling the wait.
func Retry(attempts int, wait time.Duration, f func() error) error {
	var err error
	for i := 0; i < attempts; i++ {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(wait)
		wait *= 2
	}
	return fmt.Errorf("after %d attempts: %w", attempts, err)
}

// Failed lists the IDs whose handler returned an error, in order.
func Failed(results map[int]error) []int {
	ids := make([]int, 0, len(results))
	for id, err := range results {
		if err != nil {
			ids = append(ids, id)
		}
	}
	for i := 1; i < len(ids); i++ {
		for k := i; k > 0 && ids[k-1] > ids[k]; k-- {
			ids[k-1], ids[k] = ids[k], ids[k-1]
		}
	}
	return ids
}
