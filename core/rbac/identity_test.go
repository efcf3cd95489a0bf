package rbac

import (
	"reflect"
	"strings"
	"testing"
)

func TestFromAWSARN(t *testing.T) {
	const acct = "aws:account:123456789012"
	tests := []struct {
		arn       string
		wantUser  string
		wantGroup []string
		wantExtra map[string][]string
		wantErr   string
	}{
		{"arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/alice", []string{acct, GroupAuthenticated}, nil, ""},
		{"arn:aws:iam::123456789012:user/ops/alice", "arn:aws:iam::123456789012:user/ops/alice", []string{acct, GroupAuthenticated}, nil, ""},
		{"arn:aws:iam::123456789012:role/deployer", "arn:aws:iam::123456789012:role/deployer", []string{acct, GroupAuthenticated}, nil, ""},
		{"arn:aws:iam::123456789012:root", "arn:aws:iam::123456789012:root", []string{acct, GroupAuthenticated}, nil, ""},
		{"arn:aws:sts::123456789012:assumed-role/certfn-worker/1700000000", "arn:aws:iam::123456789012:role/certfn-worker",
			[]string{acct, GroupAuthenticated},
			map[string][]string{ExtraAWSPrincipalARN: {"arn:aws:sts::123456789012:assumed-role/certfn-worker/1700000000"}, ExtraAWSSessionName: {"1700000000"}}, ""},
		{"arn:aws-cn:sts::123456789012:assumed-role/r/s", "arn:aws-cn:iam::123456789012:role/r", []string{acct, GroupAuthenticated},
			map[string][]string{ExtraAWSPrincipalARN: {"arn:aws-cn:sts::123456789012:assumed-role/r/s"}, ExtraAWSSessionName: {"s"}}, ""},
		{"arn:aws:sts::123456789012:federated-user/bob", "arn:aws:sts::123456789012:federated-user/bob", []string{acct, GroupAuthenticated}, nil, ""},
		{"arn:aws:sts::123456789012:assumed-role/onlyrole", "", nil, nil, "want assumed-role/<role>/<session>"},
		{"arn:aws:iam::12345:user/alice", "", nil, nil, "12-digit account id"},
		{"arn:aws:s3:::bucket", "", nil, nil, "12-digit"},
		{"arn:aws:iam::123456789012:group/admins", "", nil, nil, "want an IAM user, role"},
		{"arn:aws:iam::123456789012:user/", "", nil, nil, "want an IAM user, role"},
		{"alice", "", nil, nil, "want arn:<partition>"},
	}
	for _, tc := range tests {
		t.Run(tc.arn, func(t *testing.T) {
			id, err := FromAWSARN(tc.arn)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Username != tc.wantUser || !reflect.DeepEqual(id.Groups, tc.wantGroup) || !reflect.DeepEqual(id.Extra, tc.wantExtra) {
				t.Errorf("got %+v, want user %q groups %v extra %v", id, tc.wantUser, tc.wantGroup, tc.wantExtra)
			}
		})
	}
}

func TestFromGoogleEmail(t *testing.T) {
	tests := []struct {
		email     string
		wantUser  string
		wantGroup []string
		wantErr   bool
	}{
		{"certfn-worker@my-proj.iam.gserviceaccount.com", "certfn-worker@my-proj.iam.gserviceaccount.com", []string{"gcp:project:my-proj", GroupAuthenticated}, false},
		{"My-Proj@appspot.gserviceaccount.com", "my-proj@appspot.gserviceaccount.com", []string{"gcp:project:my-proj", GroupAuthenticated}, false},
		{"123-compute@developer.gserviceaccount.com", "123-compute@developer.gserviceaccount.com", []string{GroupAuthenticated}, false},
		{"Alice@Example.com", "alice@example.com", []string{GroupAuthenticated}, false},
		{"not-an-email", "", nil, true},
		{"a@b@c", "", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.email, func(t *testing.T) {
			id, err := FromGoogleEmail(tc.email)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error for %q", tc.email)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Username != tc.wantUser || !reflect.DeepEqual(id.Groups, tc.wantGroup) {
				t.Errorf("got %+v, want %q %v", id, tc.wantUser, tc.wantGroup)
			}
		})
	}
}

func TestLocalAndServiceAccountIdentities(t *testing.T) {
	id, err := Local("alice", "ops")
	if err != nil || id.Username != "local:alice" || !reflect.DeepEqual(id.Groups, []string{"ops", GroupLocal, GroupAuthenticated}) {
		t.Errorf("Local = %+v, %v", id, err)
	}
	if again, _ := Local("local:alice", GroupLocal); again.Username != "local:alice" || !reflect.DeepEqual(again.Groups, []string{GroupLocal, GroupAuthenticated}) {
		t.Errorf("Local(local:alice) = %+v", again)
	}
	if _, err := Local("  "); err == nil {
		t.Errorf("Local with empty name: want error")
	}
	c := Controller()
	want := []string{GroupAuthenticated, GroupServiceAccounts, "system:serviceaccounts:cert-manager"}
	if c.Username != "system:serviceaccount:cert-manager:cert-manager" || !reflect.DeepEqual(c.Groups, want) {
		t.Errorf("Controller = %+v", c)
	}
	// WithImplicitGroups does not duplicate groups already listed.
	again := c.WithImplicitGroups()
	if !reflect.DeepEqual(again.Groups, want) {
		t.Errorf("WithImplicitGroups duplicated: %v", again.Groups)
	}
	for _, u := range []string{"system:serviceaccount:a", "system:serviceaccount::b", "system:serviceaccount:a:b:c", "alice"} {
		if _, _, ok := SplitServiceAccountUsername(u); ok {
			t.Errorf("SplitServiceAccountUsername(%q) accepted", u)
		}
	}
	if (Identity{}).ImplicitGroups() != nil {
		t.Errorf("anonymous identity has implicit groups")
	}
}
