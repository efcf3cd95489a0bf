#!/usr/bin/env bash
# make localstack-e2e: certfn on LocalStack, end to end.
#
#   1. start LocalStack (a pinned image), Pebble and challtestsrv
#      (localstack/docker-compose.yml) and wait until they are healthy;
#   2. build the Lambda zips for this machine's architecture
#      (make lambda GOARCH=...: dist/lambda/<fn>.zip is that architecture,
#      which is the lambda_architecture Terraform declares);
#   3. terraform apply infra/terraform/aws/examples/basic with every AWS
#      endpoint at LocalStack (localstack/example.tfvars.json, which sets
#      manage_certificates = false), state kept in localstack/.state;
#   4. check that the api refuses a request without an identity (401): what
#      LocalStack's Function URL delivers, since it verifies no signature;
#   5. send the example's manifests (terraform output manifests) to the api
#      by invoking the function directly (Lambda Invoke, SigV4-signed) with
#      a Function URL event naming the caller STS reports for the signing
#      keys (localstack/README.md says why this and nothing weaker);
#   6. wait until every Certificate of the example is Ready (the self-signed
#      one, and the ACME one validated by Pebble over HTTP-01 through the
#      http01 Function URL), invoking the scheduler function on every round
#      (LocalStack's EventBridge Scheduler stores schedules and never runs
#      them), then check their secrets and tags in Secrets Manager;
#   7. destroy everything (unless CERTFN_E2E_KEEP=1).
#
# Needs: a Docker engine with Compose v2, terraform >= 1.5, curl >= 7.76
# (--aws-sigv4, --fail-with-body), jq >= 1.6, go, make, cmp. Nothing here runs on
# a machine without a Docker engine: the script stops at step 1 with a
# clear message.
#
# LOCALSTACK_IMAGE overrides the pinned image. localstack/localstack:latest
# (and an untagged name, which means latest) needs LOCALSTACK_AUTH_TOKEN
# since 2026-03-23, when LocalStack moved to one image that requires an
# account; the script refuses it without a token.
#
# The api routes used (override if functions/aws/api serves others):
#   CERTFN_API_APPLY_PATH  POST, body: multi-document YAML   (default /v1/apply)
#   CERTFN_API_GET_PATH    GET one resource as JSON, printf format with
#                          namespace, kind plural, name
#                          (default /v1/namespaces/%s/%s/%s, e.g.
#                          /v1/namespaces/default/certificates/web)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '== %s\n' "$*"; }
die() { printf 'localstack-e2e: %s\n' "$*" >&2; exit 1; }

# docker-compose.yml pins the image; an override to latest needs a token.
case "${LOCALSTACK_IMAGE:-}" in
  '' | *@sha256:*) ;;
  *:latest | localstack/localstack | localstack/localstack-pro)
    if [ -z "${LOCALSTACK_AUTH_TOKEN:-}" ]; then
      die "LOCALSTACK_IMAGE=$LOCALSTACK_IMAGE: LocalStack's latest image needs LOCALSTACK_AUTH_TOKEN since 2026-03-23; set the token, or unset LOCALSTACK_IMAGE to use the pinned image of localstack/docker-compose.yml"
    fi
    ;;
esac

for tool in docker terraform curl jq go make cmp; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is required"
done

COMPOSE=(docker compose -f "$ROOT/localstack/docker-compose.yml")
EXAMPLE=infra/terraform/aws/examples/basic
STATE_DIR=${CERTFN_E2E_STATE:-$ROOT/localstack/.state}
TIMEOUT=${CERTFN_E2E_TIMEOUT:-600}
KEEP=${CERTFN_E2E_KEEP:-0}
API_APPLY_PATH=${CERTFN_API_APPLY_PATH:-/v1/apply}
API_GET_PATH=${CERTFN_API_GET_PATH:-/v1/namespaces/%s/%s/%s}
VARS=localstack/example.tfvars.json
REGION=$(jq -r '.region' "$VARS")
ENDPOINT=$(jq -r '.aws_endpoint_url' "$VARS")
ENDPOINT=${ENDPOINT%/}
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=$REGION
export TF_DATA_DIR=$STATE_DIR/terraform-data TF_IN_AUTOMATION=1

docker info >/dev/null 2>&1 || die "no Docker engine reachable (docker info failed): LocalStack, Pebble and the Lambda containers need one"
"${COMPOSE[@]}" version >/dev/null 2>&1 || die "Docker Compose v2 (docker compose) is required"

case "$(uname -m)" in
  x86_64 | amd64) ARCH=x86_64 GOARCH=amd64 ;;
  aarch64 | arm64) ARCH=arm64 GOARCH=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

tf() { terraform -chdir="$EXAMPLE" "$@"; }
tfvars=(
  -var-file="$ROOT/$VARS"
  -var "lambda_architecture=$ARCH"
  -var "lambda_zip_dir=$ROOT/dist/lambda"
)

