package cloudrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/certfn/certfn/adapters/gcp/pubsubq/taskstest"
	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/gcp/secretmanager/gsmtest"
	"github.com/certfn/certfn/tests/emulators"
)

// functions are the Cloud Run services, in the order they start.
var functions = []string{"worker", "signer", "scheduler", "api", "http01"}

// deployment is infra/terraform/gcp's plan brought up on this machine: a
// process of the image's binary per Cloud Run service, each behind its
// Cloud Run front, the official Firestore and Pub/Sub emulators, the
// Secret Manager and Cloud Tasks doubles behind the Google front, and
// Cloud Scheduler's job.
type deployment struct {
	t    *testing.T
	ctx  context.Context
	plan *plannedDeployment
	g    *googleFront

	firestoreHost, pubsubHost string
	ps                        *pubsub.Client

	sm      *gsmtest.Double
	secrets *secretmanager.Store
	tasks   *taskstest.Double

	fronts map[string]*cloudRunFront
	procs  map[string]*process

	// calls are the Google API calls the services made, by service
	// account and method (the tokens the metadata servers handed out).
	callsMu sync.Mutex
	calls   map[string]map[string]int
}

// deploy plans infra/terraform/gcp for a project of its own and starts
// every part of it, the services from the binary binary returns.
func deploy(t *testing.T, binary func() string) *deployment {
	t.Helper()
	in := planInputs{Project: fmt.Sprintf("demo-cloudrun-%d", os.Getpid()%1000000), ProjectNumber: "123456789012", Region: "us-central1",
		APIUser: "ops@example.com"}
	start := time.Now()
	plan := planGCP(t, in)
	t.Logf("terraform plan of infra/terraform/gcp: %s", time.Since(start).Round(100*time.Millisecond))
	d := &deployment{t: t, ctx: context.Background(), plan: plan, g: startGoogleFront(t),
		firestoreHost: emulators.Firestore(t), pubsubHost: emulators.PubSub(t),
		sm: gsmtest.New(), fronts: map[string]*cloudRunFront{}, procs: map[string]*process{}, calls: map[string]map[string]int{}}
	sec, err := secretmanager.New(d.sm, secretmanager.Options{Project: plan.Project, Prefix: plan.Services["worker"].Env["CERTFN_SECRET_PREFIX"]})
	if err != nil {
		t.Fatal(err)
	}
	d.secrets = sec
	d.g.Route("secretmanager.googleapis.com", d.sm.Serve(t, grpc.UnaryInterceptor(d.record)), true)
	d.startTasks()
	d.setUpPubSub()
	for _, fn := range functions {
		d.fronts[fn] = d.startFront(fn)
	}
	bin := binary()
	for _, fn := range functions {
		d.procs[fn] = d.startProcess(fn, bin)
	}
	d.pushTo()
	t.Cleanup(d.checkClean)
	return d
}

// record is the doubles' gRPC interceptor: it counts each call by the
// service account of its access token, and refuses a call without one
// (Google's front would answer 401).
func (d *deployment) record(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var who string
	for _, a := range md.Get("authorization") {
		if s, ok := strings.CutPrefix(a, "Bearer "+metadataTokenPrefix); ok {
			who = s
		}
	}
	d.callsMu.Lock()
	if d.calls[who] == nil {
		d.calls[who] = map[string]int{}
	}
	d.calls[who][info.FullMethod]++
	d.callsMu.Unlock()
	if who == "" {
		return nil, fmt.Errorf("the call carries no access token of a service account")
	}
	return h(ctx, req)
}

// callsBy returns the calls of account: method → count.
func (d *deployment) callsBy(account string) map[string]int {
	d.callsMu.Lock()
	defer d.callsMu.Unlock()
	out := map[string]int{}
	for k, v := range d.calls[account] {
		out[k] = v
	}
	return out
}

