//! The connection to NATS, the cluster's live bus. This is the only module that names
//! `async_nats` types: the rest of the master sees [`Nats`], [`Inbound`] and subjects built by
//! [`Nats::subject`], so the client can change without touching the job path.
//!
//! Subjects are `saltq.<cluster_id>.<name>`; every message carries the sending replica's name
//! in the `Saltq-Replica` header, so a replica can skip what it sent itself.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::counts::Counts;

/// The header naming the replica that sent a message.
const REPLICA_HEADER: &str = "Saltq-Replica";

/// How to reach NATS.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// Server URLs (`nats://host:port`, `tls://host:port`).
    pub servers: Vec<String>,
    /// The cluster's name, the second token of every subject.
    pub cluster_id: String,
    /// This replica's name, sent with every message.
    pub replica: String,
    /// CA of the servers, for TLS.
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key, for TLS with client authentication.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// Why the bus could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The first connection failed.
    #[error("cannot connect to NATS at {servers}: {reason}")]
    Connect {
        /// The URLs tried.
        servers: String,
        /// Why.
        reason: String,
    },
    /// A subscription could not be made.
    #[error("cannot subscribe to {subject} on NATS: {reason}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// Why.
        reason: String,
    },
}

/// Checks that `url` names a NATS server: `nats://`, `tls://` or a bare `host:port`.
pub fn check_url(url: &str) -> Result<(), String> {
    url.parse::<async_nats::ServerAddr>()
        .map(|_| ())
        .map_err(|e| format!("{url:?} is not a NATS server address (nats://host:port): {e}"))
}

/// A message from another replica.
#[derive(Debug)]
pub struct Inbound {
    /// The replica that sent it.
    pub replica: String,
    /// The body.
    pub payload: Bytes,
    /// Where to answer, for a request.
    pub reply: Option<String>,
}

/// A connected NATS client for one replica.
#[derive(Clone)]
pub struct Nats {
    client: async_nats::Client,
    cluster_id: String,
    replica: String,
    /// Counts the connections made after the first: a replica that was away says hello again.
    reconnects: tokio::sync::watch::Receiver<u64>,
    /// Messages this replica published (requests and answers included) by kind, for /metrics.
    published: std::sync::Arc<Counts>,
}

/// The kinds of message counted on `/metrics`: a subject's name (its first token after
/// `saltq.<cluster_id>.`), `reply` for answers to requests, `other` for anything else.
pub const KINDS: &[&str] = &[
    "events", "routes", "facts", "returns", "keys", "deliver", "reply", "other",
];