PREFIX=$(jq -r '.name_prefix' "$VARS")
ZONES='[]'
WORK=$STATE_DIR/work

# aws_curl SERVICE CURL_ARGS...: a SigV4-signed request to LocalStack.
aws_curl() {
  local service=$1
  shift
  curl -sS --fail-with-body --aws-sigv4 "aws:amz:$REGION:$service" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@"
}

# invoke FUNCTION EVENT_FILE OUT_FILE: the Lambda Invoke API
# (RequestResponse), as `aws lambda invoke` calls it; the function's answer
# goes to OUT_FILE. A function error (X-Amz-Function-Error) fails.
invoke() {
  local fn=$1 event=$2 out=$3
  aws_curl lambda -X POST -H 'Content-Type: application/json' --data-binary @"$event" \
    -D "$out.headers" -o "$out" "$ENDPOINT/2015-03-31/functions/$fn/invocations" ||
    die "invoke $fn failed: $(cat "$out" 2>/dev/null)"
  if grep -qi '^x-amz-function-error:' "$out.headers"; then
    die "invoke $fn: function error: $(cat "$out")"
  fi
}

# api METHOD PATH [CONTENT_TYPE BODY_FILE]: one request to the api function
# as a Function URL event (localstack/api-event.jq) whose
# requestContext.authorizer.iam is the caller STS named for the keys that
# sign the Invoke. Prints the answer's body; fails on a status >= 400.
api() {
  local method=$1 path=$2 ct=${3:-} body=${4:-/dev/null} n=$((++API_CALLS))
  jq -n -f localstack/api-event.jq \
    --arg method "$method" --arg target "$path" --arg contentType "$ct" --rawfile body "$body" \
    --arg host "$API_HOST" --arg accessKey "$AWS_ACCESS_KEY_ID" --arg accountId "$CALLER_ACCOUNT" \
    --arg userArn "$CALLER_ARN" --arg userId "$CALLER_ID" >"$WORK/api-$n.json"
  invoke "$PREFIX-api" "$WORK/api-$n.json" "$WORK/api-$n.out"
  local status
  status=$(jq -r '.statusCode' "$WORK/api-$n.out")
  jq -r 'if .isBase64Encoded then .body | @base64d else .body end' "$WORK/api-$n.out"
  [ "$status" -lt 400 ] || die "api $method $path: HTTP $status"
}
API_CALLS=0

# sweep runs the scheduler function once, with the input of the module's
# schedule (infra/terraform/aws/scheduler.tf): LocalStack's Scheduler does
# not. Prints {"due":n,"sent":m}.
sweep() {
  printf '{"source":"certfn.schedule"}' >"$WORK/sweep.json"
  invoke "$PREFIX-scheduler" "$WORK/sweep.json" "$WORK/sweep.out"
  cat "$WORK/sweep.out"
}

# dlq_depth prints the number of messages in each dead-letter queue.
dlq_depth() {
  for q in "$PREFIX-worker-dlq" "$PREFIX-signer-dlq"; do
    url=$("${COMPOSE[@]}" exec -T localstack awslocal sqs get-queue-url --queue-name "$q" \
      --query QueueUrl --output text 2>/dev/null | tr -d '\r') || continue
    n=$("${COMPOSE[@]}" exec -T localstack awslocal sqs get-queue-attributes --queue-url "$url" \
      --attribute-names ApproximateNumberOfMessages --query Attributes.ApproximateNumberOfMessages \
      --output text 2>/dev/null | tr -d '\r') || continue
    log "$q: $n message(s)"
  done
}

cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then
    log "failed; the last lines of the LocalStack log:"
    "${COMPOSE[@]}" logs --tail 80 localstack || true
  fi
  if [ "$KEEP" = 1 ]; then
    log "CERTFN_E2E_KEEP=1: leaving LocalStack running (state in $STATE_DIR)"
    return
  fi
  log "destroy"
  tf destroy -auto-approve -input=false -state="$STATE_DIR/terraform.tfstate" "${tfvars[@]}" \
    -var "route53_zone_ids=$ZONES" >/dev/null 2>&1 || true
  "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "start LocalStack, Pebble, challtestsrv"
mkdir -p "$STATE_DIR" "$WORK"
"${COMPOSE[@]}" up -d --wait

log "build the Lambda zips for $ARCH (make lambda GOARCH=$GOARCH)"
make lambda GOARCH="$GOARCH"
for fn in worker signer scheduler api http01; do
  [ -f "dist/lambda/$fn.zip" ] || die "make lambda did not produce dist/lambda/$fn.zip"
  cmp -s "dist/lambda/$fn.zip" "dist/lambda/$fn-$GOARCH.zip" ||
    die "dist/lambda/$fn.zip is not the $GOARCH build: Lambda would fail with exec format error"
done

ZONE=$("${COMPOSE[@]}" exec -T localstack awslocal route53 list-hosted-zones-by-name \
  --dns-name certfn.test. --query 'HostedZones[0].Id' --output text | tr -d '\r')
