//! Which AWS region a destination is in, read from its address: a topic's or a bus's
//! ARN, a queue URL's host. An SNS topic and an EventBridge bus take requests only
//! in their own region, and an SQS request goes to the client's regional endpoint
//! whatever the queue URL says, so the adapters send to each destination through a
//! client of its region. Plain functions of text; the clients are the adapters'.

/// Whether `text` has the shape of an AWS region name: `eu-west-1`, `us-gov-west-1`,
/// `cn-north-1` — two letters, words, and a number, joined by hyphens.
pub fn is_region(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let lower = |p: &&str| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase());
    parts.len() >= 3
        && parts[0].len() == 2
        && parts[..parts.len() - 1].iter().all(lower)
        && parts
            .last()
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The region field of an ARN (`arn:partition:service:region:account:resource`).
pub fn arn_region(arn: &str) -> Option<&str> {
    arn.split(':').nth(3).filter(|r| !r.is_empty())
}

/// Why `arn` cannot name a topic or a bus a function can send to, or `None`: the
/// partition, region and account are checked at start-up, so that a typo is a clear
/// configuration error instead of every message failing at its first send.
pub fn arn_problem(arn: &str) -> Option<String> {
    let parts: Vec<&str> = arn.split(':').collect();
    let field = |i: usize| parts.get(i).copied().unwrap_or_default();
    let (partition, region, account) = (field(1), field(3), field(4));
    if !partition.starts_with("aws") {
        return Some(format!(
            "its partition `{partition}` is not an AWS partition (aws, aws-cn, aws-us-gov)"
        ));
    }
    if !is_region(region) {
        return Some(format!(
            "its region `{region}` is not a region name (like eu-west-1): the destination is sent to in the region its ARN names"
        ));
    }
    let digits = account.len() == 12 && account.chars().all(|c| c.is_ascii_digit());
    (!digits).then(|| format!("its account `{account}` is not a 12-digit account id"))
}

/// The region an SQS queue URL's host names: `sqs.<region>.amazonaws.com` (and the
/// `.com.cn`, dual-stack and VPC endpoint forms, which carry `sqs.<region>` too),
/// the legacy `<region>.queue.amazonaws.com`, and `queue.amazonaws.com` (us-east-1).
/// `None` when the host names none (a local endpoint): the function's own region.
pub fn queue_url_region(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let host = rest.split(['/', ':']).next()?;
    if host == "queue.amazonaws.com" {
        return Some("us-east-1");
    }
    let labels: Vec<&str> = host.split('.').collect();
    labels.windows(2).find_map(|pair| match pair {
        ["sqs", region] if is_region(region) => Some(*region),
        [region, "queue"] if is_region(region) => Some(*region),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_are_recognised_by_their_shape() {
        for good in ["eu-west-1", "us-gov-west-1", "cn-north-1", "ap-southeast-2"] {
            assert!(is_region(good), "{good}");
        }
        for bad in [
            "",
            "eu-west",
            "euwest1",
            "EU-WEST-1",
            "e-west-1",
            "eu--1",
            "local",
        ] {
            assert!(!is_region(bad), "{bad}");
        }
    }

    #[test]
    fn a_queue_urls_host_names_its_region_or_none() {
        let cases = [
            (
                "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
                Some("eu-west-1"),
            ),
            (
                "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
                Some("cn-north-1"),
            ),
            (
                "https://eu-west-2.queue.amazonaws.com/123456789012/q",
                Some("eu-west-2"),
            ),
            (
                "https://queue.amazonaws.com/123456789012/q",
                Some("us-east-1"),
            ),
            (
                "https://vpce-0a1b.sqs.ap-south-1.vpce.amazonaws.com/123456789012/q",
                Some("ap-south-1"),
            ),
            ("http://127.0.0.1:4566/000000000000/q", None),
            ("http://localhost:4566/000000000000/q", None),
            ("not a url", None),
        ];
        for (url, region) in cases {
            assert_eq!(queue_url_region(url), region, "{url}");
        }
    }

    #[test]
    fn an_arn_must_name_a_partition_a_region_and_an_account() {
        assert_eq!(
            arn_problem("arn:aws:sns:eu-west-1:123456789012:orders"),
            None
        );
        assert_eq!(
            arn_region("arn:aws:sns:eu-west-1:123456789012:orders"),
            Some("eu-west-1")
        );
        let no_region = arn_problem("arn:aws:sns::123456789012:orders").expect("refused");
        assert!(no_region.contains("region ``"), "{no_region}");
        let typo = arn_problem("arn:aws:sns:eu-wset:123456789012:orders").expect("refused");
        assert!(typo.contains("`eu-wset` is not a region name"), "{typo}");
        let account = arn_problem("arn:aws:events:eu-west-1:1234:event-bus/b").expect("refused");
        assert!(account.contains("12-digit"), "{account}");
        assert!(arn_problem("arn:azure:sns:eu-west-1:123456789012:t").is_some());
    }
}
