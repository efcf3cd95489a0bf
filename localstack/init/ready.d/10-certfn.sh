#!/usr/bin/env bash
# LocalStack ready hook (runs inside the localstack container once its
# services are up, before the container reports healthy).
#
# Creates the Route53 hosted zone certfn.test, whose ID localstack/e2e.sh
# passes to Terraform as route53_zone_ids: the apply then exercises the
# worker's zone-limited DNS-01 policy. Idempotent: a restarted container
# with persistence keeps one zone.
set -euo pipefail

zone=certfn.test
id=$(awslocal route53 list-hosted-zones-by-name --dns-name "$zone." \
  --query "HostedZones[?Name=='$zone.'].Id | [0]" --output text)
if [ -z "$id" ] || [ "$id" = "None" ]; then
  id=$(awslocal route53 create-hosted-zone --name "$zone" \
    --caller-reference "certfn-localstack-$(date +%s)" \
    --query HostedZone.Id --output text)
fi
echo "certfn: hosted zone $zone is $id"
