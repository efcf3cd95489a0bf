#!/usr/bin/env bash
# make localstack-e2e: certfn on LocalStack, end to end.
#
#   1. start LocalStack, Pebble and challtestsrv (localstack/docker-compose.yml)
#      and wait until they are healthy;
#   2. build the Lambda zips for this machine's architecture (make lambda);
#   3. terraform apply infra/terraform/aws/examples/basic with every AWS
#      endpoint at LocalStack (localstack/example.tfvars.json, which sets
#      manage_certificates = false), state kept in localstack/.state;
#   4. send the example's manifests (terraform output manifests) to the api
#      Function URL, SigV4-signed;
#   5. wait until every Certificate of the example is Ready (the self-signed
#      one, and the ACME one validated by Pebble over HTTP-01 through the
#      http01 Function URL), then check their secrets and tags in Secrets
#      Manager;
#   6. destroy everything (unless CERTFN_E2E_KEEP=1).
#
# Needs: a Docker engine with Compose v2, terraform >= 1.5, curl >= 7.75
# (--aws-sigv4), jq, go, make. Nothing here runs on a machine without a
# Docker engine: the script stops at step 1 with a clear message.
#
# The api routes used (override if functions/aws/api serves others):
#   CERTFN_API_APPLY_PATH  POST, body: multi-document YAML   (default /v1/apply)
#   CERTFN_API_GET_PATH    GET one resource as JSON, printf format with
#                          kind plural, namespace, name
#                          (default /v1/namespaces/%s/%s/%s, e.g.
#                          /v1/namespaces/default/certificates/web)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

COMPOSE=(docker compose -f "$ROOT/localstack/docker-compose.yml")
EXAMPLE=infra/terraform/aws/examples/basic
STATE_DIR=${CERTFN_E2E_STATE:-$ROOT/localstack/.state}
TIMEOUT=${CERTFN_E2E_TIMEOUT:-600}
KEEP=${CERTFN_E2E_KEEP:-0}
REGION=us-east-1
API_APPLY_PATH=${CERTFN_API_APPLY_PATH:-/v1/apply}
API_GET_PATH=${CERTFN_API_GET_PATH:-/v1/namespaces/%s/%s/%s}
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=$REGION
export TF_DATA_DIR=$STATE_DIR/terraform-data TF_IN_AUTOMATION=1

log() { printf '== %s\n' "$*"; }
die() { printf 'localstack-e2e: %s\n' "$*" >&2; exit 1; }

for tool in docker terraform curl jq go make; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is required"
done
docker info >/dev/null 2>&1 || die "no Docker engine reachable (docker info failed): LocalStack, Pebble and the Lambda containers need one"
"${COMPOSE[@]}" version >/dev/null 2>&1 || die "Docker Compose v2 (docker compose) is required"

case "$(uname -m)" in
  x86_64 | amd64) ARCH=x86_64 GOARCH=amd64 ;;
  aarch64 | arm64) ARCH=arm64 GOARCH=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

tf() { terraform -chdir="$EXAMPLE" "$@"; }
tfvars=(
  -var-file="$ROOT/localstack/example.tfvars.json"
  -var "lambda_architecture=$ARCH"
  -var "lambda_zip_dir=$ROOT/dist/lambda"
)

PREFIX=$(jq -r '.name_prefix' localstack/example.tfvars.json)
ZONES='[]'

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
mkdir -p "$STATE_DIR"
"${COMPOSE[@]}" up -d --wait

log "build the Lambda zips for $ARCH (make lambda GOARCH=$GOARCH)"
make lambda GOARCH="$GOARCH"
for fn in worker signer scheduler api http01; do
  [ -f "dist/lambda/$fn.zip" ] || die "make lambda did not produce dist/lambda/$fn.zip"
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
API_URL=${API_URL%/}
MANIFESTS=$STATE_DIR/manifests.yaml
out -raw manifests >"$MANIFESTS"
mapfile -t CERTS < <(out -json certificates | jq -r '.[]')

# SigV4 for Function URLs: service "lambda". LocalStack accepts the test keys.
api() {
  curl -fsS --aws-sigv4 "aws:amz:$REGION:lambda" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@"
}

log "apply the example manifests through the api ($API_URL$API_APPLY_PATH)"
api -X POST -H 'Content-Type: application/yaml' --data-binary @"$MANIFESTS" "$API_URL$API_APPLY_PATH"
echo

deadline=$((SECONDS + TIMEOUT))
for nn in "${CERTS[@]}"; do
  ns=${nn%%/*} name=${nn#*/}
  # shellcheck disable=SC2059 # the path format is configurable on purpose
  path=$(printf "$API_GET_PATH" "$ns" certificates "$name")
  log "wait until Certificate $ns/$name is Ready (at most $TIMEOUT s in all)"
  while :; do
    body=$(api "$API_URL$path" || true)
    ready=$(jq -r '[.status.conditions[]? | select(.type == "Ready")][0] | "\(.status) \(.reason) \(.message)"' <<<"${body:-null}" 2>/dev/null || true)
    case "$ready" in
      True\ *) log "$ns/$name: Ready ($ready)"; break ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$ns/$name is not Ready: ${ready:-no status}"
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
