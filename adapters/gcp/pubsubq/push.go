package pubsubq

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// DefaultMaxPushBody is the body limit DecodePush applies when given none:
// a key is at most 512 bytes, so a real push request is well under 2 KiB.
const DefaultMaxPushBody = 16 << 10

// PushRequest is the JSON body of a Pub/Sub push request (a push
// subscription with the default wrapper; not the "no wrapper" payload
// mode, which certfn's subscriptions do not use).
type PushRequest struct {
	Message *PushMessage `json:"message"`
	// Subscription is the subscription's full name.
	Subscription string `json:"subscription"`
	// DeliveryAttempt counts deliveries from 1; Pub/Sub sets it only on
	// subscriptions with a dead-letter policy (the emulator never does).
	DeliveryAttempt int `json:"deliveryAttempt"`
}

// PushMessage is the message inside a PushRequest.
type PushMessage struct {
	// Data is base64 (standard alphabet, padded); empty data is absent.
	Data        string            `json:"data"`
	Attributes  map[string]string `json:"attributes"`
	MessageID   string            `json:"messageId"`
	PublishTime string            `json:"publishTime"`
}

// Push is a decoded push request.
type Push struct {
	// Key is the reconcile key the message carries.
	Key api.Key
	// Attempt is the delivery count, 1-based: the request's
	// deliveryAttempt, or 1 when Pub/Sub does not report it.
	Attempt int
	// MessageID, PublishTime and Subscription are as Pub/Sub sent them
	// (for logs).
	MessageID    string
	PublishTime  string
	Subscription string
}

// DecodePush reads a Pub/Sub push request (POST, the JSON PushRequest) and
// returns the reconcile key it carries and the delivery attempt (1-based;
// 1 when Pub/Sub does not report it). maxBody bounds the body
// (DefaultMaxPushBody when <= 0).
//
// The contract for the push handler (Cloud Run's worker):
//
//   - Authentication is not DecodePush's job: the service accepts only
//     Pub/Sub's push identity (Cloud Run IAM, or the push OIDC token
//     checked before DecodePush is called).
//   - Answer 2xx only when the key is done (the step ran and wrote, or had
//     nothing to do) or failed for good (recorded in its status). Any
//     other answer, or none within the subscription's ack deadline, makes
//     Pub/Sub deliver the message again after the retry policy's backoff,
//     and after the dead-letter policy's maximum attempts moves it to the
//     dead-letter topic.
//   - An error of DecodePush is permanent (errs.IsPermanent): the request
//     can never decode, however often it comes back. Answer 2xx and log
//     it, as the AWS worker drops an SQS body that is not a key; a 4xx
//     would only have Pub/Sub push it again until it lands on the
//     dead-letter topic, as if it were work that failed. (An oversized
//     body's error is also an *http.MaxBytesError.) The one exception is
//     a body that could not be read (the connection broke): that error is
//     not permanent, and nobody is left to answer.
//   - Messages are at least once: the same key may arrive twice, at once or
//     much later; the handler reads fresh state and does one step.
//
// Error messages name the part of the request at fault: method, body
// (too large, malformed JSON), message (missing), message.data (missing,
// not base64, not a key), message.attributes.certfn-format (unknown
// format), deliveryAttempt (negative).
func DecodePush(r *http.Request, maxBody int64) (api.Key, int, error) {
	p, err := ReadPush(r, maxBody)
	if err != nil {
		return api.Key{}, 0, err
	}
	return p.Key, p.Attempt, nil
}

// ReadPush is DecodePush returning the whole decoded request.
func ReadPush(r *http.Request, maxBody int64) (Push, error) {
	if r.Method != http.MethodPost {
		return Push{}, errs.Permanentf("push: method %s: want POST", r.Method)
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxPushBody
	}
	if r.Body == nil {
		return Push{}, errs.Permanentf("push: body: missing")
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return Push{}, errs.Permanent(fmt.Errorf("push: body: larger than %d bytes: %w", maxBody, err))
		}
		return Push{}, fmt.Errorf("push: body: read: %w", err)
	}
	return ParsePush(body)
}

// ParsePush decodes the body of a push request. Its errors are permanent
// and name the field at fault (see DecodePush).
func ParsePush(body []byte) (Push, error) {
	var req PushRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return Push{}, errs.Permanentf("push: body: malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Push{}, errs.Permanentf("push: body: malformed JSON: data after the object")
	}
	if req.Message == nil {
		return Push{}, errs.Permanentf("push: message: missing")
	}
	if req.DeliveryAttempt < 0 {
		return Push{}, errs.Permanentf("push: deliveryAttempt: must be >= 0, got %d", req.DeliveryAttempt)
	}
	if req.Message.Data == "" {
		return Push{}, errs.Permanentf("push: message.data: missing")
	}
	data, err := base64.StdEncoding.DecodeString(req.Message.Data)
	if err != nil {
		return Push{}, errs.Permanentf("push: message.data: not base64: %v", err)
	}
	key, err := DecodeData(data, req.Message.Attributes)
	if err != nil {
		return Push{}, fmt.Errorf("push: %w", err)
	}
	return Push{
		Key:          key,
		Attempt:      max(req.DeliveryAttempt, 1),
		MessageID:    req.Message.MessageID,
		PublishTime:  req.Message.PublishTime,
		Subscription: req.Subscription,
	}, nil
}

// DecodeData reads a message's data and attributes (as a push request or a
// pull gives them) into a reconcile key. Errors are permanent: an unknown
// format version, or data that is not the key of a known kind.
func DecodeData(data []byte, attrs map[string]string) (api.Key, error) {
	if v, ok := attrs[FormatAttribute]; ok && v != FormatVersion {
		return api.Key{}, errs.Permanentf("message.attributes.%s: format %q is not supported (want %q)", FormatAttribute, v, FormatVersion)
	}
	k, err := api.ParseKey(strings.TrimSpace(string(data)))
	if err != nil {
		return api.Key{}, errs.Permanentf("message.data: not a reconcile key: %w", err)
	}
	return k, nil
}
