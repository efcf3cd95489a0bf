# The Function URL event (payload 2.0) that localstack/e2e.sh sends to the
# api function with a direct Lambda Invoke: what Lambda would deliver for a
# SigV4-signed request through an AWS_IAM Function URL, the IAM identity in
# requestContext.authorizer.iam being the one STS named for the keys that
# sign the Invoke. localstack/README.md says why a direct Invoke may carry
# it. Arguments (jq --arg, --rawfile): method, target (path and optional
# ?query), contentType (may be empty), body (may be empty), host (the
# Function URL's host), accessKey, accountId, userArn, userId.
($target | split("?")) as [$path, $query]
| ($host | split(".")[0]) as $urlId
| {
    version: "2.0",
    routeKey: "$default",
    rawPath: $path,
    rawQueryString: ($query // ""),
    headers: ({host: $host, "user-agent": "certfn-localstack-e2e"}
      + (if $contentType == "" then {} else {"content-type": $contentType} end)),
    requestContext: {
      accountId: $accountId,
      apiId: $urlId,
      domainName: $host,
      domainPrefix: $urlId,
      http: {method: $method, path: $path, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "certfn-localstack-e2e"},
      authorizer: {iam: {accessKey: $accessKey, accountId: $accountId, callerId: $userId, userArn: $userArn, userId: $userId}},
      requestId: "certfn-localstack-e2e",
      routeKey: "$default",
      stage: "$default",
      time: (now | strftime("%d/%b/%Y:%H:%M:%S +0000")),
      timeEpoch: (now * 1000 | floor)
    },
    isBase64Encoded: false
  }
| if $body == "" then . else . + {body: $body} end
