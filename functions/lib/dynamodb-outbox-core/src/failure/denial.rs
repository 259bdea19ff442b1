//! A call AWS refused because the caller's role lacks a permission: how each service
//! says so, and which IAM action its message names. A denial is never a reason to
//! quietly take another path: the adapters log it as an error naming the action and
//! count it in the `AccessDenied` metric, whatever they do next.

/// The error codes with which the services our functions call say the caller lacks a
/// permission (SQS's query-compatible prefix `AWS.SimpleQueueService.` removed):
/// DynamoDB, EventBridge, Lambda and KMS `AccessDeniedException`; S3 and SQS
/// `AccessDenied`; SNS `AuthorizationError`; a queue or table encrypted with a key the
/// role may not use, `KMS.AccessDeniedException` (SQS) or `KMSAccessDeniedException`
/// (SNS).
pub const DENIAL_CODES: &[&str] = &[
    "AccessDenied",
    "AccessDeniedException",
    "AuthorizationError",
    "AuthorizationErrorException",
    "KMS.AccessDeniedException",
    "KMSAccessDeniedException",
    "KmsAccessDenied",
    "UnauthorizedOperation",
];

/// Whether `code` says the call was denied for a missing permission.
pub fn is_denial_code(code: &str) -> bool {
    let code = code.strip_prefix("AWS.SimpleQueueService.").unwrap_or(code);
    DENIAL_CODES.contains(&code)
}

/// The IAM action a denial's message names: AWS writes `... is not authorized to
/// perform: dynamodb:BatchGetItem on resource: ...`. `None` when it names none.
pub fn denied_action(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("perform: ")?;
    let action = rest
        .split(|c: char| c.is_whitespace() || c == ',' || c == '"')
        .next()?;
    let (service, name) = action.split_once(':')?;
    let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    (valid(service) && valid(name)).then_some(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_services_denial_code_is_a_denial_and_other_refusals_are_not() {
        for code in [
            "AccessDeniedException",
            "AccessDenied",
            "AWS.SimpleQueueService.AccessDenied",
            "AuthorizationError",
            "KMS.AccessDeniedException",
        ] {
            assert!(is_denial_code(code), "{code}");
        }
        for code in [
            "ValidationException",
            "ResourceNotFoundException",
            "ThrottlingException",
            "",
        ] {
            assert!(!is_denial_code(code), "{code}");
        }
    }

    #[test]
    fn the_action_is_read_from_the_message_aws_writes() {
        assert_eq!(
            denied_action(
                "User: arn:aws:sts::1:assumed-role/r/f is not authorized to perform: dynamodb:BatchGetItem on resource: arn:aws:dynamodb:us-east-1:1:table/t because no identity-based policy allows the dynamodb:BatchGetItem action"
            ),
            Some("dynamodb:BatchGetItem")
        );
        assert_eq!(
            denied_action("... is not authorized to perform: sqs:SendMessage because ..."),
            Some("sqs:SendMessage")
        );
        assert_eq!(denied_action("Access Denied"), None);
        assert_eq!(
            denied_action("not authorized to perform: nothing here"),
            None
        );
    }
}