// startTasks serves the Cloud Tasks double (CreateTask) behind the Google
// front and dispatches its due tasks as the plan's queue does: to
// pubsub.googleapis.com whatever URL a task names (uri_override, ALWAYS),
// which here is the Pub/Sub emulator's REST API, with the queue's retry
// configuration.
func (d *deployment) startTasks() {
	d.t.Helper()
	q := d.plan.Tasks
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		want := "Bearer taskstest-oauth:" + d.plan.Services["worker"].Env["CERTFN_TASKS_SERVICE_ACCOUNT"] + ":"
		if !strings.HasPrefix(auth, want) {
			http.Error(w, "the task's OAuth token is not the tasks service account's: "+auth, http.StatusForbidden)
			return
		}
		u := *r.URL
		u.Scheme, u.Host = "http", d.pubsubHost
		r.URL = &u
		taskstest.Forward(nil).ServeHTTP(w, r)
	})
	d.tasks = taskstest.New(dispatch, time.Now)
	d.tasks.AddQueue(q.Queue)
	d.tasks.SetRetry(taskstest.RetryConfig{MaxAttempts: q.MaxAttempts, MinBackoff: q.MinBackoff, MaxBackoff: q.MaxBackoff, MaxDoublings: q.MaxDoubling})
	if q.Host != "pubsub.googleapis.com" {
		d.t.Fatalf("the delays queue sends tasks to %s, want pubsub.googleapis.com", q.Host)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.record))
	cloudtaskspb.RegisterCloudTasksServer(srv, tasksServer{d: d.tasks})
	go func() { _ = srv.Serve(l) }()
	d.t.Cleanup(srv.Stop)
	d.g.Route("cloudtasks.googleapis.com", l.Addr().String(), true)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				d.tasks.Due(time.Now())
			}
		}
	}()
	d.t.Cleanup(func() { close(stop); <-done })
}

// tasksServer serves the Cloud Tasks double's one RPC over gRPC.
type tasksServer struct {
	cloudtaskspb.UnimplementedCloudTasksServer
	d *taskstest.Double
}

func (s tasksServer) CreateTask(ctx context.Context, r *cloudtaskspb.CreateTaskRequest) (*cloudtaskspb.Task, error) {
	return s.d.CreateTask(ctx, r)
}

// setUpPubSub creates the plan's topics and subscriptions in the Pub/Sub
// emulator (the push subscriptions' endpoints come once the fronts
// listen: pushTo).
func (d *deployment) setUpPubSub() {
	d.t.Helper()
	c, err := pubsub.NewClient(d.ctx, d.plan.Project, option.WithEndpoint(d.pubsubHost), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())), option.WithTelemetryDisabled())
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = c.Close() })
	d.ps = c
	for _, name := range d.plan.Topics {
		if _, err := c.TopicAdminClient.CreateTopic(d.ctx, &pubsubpb.Topic{Name: "projects/" + d.plan.Project + "/topics/" + name}); err != nil {
			d.t.Fatalf("create topic %s: %v", name, err)
		}
	}
	for _, s := range d.plan.DeadLetter {
		if _, err := c.SubscriptionAdminClient.CreateSubscription(d.ctx, &pubsubpb.Subscription{Name: d.subscription(s.Name), Topic: s.Topic}); err != nil {
			d.t.Fatalf("create subscription %s: %v", s.Name, err)
		}
	}
}

func (d *deployment) subscription(name string) string {
	return "projects/" + d.plan.Project + "/subscriptions/" + name
}

// pushTo creates the push subscriptions of the plan, each pushing to its
// service's Cloud Run front with the OIDC token configuration the plan
// gives (service account, audience the service's URL).
func (d *deployment) pushTo() {
	d.t.Helper()
	for fn, p := range d.plan.Push {
		relay := d.startPushSigner(fn, p.OIDCServiceAccount, d.plan.URL(fn))
		_, err := d.ps.SubscriptionAdminClient.CreateSubscription(d.ctx, &pubsubpb.Subscription{
			Name: d.subscription(p.Name), Topic: p.Topic, AckDeadlineSeconds: int32(p.AckDeadline / time.Second),
			PushConfig: &pubsubpb.PushConfig{PushEndpoint: relay + "/push",
				AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{
					ServiceAccountEmail: p.OIDCServiceAccount, Audience: d.plan.URL(fn)}}},
			RetryPolicy:      &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(p.MinBackoff), MaximumBackoff: durationpb.New(p.MaxBackoff)},
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: p.DeadLetterTopic, MaxDeliveryAttempts: int32(p.MaxDeliveryAttempts)},
		})
		if err != nil {
			d.t.Fatalf("create push subscription %s: %v", p.Name, err)
		}
	}
}

