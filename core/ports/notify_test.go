package ports_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

var key = api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}

// IDs are stable per event: a revision, a failure, a UTC day.
func TestNotificationID(t *testing.T) {
	at := time.Date(2030, 1, 2, 23, 30, 0, 0, time.FixedZone("X", -3600)) // 2030-01-03 00:30 UTC
	for _, tc := range []struct {
		n    ports.Notification
		want string
	}{
		{ports.Notification{Type: ports.NotificationIssued, Certificate: key, Revision: 1}, "Certificate/default/web/revision/1"},
		{ports.Notification{Type: ports.NotificationRenewed, Certificate: key, Revision: 4}, "Certificate/default/web/revision/4"},
		{ports.Notification{Type: ports.NotificationFailed, Certificate: key, FailureTime: at}, "Certificate/default/web/failure/2030-01-03T00:30:00Z"},
		{ports.Notification{Type: ports.NotificationExpiring, Certificate: key, Time: at}, "Certificate/default/web/expiring/2030-01-03"},
	} {
		if got := tc.n.ID(); got != tc.want {
			t.Errorf("%s: ID = %q, want %q", tc.n.Type, got, tc.want)
		}
	}
}

func TestNotificationValidate(t *testing.T) {
	now := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	ok := []ports.Notification{
		{Type: ports.NotificationIssued, Certificate: key, Time: now, Revision: 1},
		{Type: ports.NotificationFailed, Certificate: key, Time: now, FailureTime: now},
		{Type: ports.NotificationExpiring, Certificate: key, Time: now, NotAfter: now.Add(time.Hour)},
	}
	for _, n := range ok {
		if err := n.Validate(); err != nil {
			t.Errorf("Validate(%s) = %v", n, err)
		}
	}
	bad := ports.Notification{Type: "Gone", Certificate: api.Key{Kind: api.KindIssuer, Name: "x"}, Revision: -1}
	err := bad.Validate()
	for _, want := range []string{`type "Gone"`, `kind "Issuer"`, "time: must be set", "must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
}

// String and GoString say which event it is and nothing more.
func TestNotificationString(t *testing.T) {
	n := ports.Notification{Type: ports.NotificationRenewed, Certificate: key, Revision: 2, Serial: "0a:0b", Message: "long message"}
	want := "Renewed Certificate/default/web (revision 2, serial 0a:0b)"
	if n.String() != want || fmt.Sprintf("%v", n) != want || fmt.Sprintf("%#v", n) != want {
		t.Errorf("String = %q, %%v = %q, %%#v = %q; want %q", n.String(), fmt.Sprintf("%v", n), fmt.Sprintf("%#v", n), want)
	}
}
