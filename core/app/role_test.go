package app_test

import (
	"slices"
	"testing"

	"github.com/certfn/certfn/core/app"
)

// The secret classes of each role's access, as the deployments' IAM
// separates them: the worker never reads a class of CA keys it did not
// issue, the signer writes nothing.
func TestSecretAccessClasses(t *testing.T) {
	for _, tc := range []struct {
		role        app.Role
		issuedCA    bool
		read, write []app.SecretClass
	}{
		{app.Worker, false, []app.SecretClass{app.ClassTLS, app.ClassPrivateKey, app.ClassSolverCredentials}, []app.SecretClass{app.ClassTLS, app.ClassPrivateKey}},
		{app.Worker, true, []app.SecretClass{app.ClassTLS, app.ClassPrivateKey, app.ClassSolverCredentials, app.ClassIssuedCA},
			[]app.SecretClass{app.ClassTLS, app.ClassPrivateKey, app.ClassIssuedCA}},
		{app.Signer, false, []app.SecretClass{app.ClassCA, app.ClassIssuedCA, app.ClassPrivateKey}, nil},
		{app.Signer, true, []app.SecretClass{app.ClassCA, app.ClassIssuedCA, app.ClassPrivateKey}, nil},
		{app.Local, false, []app.SecretClass{app.ClassTLS, app.ClassCA, app.ClassIssuedCA, app.ClassPrivateKey, app.ClassSolverCredentials},
			[]app.SecretClass{app.ClassTLS, app.ClassPrivateKey}},
		{app.API, true, nil, nil},
		{app.Scheduler, true, nil, nil},
		{app.HTTP01, true, nil, nil},
	} {
		read, write := tc.role.SecretAccess().Classes(tc.issuedCA)
		if !slices.Equal(read, tc.read) || !slices.Equal(write, tc.write) {
			t.Errorf("%s (issued CA %v): read %v write %v, want %v and %v", tc.role.Name, tc.issuedCA, read, write, tc.read, tc.write)
		}
	}
}

// What each function does with the state store and which events it takes.
func TestFunctionsStoreAccessAndEvents(t *testing.T) {
	for _, tc := range []struct {
		role                   app.Role
		store                  app.StoreAccess
		consumes               app.QueueName
		delays, sweeps, serves bool
	}{
		{app.Worker, app.StoreAll, app.WorkQueue, true, false, false},
		{app.Signer, app.StoreSigning, app.SignerQueue, true, false, false},
		{app.Scheduler, app.StoreDue, "", false, true, false},
		{app.API, app.StoreAll, "", false, false, true},
		{app.HTTP01, app.StoreChallenges, "", false, false, false},
		{app.Local, app.StoreAll, app.WorkQueue, true, true, true},
	} {
		r := tc.role
		if r.StoreAccess() != tc.store || r.Consumes != tc.consumes || r.DelaysWork() != tc.delays || r.Sweeps != tc.sweeps || r.ServesAPI != tc.serves {
			t.Errorf("%s: store %s consumes %q delays %v sweeps %v serves the API %v", r.Name, r.StoreAccess(), r.Consumes, r.DelaysWork(), r.Sweeps, r.ServesAPI)
		}
	}
}