// startPushSigner is a TEST DOUBLE of the token Pub/Sub attaches to a
// push (NOT Pub/Sub): the emulator pushes without one, so the push
// endpoint of fn's subscription is this relay, which adds what Pub/Sub
// would — an ID token of the subscription's OIDC service account for its
// audience — and passes the push on to fn's Cloud Run front, answering
// with the front's status (which the emulator's retry policy reads).
func (d *deployment) startPushSigner(fn, account, audience string) string {
	d.t.Helper()
	front := d.fronts[fn].URL
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "the emulator sent a token of its own: the relay would overwrite it", http.StatusInternalServerError)
			d.t.Errorf("the Pub/Sub emulator pushed to %s with an Authorization header", fn)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, front+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.Header.Set("Authorization", "Bearer "+d.g.idToken(account, audience))
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	d.t.Cleanup(srv.Close)
	return srv.URL
}

// cloudRunFront is a TEST DOUBLE of Cloud Run's front end for one
// service (NOT Cloud Run): it admits a request as the service's IAM
// policy does — roles/run.invoker members from the plan; allUsers admits
// anyone, any other member needs a Google ID token (googleFront's) whose
// audience is the service's URL and whose e-mail is a member — and
// forwards it, Authorization header and all, to the service's process,
// within the service's request timeout.
type cloudRunFront struct {
	fn, URL string
	Port    int

	mu       sync.Mutex
	requests map[string]int // "METHOD path status"
	denied   []string
}

func (d *deployment) startFront(fn string) *cloudRunFront {
	d.t.Helper()
	svc := d.plan.Services[fn]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.t.Fatal(err)
	}
	f := &cloudRunFront{fn: fn, URL: "http://" + l.Addr().String(), Port: l.Addr().(*net.TCPAddr).Port, requests: map[string]int{}}
	public := slices.Contains(svc.Invokers, "allUsers")
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !public {
			if why := d.admit(fn, r); why != "" {
				f.mu.Lock()
				f.denied = append(f.denied, r.Method+" "+r.URL.Path+": "+why)
				f.mu.Unlock()
				http.Error(w, why, http.StatusForbidden)
				return
			}
		}
		p := d.procs[fn]
		if p == nil {
			http.Error(w, "the service is not running", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), svc.Timeout)
		defer cancel()
		rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		p.proxy.ServeHTTP(rec, r.WithContext(ctx))
		f.mu.Lock()
		f.requests[fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, rec.code)]++
		f.mu.Unlock()
	})}
	go func() { _ = srv.Serve(l) }()
	d.t.Cleanup(func() { _ = srv.Close() })
	return f
}

// admit returns why r may not invoke fn ("" when it may).
func (d *deployment) admit(fn string, r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "no ID token"
	}
	email, aud, err := d.g.verify(tok)
	if err != nil {
		return "ID token: " + err.Error()
	}
	if aud != d.plan.URL(fn) {
		return fmt.Sprintf("ID token audience %s, want %s", aud, d.plan.URL(fn))
	}
	for _, m := range d.plan.Services[fn].Invokers {
		if m == "user:"+email || m == "serviceAccount:"+email {
			return ""
		}
	}
	return email + " is not a roles/run.invoker member of " + d.plan.Services[fn].Name
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }

// requests returns the front's requests by "METHOD path status".
func (f *cloudRunFront) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.requests {
		out[k] = v
	}
	return out
}

func (f *cloudRunFront) deniedRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.denied)
}

// takeDenied returns the refused requests and forgets them (a test that
// is refused on purpose).
func (f *cloudRunFront) takeDenied() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.denied
	f.denied = nil
	return out
}

// process is one service's container: the image's binary with the
// service's planned environment.
type process struct {
	fn    string
	port  int
	cmd   *exec.Cmd
	log   string
	proxy *httputil.ReverseProxy
	exit  chan struct{}
}

