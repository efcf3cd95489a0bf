package pubsubq

import (
	"context"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// TasksAPI is the Cloud Tasks call the queue makes: *cloudtasks.Client
// implements it, and so does the test double taskstest.Double.
type TasksAPI interface {
	CreateTask(ctx context.Context, req *cloudtaskspb.CreateTaskRequest, opts ...gax.CallOption) (*cloudtaskspb.Task, error)
}

var _ TasksAPI = (*cloudtasks.Client)(nil)

// publishTask returns the task that publishes key's message to the topic at
// at: an HTTP POST to the Pub/Sub REST API's topics.publish, with an OAuth
// token of TaskServiceAccount.
//
// Why the task publishes rather than calling the worker's push endpoint
// with a push envelope of its own: every message then reaches the worker
// the same way — through the topic and its push subscription — so
//
//   - there is one input format that is really one path: the envelope is
//     Pub/Sub's own, with its messageId, publishTime and deliveryAttempt,
//     not an imitation that could drift from it;
//   - a delayed message that keeps failing gets the subscription's retry
//     policy and lands on its dead-letter topic like any other, instead of
//     being retried under the task queue's separate policy and then
//     dropped (Cloud Tasks has no dead-letter queue);
//   - the worker trusts one caller (Pub/Sub's push identity), and the task
//     queue needs rights on the topic only, not on the Cloud Run service;
//   - a pull subscription on the topic (the tests, an operator debugging)
//     sees delayed messages too.
//
// The cost is one extra publish per delayed message and the task queue's
// own retries when a publish fails (5xx, 429), both small. The task's body
// is a few hundred bytes (Cloud Tasks allows 1 MB).
func (q *Queue) publishTask(key api.Key, at time.Time) *cloudtaskspb.Task {
	req := &cloudtaskspb.HttpRequest{
		Url:        q.publishURL,
		HttpMethod: cloudtaskspb.HttpMethod_POST,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       PublishBody(key),
	}
	if q.sa != "" {
		req.AuthorizationHeader = &cloudtaskspb.HttpRequest_OauthToken{OauthToken: &cloudtaskspb.OAuthToken{
			ServiceAccountEmail: q.sa,
			Scope:               PubSubScope,
		}}
	}
	return &cloudtaskspb.Task{
		Name:             q.taskQueue + "/tasks/" + TaskID(q.topic, key, at),
		ScheduleTime:     timestamppb.New(at),
		DispatchDeadline: durationpb.New(taskDispatchDeadline),
		MessageType:      &cloudtaskspb.Task_HttpRequest{HttpRequest: req},
	}
}

// createTask creates the task publishing key at at. A task of the same
// name (the same key and second) already pending or recently run is
// success: that one delivers the wake-up (see TaskID).
func (q *Queue) createTask(ctx context.Context, key api.Key, at time.Time) error {
	if q.tasks == nil {
		return errs.Permanentf("taskQueue: not set: this queue sends immediate messages only")
	}
	_, err := q.tasks.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.taskQueue, Task: q.publishTask(key, at)})
	if status.Code(err) == codes.AlreadyExists {
		q.inc("certfn_cloudtasks_tasks_total", "duplicate", 1)
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return classify("create task in "+q.taskQueue, "taskQueue", err)
	}
	q.inc("certfn_cloudtasks_tasks_total", "create", 1)
	return nil
}
