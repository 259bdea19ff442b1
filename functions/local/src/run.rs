//! `outbox-local run`: the publisher and the sweeper for an existing table, as the
//! event source mapping and the EventBridge schedule would run them, until stopped.

use crate::aws::Clients;
use crate::runner::{MappingSettings, StreamMapping};
use crate::stream::StreamReader;
use outbox::sweep::{AwsSweeper, Budget, SweeperConfig};
use outbox::{AwsPublisher, FromSdkConfig, PublisherConfig};
use std::time::{Duration, Instant};

/// Loop settings.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Time between sweeps (zero: no sweeper).
    pub sweep_every: Duration,
    /// Time between stream polls.
    pub poll_every: Duration,
    /// Start at the oldest stream record (`TRIM_HORIZON`) instead of the newest.
    pub from_start: bool,
    /// Stop after this long (`None`: until interrupted).
    pub stop_after: Option<Duration>,
}

/// Runs until interrupted (Ctrl-C) or `stop_after`. The binary reads both
/// configurations from the environment, exactly as the Lambda functions do.
pub async fn run(
    clients: &Clients,
    publisher_config: PublisherConfig,
    sweeper_config: SweeperConfig,
    settings: MappingSettings,
    opts: &RunOptions,
) -> Result<(), String> {
    let table = publisher_config.table_name.clone();
    let publisher =
        AwsPublisher::with_sink(publisher_config, clients.dynamodb.clone(), clients.sink());
    let sweeper = AwsSweeper::with_sink(sweeper_config, clients.dynamodb.clone(), clients.sink());
    let stream_arn = StreamReader::stream_arn_of(&clients.dynamodb, &table)
        .await
        .map_err(|e| e.to_string())?;
    let mut mapping = StreamMapping::new(
        StreamReader::new(
            clients.streams.clone(),
            stream_arn.clone(),
            clients.region.clone(),
        ),
        settings,
    );
    if !opts.from_start {
        mapping.start_at_latest().await.map_err(|e| e.to_string())?;
    }
    eprintln!("outbox-local run: table {table}, stream {stream_arn}; Ctrl-C to stop");
    let started = Instant::now();
    let mut last_sweep: Option<Instant> = None;
    let handler = |event| {
        let publisher = &publisher;
        async move {
            Ok::<_, String>(
                outbox::stream::handle_stream_event(publisher, &event)
                    .await
                    .0,
            )
        }
    };
    loop {
        match mapping.poll(&handler).await {
            Ok(stats) if stats.delivered > 0 => tracing::info!(?stats, "stream poll"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "stream poll failed; retrying"),
        }
        if !opts.sweep_every.is_zero() && last_sweep.is_none_or(|t| t.elapsed() >= opts.sweep_every)
        {
            let summary = sweeper
                .sweep(Budget::for_window(
                    outbox::publish::now_ms(),
                    Duration::from_secs(30),
                ))
                .await;
            tracing::info!(?summary, "sweep");
            last_sweep = Some(Instant::now());
        }
        if opts.stop_after.is_some_and(|d| started.elapsed() >= d) {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(opts.poll_every) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}