// startProcess starts fn's binary in its own process group with the
// environment the plan gives the service, plus what Cloud Run adds (PORT,
// K_SERVICE, K_REVISION, K_CONFIGURATION) and what points it at this
// machine: the emulators' hosts (FIRESTORE_EMULATOR_HOST,
// PUBSUB_EMULATOR_HOST), the Google front (HTTPS_PROXY, SSL_CERT_FILE)
// and its metadata server (GCE_METADATA_HOST). Nothing else of the test's
// environment is passed on (no HOME: no gcloud credentials file).
func (d *deployment) startProcess(fn, bin string) *process {
	d.t.Helper()
	svc := d.plan.Services[fn]
	port, err := emulators.FreePort()
	if err != nil {
		d.t.Fatal(err)
	}
	env := []string{}
	for k, v := range svc.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	env = append(env, "PORT="+strconv.Itoa(port), "K_SERVICE="+svc.Name, "K_REVISION="+svc.Name+"-00001-tst", "K_CONFIGURATION="+svc.Name,
		"FIRESTORE_EMULATOR_HOST="+d.firestoreHost, "PUBSUB_EMULATOR_HOST="+d.pubsubHost,
		"HTTPS_PROXY="+d.g.ProxyURL, "SSL_CERT_FILE="+d.g.CAFile, "GCE_METADATA_HOST="+d.g.metadataServer(d.plan.Project, svc.ServiceAccount))
	logPath := filepath.Join(d.t.TempDir(), fn+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	lf.Close()
	p := &process{fn: fn, port: port, cmd: cmd, log: logPath, exit: make(chan struct{}),
		proxy: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})}
	go func() { _ = cmd.Wait(); close(p.exit) }()
	d.t.Cleanup(p.stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return p
			}
		}
		select {
		case <-p.exit:
			d.t.Fatalf("the %s service exited before it served: %v\n%s", fn, cmd.ProcessState, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the %s service did not answer /healthz within 60 s\n%s", fn, p.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the process group: SIGTERM as Cloud Run sends it, SIGKILL
// after Cloud Run's 10 s.
func (p *process) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exit:
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exit
}

// output returns the process's log.
func (p *process) output() []byte {
	b, _ := os.ReadFile(p.log)
	return b
}

// tail is the last lines of the log, for messages.
func (p *process) tail() string {
	lines := strings.Split(strings.TrimRight(string(p.output()), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return p.fn + " log:\n" + strings.Join(lines, "\n")
}

// runJob runs the Cloud Scheduler job once, as Cloud Scheduler calls its
// HTTP target: the plan's method, headers and body, with an OIDC token of
// the job's service account for the scheduler's URL, within the attempt
// deadline. It returns the status and body.
func (d *deployment) runJob() (int, []byte) {
	d.t.Helper()
	j := d.plan.Scheduler
	ctx, cancel := context.WithTimeout(d.ctx, j.Deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, j.Method, d.fronts["scheduler"].URL+"/sweep", bytes.NewReader(j.Body))
	if err != nil {
		d.t.Fatal(err)
	}
	for k, v := range j.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "Google-Cloud-Scheduler")
	req.Header.Set("Authorization", "Bearer "+d.g.idToken(j.OIDCServiceAccount, d.plan.URL("scheduler")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("Cloud Scheduler's call: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// checkClean runs when the test ends: no service died, no log line holds
// key material, no front refused a caller the plan allows, nothing reached
// a Google host without a route, and the dead-letter subscriptions are
// empty.
func (d *deployment) checkClean() {
	t := d.t
	for _, fn := range functions {
		p := d.procs[fn]
		if p == nil {
			continue
		}
		select {
		case <-p.exit:
			t.Errorf("the %s service exited during the test: %v\n%s", fn, p.cmd.ProcessState, p.tail())
		default:
		}
		if bytes.Contains(p.output(), []byte("PRIVATE KEY")) {
			t.Errorf("the %s service logged private key material", fn)
		}
		if t.Failed() {
			t.Log(p.tail())
		}
		if den := d.fronts[fn].deniedRequests(); len(den) > 0 {
			t.Errorf("the %s front refused: %q", fn, den)
		}
	}
	if r := d.g.Refused(); len(r) > 0 {
		t.Errorf("the services asked the Google front for hosts it does not serve: %q", r)
	}
	for fn, s := range d.plan.DeadLetter {
		ctx, cancel := context.WithTimeout(d.ctx, 2*time.Second)
		var dead []string
		var mu sync.Mutex
		_ = d.ps.Subscriber(d.subscription(s.Name)).Receive(ctx, func(_ context.Context, m *pubsub.Message) {
			mu.Lock()
			dead = append(dead, string(m.Data))
			mu.Unlock()
			m.Ack()
		})
		cancel()
		if len(dead) > 0 {
			t.Errorf("the %s dead-letter subscription holds %q", fn, dead)
			d.logLinesOf(dead)
		}
	}
}

// logLinesOf logs the services' log lines that name one of keys.
func (d *deployment) logLinesOf(keys []string) {
	for _, fn := range functions {
		n := 0
		for _, line := range strings.Split(string(d.procs[fn].output()), "\n") {
			if n < 20 && slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(line, k) }) {
				d.t.Logf("%s: %s", fn, line)
				n++
			}
		}
	}
}
