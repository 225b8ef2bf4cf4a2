//! Forwarding a tool's progress reports to the client as MCP progress
//! notifications, throttled so a tight guest loop cannot flood the channel.

use crate::runtime::{Progress, ProgressSink};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Minimum gap between two notifications, except the final one.
const MIN_GAP: Duration = Duration::from_millis(100);

/// Returns the sink a call reports into, and the task sending its reports; the
/// task ends once every copy of the sink is dropped (when the call is over).
pub fn forwarder(peer: Peer<RoleServer>, token: ProgressToken) -> (ProgressSink, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Progress>();
    let last_sent: Mutex<Option<Instant>> = Mutex::new(None);
    let sink: ProgressSink = Arc::new(move |p: Progress| {
        let mut last = last_sent.lock().unwrap_or_else(|e| e.into_inner());
        let finished = p.total.is_some_and(|t| p.done >= t);
        if finished || last.is_none_or(|at| at.elapsed() >= MIN_GAP) {
            *last = Some(Instant::now());
            let _ = tx.send(p);
        }
    });
    let task = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            let mut param = ProgressNotificationParam::new(token.clone(), p.done as f64);
            if let Some(total) = p.total {
                param = param.with_total(total as f64);
            }
            if let Some(message) = p.message {
                param = param.with_message(message);
            }
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("progress notification not sent: {e}");
                break;
            }
        }
    });
    (sink, task)
}
