//! Clients by region: the function's own, and one per other region a destination
//! names ([`Destination::region`]), each built on first use from the home client's
//! configuration with only the region changed — the same credentials, timeouts,
//! retries, interceptors and endpoint override (the local AWS serves every region at
//! one endpoint) — and kept for the life of the process.

use dynamodb_outbox_core::Destination;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A service client that can be rebuilt for another region.
pub trait RegionalClient: Clone + Send + Sync {
    /// The region the client sends to, if it has one.
    fn region(&self) -> Option<String>;
    /// The same client in `region`.
    fn in_region(&self, region: &str) -> Self;
}

macro_rules! regional_client {
    ($($sdk:ident),*) => {$(
        impl RegionalClient for $sdk::Client {
            fn region(&self) -> Option<String> {
                self.config().region().map(ToString::to_string)
            }

            fn in_region(&self, region: &str) -> Self {
                let config = self
                    .config()
                    .to_builder()
                    .region($sdk::config::Region::new(region.to_owned()))
                    .build();
                $sdk::Client::from_conf(config)
            }
        }
    )*};
}
regional_client!(aws_sdk_sqs, aws_sdk_sns, aws_sdk_eventbridge);

/// One service's clients by region.
#[derive(Debug, Clone)]
pub struct Regional<C> {
    home: C,
    home_region: Option<String>,
    others: Arc<Mutex<HashMap<String, C>>>,
}

impl<C: RegionalClient> Regional<C> {
    /// Clients around `home`, the function's own.
    pub fn new(home: C) -> Self {
        Regional {
            home_region: home.region(),
            home,
            others: Arc::default(),
        }
    }

    /// The function's own client.
    pub fn home(&self) -> &C {
        &self.home
    }

    /// The client for `region` (`None`: the home client's).
    pub fn client(&self, region: Option<&str>) -> C {
        match region {
            Some(region) if Some(region) != self.home_region.as_deref() => {
                // A poisoned lock still holds valid clients: a panic elsewhere cannot
                // leave a half-inserted one.
                let mut others = self.others.lock().unwrap_or_else(PoisonError::into_inner);
                others
                    .entry(region.to_owned())
                    .or_insert_with(|| self.home.in_region(region))
                    .clone()
            }
            _ => self.home.clone(),
        }
    }

    /// The client for `destination`'s region.
    pub fn for_destination(&self, destination: &Destination) -> C {
        self.client(destination.region())
    }

    /// How many clients of other regions were built.
    pub fn other_regions(&self) -> usize {
        self.others
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sns::config::{BehaviorVersion, Credentials, SharedCredentialsProvider};
    use aws_smithy_types::timeout::TimeoutConfig;
    use std::time::Duration;

    /// The function's client: us-east-1, an endpoint override (the local AWS),
    /// timeouts and a retry setting of its own.
    fn home() -> aws_sdk_sns::Client {
        let config = aws_types::SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(aws_sdk_sns::config::Region::new("us-east-1"))
            .endpoint_url("http://127.0.0.1:1")
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "a", "b", None, None, "test",
            )))
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_timeout(Duration::from_secs(20))
                    .build(),
            )
            .retry_config(aws_sdk_sns::config::retry::RetryConfig::standard().with_max_attempts(7))
            .build();
        aws_sdk_sns::Client::new(&config)
    }

    #[test]
    fn a_client_of_another_region_keeps_the_home_clients_settings_and_is_built_once() {
        let clients = Regional::new(home());
        let west = clients.client(Some("us-west-2"));
        let config = west.config();
        assert_eq!(config.region().map(ToString::to_string).as_deref(), Some("us-west-2"));
        assert_eq!(
            config.timeout_config().and_then(TimeoutConfig::operation_timeout),
            Some(Duration::from_secs(20))
        );
        assert_eq!(config.retry_config().map(|r| r.max_attempts()), Some(7));
        let arn = "arn:aws:sns:us-west-2:123456789012:orders";
        let destination = Destination::parse(arn, None).expect("destination");
        clients.for_destination(&destination);
        assert_eq!(clients.other_regions(), 1, "cached, not built again");
    }

    #[test]
    fn the_home_region_and_an_address_without_a_region_use_the_home_client() {
        let clients = Regional::new(home());
        clients.client(None);
        clients.client(Some("us-east-1"));
        let local = Destination::sqs("http://127.0.0.1:4566/000000000000/q");
        assert_eq!(local.region(), None);
        assert_eq!(clients.other_regions(), 0);
    }
}