case "$ZONE" in /hostedzone/*) ;; *) die "the init script's hosted zone certfn.test is missing (got '$ZONE')" ;; esac

ZONES="[\"$ZONE\"]"

# The example requires certfn's Terraform provider (with
# manage_certificates = false, as example.tfvars.json sets, it declares no
# certfn object, and this script sends the manifests itself below).
# `make provider` installs it into ~/.terraform.d/plugins, a directory
# terraform init searches by itself.
log "install certfn's Terraform provider (make provider)"
make provider >/dev/null

log "terraform apply $EXAMPLE against LocalStack (zone $ZONE)"
tf init -input=false >/dev/null
tf apply -auto-approve -input=false -state="$STATE_DIR/terraform.tfstate" "${tfvars[@]}" \
  -var "route53_zone_ids=$ZONES"

out() { tf output -state="$STATE_DIR/terraform.tfstate" "$@"; }
API_URL=$(out -raw api_url)
API_HOST=${API_URL#*://}
API_HOST=${API_HOST%%/*}
MANIFESTS=$STATE_DIR/manifests.yaml
out -raw manifests >"$MANIFESTS"
mapfile -t CERTS < <(out -json certificates | jq -r '.[]')

# LocalStack's Function URLs check no signature and put no
# requestContext.authorizer into the event: through the URL the api must
# answer 401, signed or not. (Sent to the endpoint with the URL's Host
# header, which is how LocalStack routes Function URLs; no DNS needed.)
log "the api Function URL without an identity: 401 expected"
# shellcheck disable=SC2059 # the path format is configurable on purpose
code=$(curl -sS -o "$WORK/unauthenticated.out" -w '%{http_code}' -H "Host: $API_HOST" \
  "$ENDPOINT$(printf "$API_GET_PATH" default certificates web)")
[ "$code" = 401 ] || die "api Function URL without an identity: HTTP $code, want 401: $(cat "$WORK/unauthenticated.out")"

# The caller: who STS says the keys are (LocalStack: arn:aws:iam::000000000000:root,
# the example's api administrator).
ident=$(aws_curl sts -H 'Accept: application/json' --data 'Action=GetCallerIdentity&Version=2011-06-15' "$ENDPOINT/")
CALLER_ARN=$(jq -r '.GetCallerIdentityResponse.GetCallerIdentityResult.Arn' <<<"$ident")
CALLER_ID=$(jq -r '.GetCallerIdentityResponse.GetCallerIdentityResult.UserId' <<<"$ident")
CALLER_ACCOUNT=$(jq -r '.GetCallerIdentityResponse.GetCallerIdentityResult.Account' <<<"$ident")
jq -e --arg a "$CALLER_ARN" 'any(.api_admin_arns[]; . == $a)' "$VARS" >/dev/null ||
  die "the caller $CALLER_ARN is not in api_admin_arns of $VARS: the api would answer 403"
log "caller $CALLER_ARN (account $CALLER_ACCOUNT)"

log "apply the example manifests through the api (invoke $PREFIX-api: POST $API_APPLY_PATH)"
api POST "$API_APPLY_PATH" application/yaml "$MANIFESTS"
echo

deadline=$((SECONDS + TIMEOUT))
for nn in "${CERTS[@]}"; do
  ns=${nn%%/*} name=${nn#*/}
  # shellcheck disable=SC2059 # the path format is configurable on purpose
  path=$(printf "$API_GET_PATH" "$ns" certificates "$name")
  log "wait until Certificate $ns/$name is Ready (at most $TIMEOUT s in all; a sweep every round)"
  while :; do
    swept=$(sweep)
    body=$(api GET "$path" || true)
    ready=$(jq -r '[.status.conditions[]? | select(.type == "Ready")][0] | "\(.status) \(.reason) \(.message)"' <<<"${body:-null}" 2>/dev/null || true)
    case "$ready" in
      True\ *) log "$ns/$name: Ready ($ready)"; break ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$ns/$name is not Ready: ${ready:-no status} (last sweep: $swept)"
      dlq_depth
      die "timed out waiting for $ns/$name"
    fi
    sleep 5
  done
done

log "check the secrets in Secrets Manager"
SECRET_PREFIX=$(out -raw secret_prefix)
for secret in default/web-tls default/acme-web-tls; do
  tags=$("${COMPOSE[@]}" exec -T localstack awslocal secretsmanager describe-secret \
    --secret-id "$SECRET_PREFIX/$secret" --query 'Tags' --output json)
  role=$(jq -r '.[] | select(.Key == "certfn-role") | .Value' <<<"$tags")
  [ "$role" = certificate ] || die "secret $SECRET_PREFIX/$secret: tag certfn-role = '$role', want certificate"
  log "$SECRET_PREFIX/$secret: certfn-role=$role"
done
dlq_depth

log "localstack-e2e OK"
