output "api_url" {
  description = "URL of the api function (Function URL, AWS_IAM auth: sign requests with SigV4, service lambda)."
  value       = aws_lambda_function_url.api.function_url
}

output "http01_url" {
  description = "Public URL of the http01 function, or null when enable_http01 is false. Redirect http://<domain>/.well-known/acme-challenge/<token> to <url>/hosts/<domain>/.well-known/acme-challenge/<token> (a token is served only for its Challenge's host)."
  value       = var.enable_http01 ? aws_lambda_function_url.http01[0].function_url : null
}

output "table_name" {
  description = "Name of the DynamoDB state table."
  value       = aws_dynamodb_table.state.name
}

output "queue_name" {
  description = "Name of the worker queue (reconcile keys)."
  value       = aws_sqs_queue.work["worker"].name
}

output "dead_letter_queue_name" {
  description = "Name of the worker queue's dead-letter queue."
  value       = aws_sqs_queue.dlq["worker"].name
}

output "signer_queue_name" {
  description = "Name of the signer queue (approved requests of ca and selfSigned issuers)."
  value       = aws_sqs_queue.work["signer"].name
}

output "signer_dead_letter_queue_name" {
  description = "Name of the signer queue's dead-letter queue."
  value       = aws_sqs_queue.dlq["signer"].name
}

output "queue_urls" {
  description = "URLs of the work queues and dead-letter queues, by name (worker, worker_dlq, signer, signer_dlq)."
  value = {
    worker     = aws_sqs_queue.work["worker"].id
    worker_dlq = aws_sqs_queue.dlq["worker"].id
    signer     = aws_sqs_queue.work["signer"].id
    signer_dlq = aws_sqs_queue.dlq["signer"].id
  }
}

output "secret_prefix" {
  description = "Secrets are <secret_prefix>/<namespace>/<secretName>, tagged certfn-role (Secrets Manager), or the Parameter Store parameters /<secret_prefix>/<class>/<namespace>/<secretName> with secret_store = \"ssm\" (docs/deploy/aws.md)."
  value       = local.secret_prefix
}

output "secret_store" {
  description = "Where the key pairs are: \"secretsmanager\" or \"ssm\" (Parameter Store)."
  value       = var.secret_store
}

output "kms_key_arn" {
  description = "ARN of the KMS key that encrypts secrets, queues and table."
  value       = local.kms_key_arn
}

output "function_names" {
  description = "Names of the deployed functions, by role."
  value       = { for fn, f in aws_lambda_function.fn : fn => f.function_name }
}

output "role_arns" {
  description = "ARNs of the functions' IAM roles, by function."
  value       = { for fn, r in aws_iam_role.fn : fn => r.arn }
}

output "api_invoker_policy_json" {
  description = "IAM policy document (JSON) for a same-account caller of the api: lambda:InvokeFunctionUrl on the api URL and lambda:InvokeFunction only via the Function URL (condition lambda:InvokedViaFunctionUrl). Attach it to the callers' roles or users, or list the roles in api_invoker_role_names."
  value       = local.api_invoker_policy
}

output "api_function_arn" {
  description = "ARN of the api function (the Resource of the invoker policy)."
  value       = local.api_function_arn
}

output "notification_event_pattern" {
  description = "EventBridge event pattern (JSON) of this deployment's certificate events on the default bus, for rules of your own; null when notifications is false."
  value       = var.notifications ? local.notification_pattern : null
}

output "notification_sns_topic_arn" {
  description = "ARN of the SNS topic that receives this deployment's certificate events (notification_sns_topic), or null."
  value       = var.notification_sns_topic ? aws_sns_topic.notifications[0].arn : null
}
