//! One region's deployment of the global-table stack (`scripts/deploy-local
//! terraform-global`), read back from its publisher's configuration, and switched off
//! and on the way a region outage looks to the outbox: its stream mapping disabled
//! (the stream keeps the records, replayed when it is enabled again, as a recovered
//! region's mapping resumes) and its sweeper and recovery function throttled to zero.

use crate::aws::Clients;
use crate::deployment::environment;
use aws_config::SdkConfig;
use aws_smithy_types::error::display::DisplayErrorContext;

/// One region's outbox deployment on the global table.
#[derive(Debug, Clone)]
pub struct RegionStack {
    /// The region (its clients sign with it, which is how the local AWS picks it).
    pub region: String,
    /// Clients of this region.
    pub clients: Clients,
    /// The global table (`OUTBOX_TABLE_NAME`).
    pub table: String,
    /// Home region of items without `HomeRegion` (`OUTBOX_DEFAULT_HOME_REGION`).
    pub default_home: String,
    /// This region's orders queue (`<prefix>-orders-<region>`), the route of `orders`.
    pub queue_url: String,
    publisher: String,
    sweeper: String,
    recovery: String,
}

/// What [`RegionStack::stop`] changed, for [`RegionStack::start`] to put back.
#[derive(Debug)]
pub struct Stopped {
    concurrency: Vec<(String, Option<i32>)>,
}

impl RegionStack {
    /// The deployment `prefix` in `region`.
    pub async fn discover(base: &SdkConfig, prefix: &str, region: &str) -> Result<Self, String> {
        let config = base
            .to_builder()
            .region(aws_config::Region::new(region.to_owned()))
            .build();
        let clients = Clients::new(&config);
        let publisher = format!("{prefix}-publisher");
        let env = environment(&clients, &publisher)
            .await
            .map_err(|e| format!("{region}: {e} (deploy first: scripts/deploy-local terraform-global --prefix {prefix})"))?;
        let var = |name: &str| {
            env.get(name).cloned().ok_or_else(|| {
                format!("{region}: {publisher} has no {name}: not a global-table deployment")
            })
        };
        let queue = format!("{prefix}-orders-{region}");
        let queue_url = clients
            .sqs
            .get_queue_url()
            .queue_name(&queue)
            .send()
            .await
            .map_err(|e| format!("{region}: queue {queue}: {}", DisplayErrorContext(&e)))?
            .queue_url
            .ok_or_else(|| format!("{region}: queue {queue} has no URL"))?;
        Ok(RegionStack {
            region: region.to_owned(),
            table: var("OUTBOX_TABLE_NAME")?,
            default_home: var("OUTBOX_DEFAULT_HOME_REGION")?,
            queue_url,
            clients,
            sweeper: format!("{prefix}-sweeper"),
            recovery: format!("{prefix}-recovery"),
            publisher,
        })
    }

    /// The region goes down, as far as the outbox is concerned: nothing of it
    /// publishes from here on.
    pub async fn stop(&self) -> Result<Stopped, String> {
        self.set_mapping(false).await?;
        let mut concurrency = Vec::new();
        for function in [&self.sweeper, &self.recovery] {
            concurrency.push((function.clone(), self.reserved(function).await?));
            self.set_reserved(function, Some(0)).await?;
        }
        Ok(Stopped { concurrency })
    }

    /// The region is back: its functions as deployed, its mapping resuming the stream
    /// where it stopped.
    pub async fn start(&self, stopped: Stopped) -> Result<(), String> {
        self.release(stopped).await?;
        self.set_mapping(true).await
    }

    /// Only this region's sweeper stops (its schedule's ticks are throttled) until
    /// [`RegionStack::release`]; its mapping goes on publishing.
    pub async fn hold_sweeper(&self) -> Result<Stopped, String> {
        let reserved = self.reserved(&self.sweeper).await?;
        self.set_reserved(&self.sweeper, Some(0)).await?;
        Ok(Stopped {
            concurrency: vec![(self.sweeper.clone(), reserved)],
        })
    }

    /// The concurrency `stopped` took, put back as deployed.
    pub async fn release(&self, stopped: Stopped) -> Result<(), String> {
        for (function, reserved) in stopped.concurrency {
            self.set_reserved(&function, reserved).await?;
        }
        Ok(())
    }

    /// Runs this region's sweeper now (what its schedule does every minute), so that
    /// a failover's messages are not left waiting for the next tick.
    pub async fn sweep_now(&self) -> Result<(), String> {
        let out = self
            .clients
            .lambda
            .invoke()
            .function_name(&self.sweeper)
            .payload(aws_smithy_types::Blob::new("{}"))
            .send()
            .await
            .map_err(|e| {
                format!(
                    "{}: invoke {}: {}",
                    self.region,
                    self.sweeper,
                    DisplayErrorContext(&e)
                )
            })?;
        match out.function_error {
            // A sweep that failed leaves its items for the next; say so, do not stop.
            Some(err) => Err(format!("{}: {} failed: {err}", self.region, self.sweeper)),
            None => Ok(()),
        }
    }

    async fn set_mapping(&self, enabled: bool) -> Result<(), String> {
        let fail = |e: String| format!("{}: mapping of {}: {e}", self.region, self.publisher);
        let mappings = self
            .clients
            .lambda
            .list_event_source_mappings()
            .function_name(&self.publisher)
            .send()
            .await
            .map_err(|e| fail(DisplayErrorContext(&e).to_string()))?;
        let [mapping] = mappings.event_source_mappings() else {
            return Err(fail("not exactly one".into()));
        };
        let uuid = mapping.uuid().ok_or_else(|| fail("no UUID".into()))?;
        self.clients
            .lambda
            .update_event_source_mapping()
            .uuid(uuid)
            .enabled(enabled)
            .send()
            .await
            .map_err(|e| fail(DisplayErrorContext(&e).to_string()))?;
        Ok(())
    }

    async fn reserved(&self, function: &str) -> Result<Option<i32>, String> {
        let out = self
            .clients
            .lambda
            .get_function_concurrency()
            .function_name(function)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "{}: concurrency of {function}: {}",
                    self.region,
                    DisplayErrorContext(&e)
                )
            })?;
        Ok(out.reserved_concurrent_executions)
    }

    async fn set_reserved(&self, function: &str, reserved: Option<i32>) -> Result<(), String> {
        let lambda = &self.clients.lambda;
        let result = match reserved {
            Some(n) => lambda
                .put_function_concurrency()
                .function_name(function)
                .reserved_concurrent_executions(n)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| DisplayErrorContext(&e).to_string()),
            None => lambda
                .delete_function_concurrency()
                .function_name(function)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| DisplayErrorContext(&e).to_string()),
        };
        result.map_err(|e| format!("{}: concurrency of {function}: {e}", self.region))
    }
}