impl Nats {
    /// Connects, failing after a few seconds if no server answers; once connected, the
    /// client reconnects by itself for as long as it takes.
    pub async fn connect(opts: &NatsOptions) -> Result<Nats, NatsError> {
        let fail = |reason: String| NatsError::Connect {
            servers: opts.servers.join(", "),
            reason,
        };
        let mut addrs = Vec::new();
        for s in &opts.servers {
            addrs.push(
                s.parse::<async_nats::ServerAddr>()
                    .map_err(|e| fail(e.to_string()))?,
            );
        }
        let (reconnected, reconnects) = tokio::sync::watch::channel(0u64);
        let first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let mut o = async_nats::ConnectOptions::new()
            .event_callback(move |event| {
                let reconnected = reconnected.clone();
                let first = first.clone();
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            if !first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                                tracing::info!("reconnected to NATS");
                                reconnected.send_modify(|n| *n += 1);
                            }
                        }
                        async_nats::Event::Disconnected => {
                            tracing::warn!("disconnected from NATS; reconnecting");
                        }
                        other => tracing::debug!("NATS: {other}"),
                    }
                }
            })
            .name(format!("saltq-master {} {}", opts.cluster_id, opts.replica))
            .connection_timeout(Duration::from_secs(5))
            .max_reconnects(None)
            // Events and jobs are small and many: keep them moving, never block the sender
            // for long behind a slow server.
            .client_capacity(65_536);
        if let Some(ca) = &opts.ca_file {
            o = o.add_root_certificates(ca.clone()).require_tls(true);
        }
        if let Some((cert, key)) = &opts.client_cert {
            o = o.add_client_certificate(cert.clone(), key.clone());
        }
        let client = o.connect(addrs).await.map_err(|e| fail(e.to_string()))?;
        Ok(Nats {
            client,
            cluster_id: opts.cluster_id.clone(),
            replica: opts.replica.clone(),
            reconnects,
            published: std::sync::Arc::new(Counts::new(KINDS)),
        })
    }

    /// `saltq.<cluster_id>.<name>`.
    pub fn subject(&self, name: &str) -> String {
        format!("saltq.{}.{name}", self.cluster_id)
    }

    /// Messages published so far by this replica.
    pub fn sent(&self) -> u64 {
        self.published.read().iter().map(|(_, n)| n).sum()
    }

    /// Messages published so far by this replica, by kind ([`KINDS`]).
    pub fn published(&self) -> Vec<(&'static str, u64)> {
        self.published.read()
    }

    /// The kind a message on `subject` is counted as.
    fn kind<'a>(&self, subject: &'a str) -> &'a str {
        let prefix = format!("saltq.{}.", self.cluster_id);
        match subject.strip_prefix(&prefix) {
            Some(name) => name.split('.').next().unwrap_or("other"),
            None => "reply",
        }
    }

    /// Changes each time the client connects again after losing the server.
    pub fn reconnects(&self) -> tokio::sync::watch::Receiver<u64> {
        self.reconnects.clone()
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Whether the client is connected to a server now.
    pub fn is_connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }

    /// Waits until what was published so far has left for the server (a replica stopping).
    pub async fn flush(&self) {
        if let Err(e) = self.client.flush().await {
            tracing::warn!("NATS messages not flushed: {e}");
        }
    }

    /// Publishes `payload` on `subject`, naming this replica. Core NATS: at most once, to the
    /// subscribers present now. An error means the client's queue is closed.
    pub async fn publish(&self, subject: String, payload: Bytes) -> Result<(), String> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(REPLICA_HEADER, self.replica.as_str());
        self.published.add(self.kind(&subject), 1);
        self.client
            .publish_with_headers(subject, headers, payload)
            .await
            .map_err(|e| e.to_string())
    }

    /// Every message on `subject` from now on, with its sender.
    pub async fn subscribe(
        &self,
        subject: String,
    ) -> Result<impl Stream<Item = Inbound> + Send + Unpin + use<>, NatsError> {
        let sub =
            self.client
                .subscribe(subject.clone())
                .await
                .map_err(|e| NatsError::Subscribe {
                    subject,
                    reason: e.to_string(),
                })?;
        Ok(sub.map(|m| Inbound {
            replica: m
                .headers
                .as_ref()
                .and_then(|h| h.get(REPLICA_HEADER))
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default(),
            payload: m.payload,
            reply: m.reply.map(|r| r.to_string()),
        }))
    }

    /// Every message on `subject` from now on sent by the other replicas: the one place a
    /// replica skips what it sent itself.
    pub async fn subscribe_others(
        &self,
        subject: String,
    ) -> Result<impl Stream<Item = Inbound> + Send + Unpin + use<>, NatsError> {
        let me = self.replica.clone();
        Ok(self
            .subscribe(subject)
            .await?
            .filter(move |m| std::future::ready(m.replica != me)))
    }

    /// Sends a request on `subject` and waits up to `timeout` for the answer.
    pub async fn request(
        &self,
        subject: String,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<Bytes, String> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(REPLICA_HEADER, self.replica.as_str());
        self.published.add(self.kind(&subject), 1);
        match tokio::time::timeout(
            timeout,
            self.client
                .request_with_headers(subject.clone(), headers, payload),
        )
        .await
        {
            Ok(Ok(m)) => Ok(m.payload),
            Ok(Err(e)) => Err(format!("request on {subject}: {e}")),
            Err(_) => Err(format!(
                "request on {subject}: no answer within {timeout:?}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses() {
        assert!(check_url("nats://127.0.0.1:4222").is_ok());
        assert!(check_url("tls://nats.example.com:4222").is_ok());
        assert!(check_url("127.0.0.1:4222").is_ok());
        let err = check_url("http://n1").expect_err("not nats");
        assert!(
            err.starts_with("\"http://n1\" is not a NATS server address"),
            "{err}"
        );
    }
}
